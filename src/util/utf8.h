/* Programs print anything; JSON needs valid UTF-8. */
#ifndef CORRAL_UTIL_UTF8_H
#define CORRAL_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

bool cr_utf8_valid(const char *s, size_t n);
/* A copy of s where every byte that is not part of a valid UTF-8 sequence
 * (overlongs, surrogates, > U+10FFFF, truncated sequences) is replaced by
 * U+FFFD. NUL bytes are kept (JSON writers escape them as \u0000). Caller
 * frees; *out_len gets the length. NULL on ENOMEM. */
char *cr_utf8_sanitize(const char *s, size_t n, size_t *out_len);

#endif

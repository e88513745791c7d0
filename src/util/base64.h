/* Base64 (standard alphabet, padded), for MIME bundles, uploads and the
 * session protocol. */
#ifndef CORRAL_UTIL_BASE64_H
#define CORRAL_UTIL_BASE64_H

#include <stddef.h>

/* NUL-terminated encoding; caller frees. NULL on ENOMEM. */
char *cr_b64_encode(const void *data, size_t len);
/* Decodes standard or URL-safe base64, padding optional, line breaks
 * ignored. NULL on a character outside the alphabet (or ENOMEM); *len gets
 * the decoded length. Caller frees. */
unsigned char *cr_b64_decode(const char *s, size_t *len);

#endif

/* Strict UTF-8 (RFC 3629 / Unicode table 3-7).
 *
 * Replacement policy of cr_utf8_sanitize: one U+FFFD per *maximal subpart* of
 * an ill-formed sequence (Unicode "best practice", chapter 3 "U+FFFD
 * Substitution of Maximal Subparts", the same policy as the WHATWG encoding
 * standard and Python's errors="replace"). A maximal subpart is the longest
 * prefix that could still have become a valid sequence, or a single byte when
 * no prefix could. So a character cut off at the end ("\xE2\x82") becomes one
 * U+FFFD, while an overlong "\xC0\xAF" or a surrogate "\xED\xA0\x80" becomes
 * one U+FFFD per byte, because their lead byte already rules them out. The
 * byte after a bad subpart is examined afresh, so a valid character is never
 * swallowed by the error in front of it. */
#include "util/utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed sequence starting at s (n >= 1 bytes available),
 * or 0 with *bad set to the length of the maximal subpart to replace. */
static size_t seq_len(const unsigned char *s, size_t n, size_t *bad) {
  unsigned char b0 = s[0];
  if (b0 < 0x80)
    return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;   /* range of the second byte */
  if (b0 < 0xC2) {                      /* continuation byte, or overlong C0/C1 */
    *bad = 1;
    return 0;
  } else if (b0 < 0xE0) {
    need = 2;
  } else if (b0 < 0xF0) {
    need = 3;
    if (b0 == 0xE0)
      lo = 0xA0;                        /* below: overlong */
    else if (b0 == 0xED)
      hi = 0x9F;                        /* above: surrogates D800-DFFF */
  } else if (b0 < 0xF5) {
    need = 4;
    if (b0 == 0xF0)
      lo = 0x90;                        /* below: overlong */
    else if (b0 == 0xF4)
      hi = 0x8F;                        /* above: beyond U+10FFFF */
  } else {
    *bad = 1;
    return 0;
  }
  if (n < 2 || s[1] < lo || s[1] > hi) {
    *bad = 1;
    return 0;
  }
  for (size_t i = 2; i < need; i++) {
    if (i >= n || (s[i] & 0xC0) != 0x80) {
      *bad = i;
      return 0;
    }
  }
  return need;
}

bool cr_utf8_valid(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, bad = 0;
  while (i < n) {
    if (u[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = seq_len(u + i, n - i, &bad);
    if (!k)
      return false;
    i += k;
  }
  return true;
}

char *cr_utf8_sanitize(const char *s, size_t n, size_t *out_len) {
  static const char repl[3] = {'\xEF', '\xBF', '\xBD'};
  const unsigned char *u = (const unsigned char *)s;

  /* Two passes so the copy is allocated at its exact size, not 3n. */
  size_t len = 0, i = 0, bad = 0;
  while (i < n) {
    size_t k = seq_len(u + i, n - i, &bad);
    if (k) {
      len += k;
      i += k;
    } else {
      if (len > SIZE_MAX - 4) {
        errno = ENOMEM;
        return NULL;
      }
      len += sizeof repl;
      i += bad;
    }
  }

  char *out = malloc(len + 1);
  if (!out) {
    errno = ENOMEM;
    return NULL;
  }
  size_t o = 0;
  i = 0;
  while (i < n) {
    size_t k = seq_len(u + i, n - i, &bad);
    if (k) {
      memcpy(out + o, s + i, k);
      o += k;
      i += k;
    } else {
      memcpy(out + o, repl, sizeof repl);
      o += sizeof repl;
      i += bad;
    }
  }
  out[o] = '\0';
  if (out_len)
    *out_len = o;
  return out;
}

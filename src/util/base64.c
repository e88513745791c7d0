#include "util/base64.h"

#include <stdlib.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *cr_b64_encode(const void *data, size_t n) {
  const unsigned char *p = data;
  char *o = malloc((n + 2) / 3 * 4 + 1);
  if (!o)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                 (i + 2 < n ? p[i + 2] : 0);
    o[k++] = alphabet[v >> 18 & 63];
    o[k++] = alphabet[v >> 12 & 63];
    o[k++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
    o[k++] = i + 2 < n ? alphabet[v & 63] : '=';
  }
  o[k] = '\0';
  return o;
}

static int value(int c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

unsigned char *cr_b64_decode(const char *s, size_t *len) {
  size_t n = strlen(s);
  unsigned char *o = malloc(n / 4 * 3 + 4);
  if (!o)
    return NULL;
  size_t k = 0;
  unsigned v = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '=' || s[i] == '\n' || s[i] == '\r')
      continue;
    int d = value((unsigned char)s[i]);
    if (d < 0) {
      free(o);
      return NULL;
    }
    v = v << 6 | (unsigned)d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      o[k++] = (unsigned char)(v >> bits & 0xff);
    }
  }
  *len = k;
  return o;
}

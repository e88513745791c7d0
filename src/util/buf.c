#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cr_buf_reserve(cr_buf *b, size_t extra) {
  if (extra > ((size_t)-1) / 2 - b->len)
    return -1;
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need)
    cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p)
    return -1;
  b->data = p;
  b->cap = cap;
  return 0;
}

int cr_buf_append(cr_buf *b, const void *p, size_t n) {
  if (cr_buf_reserve(b, n) < 0)
    return -1;
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int cr_buf_appendf(cr_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || cr_buf_reserve(b, (size_t)n) < 0)
    return -1;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

void cr_buf_reset(cr_buf *b) {
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
}

void cr_buf_free(cr_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

char *cr_buf_steal(cr_buf *b) {
  char *p = b->data;
  if (!p)
    p = calloc(1, 1);
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}

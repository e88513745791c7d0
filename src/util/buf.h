/* A growable byte buffer. Always NUL-terminated (data[len] == 0) so it can be
 * handed to string functions, but it may hold NUL bytes inside. */
#ifndef CORRAL_UTIL_BUF_H
#define CORRAL_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cr_buf {
  char *data;
  size_t len;
  size_t cap;
} cr_buf;

/* Returns 0, or -1 on allocation failure (the buffer is left unchanged). */
int cr_buf_append(cr_buf *b, const void *p, size_t n);
int cr_buf_appendf(cr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cr_buf_reserve(cr_buf *b, size_t extra);
void cr_buf_reset(cr_buf *b);   /* len = 0, keeps memory */
void cr_buf_free(cr_buf *b);    /* frees memory, zeroes the struct */
/* Takes the data out (caller frees); the buffer becomes empty. Never NULL on
 * success: an empty buffer yields "". */
char *cr_buf_steal(cr_buf *b);

#endif

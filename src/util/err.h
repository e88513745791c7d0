/* Error reporting, crun style: a function that fails returns a negative value
 * and fills a caller-owned cr_err with a message naming the step that failed
 * and, where it helps, what to do. Only the CLI turns an error into an exit. */
#ifndef CORRAL_UTIL_ERR_H
#define CORRAL_UTIL_ERR_H

#include <stddef.h>

#define CR_ERR_MSG_MAX 512

typedef struct cr_err {
  int errnum;                 /* errno of the failing call, 0 if none */
  char msg[CR_ERR_MSG_MAX];   /* "step: detail: strerror" */
} cr_err;

/* Fill err with a formatted message; if errnum != 0, ": strerror(errnum)" is
 * appended. Returns -1 so callers can write `return cr_fail(err, errno, ...)`.
 * err may be NULL. */
int cr_fail(cr_err *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an existing error with more context ("outer step: inner message"). */
int cr_wrap(cr_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void cr_err_clear(cr_err *err);

#endif

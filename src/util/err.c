#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cr_fail(cr_err *err, int errnum, const char *fmt, ...) {
  if (!err)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  if (n < 0)
    n = 0;
  if ((size_t)n < sizeof err->msg && errnum != 0)
    snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errnum));
  err->errnum = errnum;
  return -1;
}

int cr_wrap(cr_err *err, const char *fmt, ...) {
  if (!err)
    return -1;
  char prefix[CR_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  char old[CR_ERR_MSG_MAX];
  memcpy(old, err->msg, sizeof old);
  /* Truncation is fine: the prefix and the start of the message matter most. */
  size_t pl = strnlen(prefix, sizeof err->msg - 3);
  memcpy(err->msg, prefix, pl);
  memcpy(err->msg + pl, ": ", 2);
  size_t room = sizeof err->msg - pl - 3;
  size_t ol = strnlen(old, room);
  memcpy(err->msg + pl + 2, old, ol);
  err->msg[pl + 2 + ol] = '\0';
  return -1;
}

void cr_err_clear(cr_err *err) {
  if (err) {
    err->errnum = 0;
    err->msg[0] = '\0';
  }
}

/* Program output on a terminal: see cr_tty_out in cli.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    p += w;
    n -= (size_t)w;
  }
}

void cr_tty_init(cr_tty_out *t, int fd, bool raw) {
  t->filter = !raw && isatty(fd);
  t->held_c2 = false;
  t->cont = 0;
}

void cr_tty_write(cr_tty_out *t, int fd, const char *p, size_t n) {
  if (!t->filter) {
    write_all(fd, p, n);
    return;
  }
  char buf[4096 + 16];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (k > 4096) {
      write_all(fd, buf, k);
      k = 0;
    }
    if (t->held_c2) {
      t->held_c2 = false;
      if (c >= 0x80 && c <= 0x9f) {
        k += (size_t)snprintf(buf + k, 16, "<U+%04X>", c); /* a C1 control in UTF-8 */
        continue;
      }
      buf[k++] = (char)0xc2;
      if (c >= 0x80 && c <= 0xbf) {
        buf[k++] = (char)c; /* U+00A0..U+00BF */
        continue;
      }
    }
    if (c >= 0x80 && c <= 0xbf && t->cont > 0) {
      t->cont--; /* inside a multibyte character */
      buf[k++] = (char)c;
      continue;
    }
    t->cont = 0;
    if (c == 0xc2) {
      t->held_c2 = true; /* the next byte tells: C1 control or a Latin-1 letter */
    } else if (c >= 0xc3 && c <= 0xf4) {
      t->cont = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
      buf[k++] = (char)c;
    } else if (c >= 0x80 && c <= 0x9f) {
      /* A bare 8-bit C1 byte (CSI 0x9b, OSC 0x9d): terminals outside
       * UTF-8 mode obey it. */
      k += (size_t)snprintf(buf + k, 16, "<%02X>", c);
    } else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      buf[k++] = '^';
      buf[k++] = (char)(c ^ 0x40);
    } else {
      buf[k++] = (char)c;
    }
  }
  write_all(fd, buf, k);
}

void cr_tty_printf(cr_tty_out *t, int fd, const char *fmt, ...) {
  char *text = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n > 0) {
    cr_tty_write(t, fd, text, (size_t)n);
    cr_tty_flush(t, fd);
  }
  free(text);
}

void cr_tty_flush(cr_tty_out *t, int fd) {
  if (t->held_c2) {
    t->held_c2 = false;
    write_all(fd, "\xc2", 1);
  }
}

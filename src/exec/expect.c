/* Judge-style comparison.
 *
 * White space that ends a line is " \t\r\f\v": \r so that a program writing
 * CRLF matches an expected text written with LF, \f and \v because judges
 * treat them as the blanks they look like. Stripping that set together with
 * '\n' from the end of the whole text removes the trailing empty lines and the
 * white space of the last line in one step; the remaining text is then split
 * on '\n' and each line is right-stripped before comparing. */
#include "exec/expect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool is_blank(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* A cursor over the lines of a text whose trailing white space and empty
 * lines are already cut off. */
typedef struct lines {
  const char *p;   /* unread text */
  const char *end; /* end of the kept text */
  bool done;       /* no line left: an empty kept text has no line at all */
} lines;

static void lines_init(lines *l, const char *s, size_t n) {
  if (!s)
    n = 0;
  while (n > 0 && (s[n - 1] == '\n' || is_blank(s[n - 1])))
    n--;
  l->p = s;
  l->end = s ? s + n : s;
  l->done = n == 0;
}

/* Next right-stripped line; false when there is none left. */
static bool lines_next(lines *l, const char **line, size_t *len) {
  if (l->done)
    return false;
  const char *nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
  const char *stop = nl ? nl : l->end;
  size_t k = (size_t)(stop - l->p);
  while (k > 0 && is_blank(l->p[k - 1]))
    k--;
  *line = l->p;
  *len = k;
  if (nl) {
    l->p = nl + 1;
  } else {
    l->p = l->end;
    l->done = true;
  }
  return true;
}

/* Copies a line into a diff field, cut so it fits with its NUL and never
 * ends in the middle of a UTF-8 character. */
static void put_line(char dst[128], const char *s, size_t n) {
  if (n > 127) {
    n = 127;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
      n--;
  }
  if (n)
    memcpy(dst, s, n);
  dst[n] = '\0';
}

bool cr_expect_match(const char *out, size_t out_len, const char *exp, size_t exp_len,
                     cr_expect_diff *diff) {
  lines lo, le;
  lines_init(&lo, out, out_len);
  lines_init(&le, exp, exp_len);
  for (size_t lineno = 1;; lineno++) {
    const char *a = NULL, *e = NULL;
    size_t alen = 0, elen = 0;
    bool have_a = lines_next(&lo, &a, &alen);
    bool have_e = lines_next(&le, &e, &elen);
    if (!have_a && !have_e)
      return true;
    if (have_a && have_e && alen == elen && (alen == 0 || memcmp(a, e, alen) == 0))
      continue;
    if (diff) {
      memset(diff, 0, sizeof *diff);
      diff->line = lineno;
      diff->actual_eof = !have_a;
      diff->expected_eof = !have_e;
      put_line(diff->actual, a, alen);
      put_line(diff->expected, e, elen);
    }
    return false;
  }
}

char *cr_unescape(const char *s, size_t *out_len) {
  if (!s)
    s = "";
  size_t n = strlen(s);
  char *out = malloc(n + 1);
  if (!out) {
    errno = ENOMEM;
    return NULL;
  }
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '\\' && i + 1 < n) {
      char d = 0;
      switch (s[i + 1]) {
      case 'n': d = '\n'; break;
      case 't': d = '\t'; break;
      case 'r': d = '\r'; break;
      case '\\': d = '\\'; break;
      case '0': d = '\0'; break;
      default: out[o++] = ch; continue;   /* unknown escape: keep the backslash */
      }
      out[o++] = d;
      i++;
      continue;
    }
    out[o++] = ch;
  }
  out[o] = '\0';
  if (out_len)
    *out_len = o;
  return out;
}

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

/* ---- streaming ---------------------------------------------------------
 *
 * The output's lines are compared with the expected ones as they complete,
 * byte by byte against the expected line (no copy of the output line is
 * kept, only its first bytes for the diff). A line's trailing blanks are
 * held as a count: they matter only if something other than a blank
 * follows on the same line. Empty output lines may turn out to be trailing
 * (ignored) or inner (compared): a difference on one stays tentative until
 * a nonblank line follows. */

static void next_expected(cr_expect_stream *s) {
  lines le = {.p = s->ep, .end = s->exp_end, .done = s->e_done};
  s->have_e = lines_next(&le, &s->e, &s->elen);
  s->ep = le.p;
  s->e_done = le.done;
  if (!s->have_e) {
    s->e = NULL;
    s->elen = 0;
  }
}

static void line_reset(cr_expect_stream *s) {
  s->p = s->k = 0;
  s->ok = s->ws_ok = true;
  s->nonblank = s->any = false;
  s->plen = 0;
}

void cr_expect_stream_init(cr_expect_stream *s, const char *exp, size_t exp_len) {
  memset(s, 0, sizeof *s);
  lines le;
  lines_init(&le, exp, exp_len);
  s->ep = le.p;
  s->exp_end = le.end;
  s->e_done = le.done;
  s->lineno = 1;
  next_expected(s);
  s->after_e = s->e;
  s->after_elen = s->elen;
  s->after_have = s->have_e;
  line_reset(s);
}

static void set_diff(cr_expect_diff *d, size_t line, const cr_expect_stream *s, bool actual_eof) {
  memset(d, 0, sizeof *d);
  d->line = line;
  d->actual_eof = actual_eof;
  d->expected_eof = !s->have_e;
  size_t n = s->plen;
  while (n > 0 && is_blank(s->prefix[n - 1]))
    n--;
  if (!actual_eof)
    put_line(d->actual, s->prefix, n);
  put_line(d->expected, s->e, s->elen);
}

static void end_line(cr_expect_stream *s) {
  bool same = s->have_e && s->ok && s->p == s->elen;
  if (!s->nonblank) {
    /* empty (or blank): a difference only if a nonblank line follows */
    if (!same && !s->tentative) {
      s->tentative = true;
      set_diff(&s->tdiff, s->lineno, s, false);
    }
  } else {
    if (s->tentative) {
      s->diff = s->tdiff;
      s->failed = true;
    } else if (!same) {
      set_diff(&s->diff, s->lineno, s, false);
      s->failed = true;
    }
    s->last_nonblank = s->lineno;
  }
  s->lineno++;
  next_expected(s);
  if (s->nonblank) {
    s->after_e = s->e;
    s->after_elen = s->elen;
    s->after_have = s->have_e;
  }
  line_reset(s);
}

void cr_expect_stream_feed(cr_expect_stream *s, const char *p, size_t n) {
  for (size_t i = 0; i < n && !s->failed; i++) {
    char c = p[i];
    if (c == '\n') {
      end_line(s);
      continue;
    }
    s->any = true;
    if (s->plen < sizeof s->prefix)
      s->prefix[s->plen++] = c;
    if (is_blank(c)) {
      if (s->ok && s->ws_ok && !(s->p + s->k < s->elen && s->e[s->p + s->k] == c))
        s->ws_ok = false;
      s->k++;
      continue;
    }
    s->nonblank = true;
    if (s->ok) {
      s->ok = s->have_e && s->ws_ok && s->p + s->k < s->elen && s->e[s->p + s->k] == c;
      if (s->ok) {
        s->p += s->k + 1;
        s->k = 0;
      }
    }
  }
}

bool cr_expect_stream_end(cr_expect_stream *s, cr_expect_diff *diff) {
  if (!s->failed && s->any)
    end_line(s); /* a last line without its newline */
  if (!s->failed && s->after_have) {
    /* The output's lines (up to its last nonblank one) ended before the
     * expected ones did. */
    s->failed = true;
    memset(&s->diff, 0, sizeof s->diff);
    s->diff.line = s->last_nonblank + 1;
    s->diff.actual_eof = true;
    put_line(s->diff.expected, s->after_e, s->after_elen);
  }
  if (s->failed && diff)
    *diff = s->diff;
  return !s->failed;
}

bool cr_expect_match(const char *out, size_t out_len, const char *exp, size_t exp_len,
                     cr_expect_diff *diff) {
  cr_expect_stream s;
  cr_expect_stream_init(&s, exp, exp_len);
  if (out)
    cr_expect_stream_feed(&s, out, out_len);
  return cr_expect_stream_end(&s, diff);
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

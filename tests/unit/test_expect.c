#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/expect.h"

typedef struct ecase {
  const char *out;
  size_t out_len;
  const char *exp;
  size_t exp_len;
  bool match;
  size_t line;         /* on mismatch */
  const char *actual;
  const char *expected;
  bool actual_eof;
  bool expected_eof;
} ecase;

#define OK(o, e) {o, sizeof(o) - 1, e, sizeof(e) - 1, true, 0, NULL, NULL, false, false}
#define BAD(o, e, ln, a, x, aeof, xeof) \
  {o, sizeof(o) - 1, e, sizeof(e) - 1, false, ln, a, x, aeof, xeof}

static const ecase cases[] = {
    OK("45", "45"),
    OK("45", "45\n"),
    OK("45\n", "45"),
    OK("45  \n\n", "45"),
    OK("45", "45  \n\n\n"),
    OK("45\r\n", "45\n"),                       /* CRLF output, LF expected */
    OK("1\r\n2\r\n3\r\n", "1\n2\n3\n"),
    OK("a \t\f\v\r\nb\n", "a\nb"),
    OK("", ""),
    OK("\n\n  \n", ""),                         /* only blank lines: no lines */
    OK("", "\n"),
    OK("x\n\ny", "x\n\ny"),                     /* an empty line inside counts */
    OK("  indented", "  indented"),
    OK("a\0b", "a\0b"),
    OK("caf\xC3\xA9\n", "caf\xC3\xA9"),
    BAD("45", "46", 1, "45", "46", false, false),
    BAD("45\n46\n", "45\n47\n", 2, "46", "47", false, false),
    BAD("1\n2\n3\n", "1\n2\n", 3, "3", "", false, true),     /* extra output line */
    BAD("1\n2\n", "1\n2\n3\n", 3, "", "3", true, false),     /* missing output line */
    BAD("", "42\n", 1, "", "42", true, false),
    BAD("42", "", 1, "42", "", false, true),
    BAD(" 45", "45", 1, " 45", "45", false, false),          /* leading space counts */
    BAD("45", "\t45", 1, "45", "\t45", false, false),
    BAD("x\ny", "x\n\ny", 2, "y", "", false, false),         /* inner empty line counts */
    BAD("x\n\ny", "x\ny", 2, "", "y", false, false),
    BAD("4 5", "4  5", 1, "4 5", "4  5", false, false),      /* inner spaces count */
    BAD("a\rb", "a\nb", 1, "a\rb", "a", false, false),       /* a lone \r mid-line is text */
    BAD("a\0b", "a\0c", 1, "a", "a", false, false),          /* NUL inside, cut in C view */
    BAD("ok  \r\nbad  \r\n", "ok\ngood\n", 2, "bad", "good", false, false),
    OK("x\n\n\t\n", "x"),                      /* trailing blank lines of the output */
    BAD("x\n\n\nz", "x\nz", 2, "", "z", false, false),  /* inner empty lines count */
    BAD("x\n \n", "x\n\ny", 2, "", "", true, false),    /* output ends before the expected */
    BAD("a  b", "a b", 1, "a  b", "a b", false, false),
    OK("a \tb  ", "a \tb"),
};

/* An independent reference for the streaming comparison (which shares no
 * code with this, while cr_expect_match is now the same code as the
 * stream): written the obvious way, whole texts in memory. Split on '\n',
 * strip each line's trailing blanks, drop the empty lines at the end, then
 * the first line that differs (or is missing on one side) is the diff. */
typedef struct ref_line {
  const char *p;
  size_t n;
} ref_line;

typedef struct ref_verdict {
  bool match;
  size_t line;
  ref_line actual, expected;   /* n 0 past the end */
  bool actual_eof, expected_eof;
} ref_verdict;

static bool ref_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

static size_t ref_split(const char *s, size_t n, ref_line *v, size_t cap) {
  size_t k = 0;
  const char *start = s;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '\n')
      continue;
    size_t len = (size_t)(s + i - start);
    while (len > 0 && ref_blank(start[len - 1]))
      len--;
    assert_true(k < cap);
    v[k++] = (ref_line){start, len};
    start = s + i + 1;
  }
  while (k > 0 && v[k - 1].n == 0)
    k--;
  return k;
}

static ref_verdict ref_compare(const char *out, size_t out_len, const char *exp, size_t exp_len) {
  static ref_line a[4096], e[4096];
  size_t na = ref_split(out, out_len, a, 4096), ne = ref_split(exp, exp_len, e, 4096);
  ref_verdict v = {.match = true};
  for (size_t i = 0; i < na || i < ne; i++) {
    bool same = i < na && i < ne && a[i].n == e[i].n && memcmp(a[i].p, e[i].p, a[i].n) == 0;
    if (same)
      continue;
    v.match = false;
    v.line = i + 1;
    v.actual_eof = i >= na;
    v.expected_eof = i >= ne;
    if (i < na)
      v.actual = a[i];
    if (i < ne)
      v.expected = e[i];
    break;
  }
  return v;
}

/* A diff field shows its line as C text, cut to 127 bytes or a little less
 * (never inside a UTF-8 character: at most 3 bytes fewer). */
static void check_field(size_t idx, const char *what, const char *got, ref_line want) {
  size_t c = strnlen(want.p ? want.p : "", want.n);   /* C view: up to a NUL */
  size_t full = c < 127 ? c : 127, gl = strlen(got);
  if (gl > full || gl + 3 < full || (want.n && memcmp(got, want.p, gl) != 0))
    fail_msg("case %zu: %s is '%s' (%zu bytes), want the first %zu bytes of the line", idx, what,
             got, gl, full);
}

static void check_stream(size_t idx, const char *out, size_t out_len, const char *exp,
                         size_t exp_len, size_t chunk) {
  cr_expect_stream es;
  cr_expect_stream_init(&es, exp, exp_len);
  for (size_t k = 0; k < out_len; k += chunk)
    cr_expect_stream_feed(&es, out + k, out_len - k < chunk ? out_len - k : chunk);
  cr_expect_diff d;
  memset(&d, 0x5A, sizeof d);
  bool m = cr_expect_stream_end(&es, &d);
  ref_verdict r = ref_compare(out, out_len, exp, exp_len);
  if (m != r.match)
    fail_msg("case %zu (chunks of %zu): streamed %d, reference %d", idx, chunk, m, r.match);
  if (m)
    return;
  if (d.line != r.line || d.actual_eof != r.actual_eof || d.expected_eof != r.expected_eof)
    fail_msg("case %zu (chunks of %zu): line %zu eof %d/%d, reference line %zu eof %d/%d", idx,
             chunk, d.line, d.actual_eof, d.expected_eof, r.line, r.actual_eof, r.expected_eof);
  check_field(idx, "actual", d.actual, r.actual);
  check_field(idx, "expected", d.expected, r.expected);
}

/* The streaming comparison, fed byte by byte and in other chunk sizes,
 * agrees with the reference on every case of the table. */
static void test_stream_byte_by_byte(void **state) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const ecase *c = &cases[i];
    ref_verdict r = ref_compare(c->out, c->out_len, c->exp, c->exp_len);
    if (r.match != c->match || (!r.match && r.line != c->line))
      fail_msg("case %zu: the reference itself disagrees with the table", i);
    for (size_t chunk = 1; chunk <= 4; chunk++)
      check_stream(i, c->out, c->out_len, c->exp, c->exp_len, chunk);
  }
}

/* Texts made of lines of a few troublesome bytes, rendered twice with
 * different trailing blanks, line endings and trailing empty lines (so they
 * should match), then often changed on one side. Fixed seed: the same
 * cases every run. */
static uint32_t rnd_state = 12345;
static uint32_t rnd(uint32_t n) {
  rnd_state = rnd_state * 1103515245u + 12345u;
  return (rnd_state >> 16) % n;
}

static size_t render(char *buf, char lines[][8], const size_t *lens, size_t nl) {
  static const char blanks[] = " \t\r\f\v";
  size_t k = 0;
  for (size_t i = 0; i < nl; i++) {
    memcpy(buf + k, lines[i], lens[i]);
    k += lens[i];
    for (uint32_t b = rnd(3); b; b--)
      buf[k++] = blanks[rnd(5)];
    if (i + 1 < nl || rnd(2)) {
      if (rnd(2))
        buf[k++] = '\r';
      buf[k++] = '\n';
    }
  }
  for (uint32_t t = rnd(3); t; t--) {
    if (rnd(2))
      buf[k++] = ' ';
    buf[k++] = '\n';
  }
  return k;
}

static void test_stream_against_reference_random(void **state) {
  static const char alphabet[] = {'a', 'b', ' ', '\t', '\r', '\0', '\xC3', '\xA9'};
  for (size_t iter = 0; iter < 20000; iter++) {
    char lines[12][8];
    size_t lens[12], nl = rnd(12);
    for (size_t i = 0; i < nl; i++) {
      lens[i] = rnd(8);
      for (size_t j = 0; j < lens[i]; j++)
        lines[i][j] = alphabet[rnd(sizeof alphabet)];
    }
    char out[256], exp[256];
    size_t ol = render(out, lines, lens, nl);
    size_t el = render(exp, lines, lens, nl);
    switch (rnd(4)) {
    case 0:
      break; /* as rendered: they match */
    case 1:
      if (el)
        exp[rnd((uint32_t)el)] = alphabet[rnd(sizeof alphabet)];
      break;
    case 2:
      if (ol)
        out[rnd((uint32_t)ol)] = "a\n "[rnd(3)];
      break;
    default:
      if (el)
        el = rnd((uint32_t)el); /* the expected text cut short */
      break;
    }
    check_stream(iter, out, ol, exp, el, 1);
    check_stream(iter, out, ol, exp, el, 1 + rnd(7));
  }
}

/* A long output in odd chunks, one wrong line deep inside it. */
static void test_stream_long_output(void **state) {
  size_t n = 200000;
  char *exp = malloc(n * 8), *out = malloc(n * 8);
  assert_non_null(exp);
  assert_non_null(out);
  size_t el = 0, ol = 0;
  for (size_t i = 0; i < n; i++) {
    el += (size_t)sprintf(exp + el, "%zu\n", i);
    ol += (size_t)sprintf(out + ol, i == 123456 ? "x\n" : "%zu\n", i);
  }
  cr_expect_stream es;
  cr_expect_stream_init(&es, exp, el);
  for (size_t off = 0; off < el; off += 4093)
    cr_expect_stream_feed(&es, exp + off, el - off < 4093 ? el - off : 4093);
  assert_true(cr_expect_stream_end(&es, NULL));
  cr_expect_diff d;
  cr_expect_stream_init(&es, exp, el);
  for (size_t off = 0; off < ol; off += 4093)
    cr_expect_stream_feed(&es, out + off, ol - off < 4093 ? ol - off : 4093);
  assert_false(cr_expect_stream_end(&es, &d));
  assert_int_equal(d.line, 123457);
  assert_string_equal(d.actual, "x");
  assert_string_equal(d.expected, "123456");
  free(exp);
  free(out);
}

static void test_table(void **state) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const ecase *c = &cases[i];
    cr_expect_diff d;
    memset(&d, 0x5A, sizeof d);
    bool m = cr_expect_match(c->out, c->out_len, c->exp, c->exp_len, &d);
    if (m != c->match)
      fail_msg("case %zu: match should be %d", i, c->match);
    if (m)
      continue;
    if (d.line != c->line)
      fail_msg("case %zu: line %zu, want %zu", i, d.line, c->line);
    if (strcmp(d.actual, c->actual) != 0)
      fail_msg("case %zu: actual '%s', want '%s'", i, d.actual, c->actual);
    if (strcmp(d.expected, c->expected) != 0)
      fail_msg("case %zu: expected '%s', want '%s'", i, d.expected, c->expected);
    if (d.actual_eof != c->actual_eof || d.expected_eof != c->expected_eof)
      fail_msg("case %zu: eof flags %d/%d", i, d.actual_eof, d.expected_eof);
    /* A NULL diff is allowed and gives the same verdict. */
    assert_false(cr_expect_match(c->out, c->out_len, c->exp, c->exp_len, NULL));
  }
}

static void test_symmetry(void **state) {
  /* Swapping the sides swaps the eof flags and keeps the line. */
  cr_expect_diff d;
  assert_false(cr_expect_match("1\n2\n3", 5, "1\n2", 3, &d));
  assert_int_equal(d.line, 3);
  assert_true(d.expected_eof);
  assert_false(d.actual_eof);
  assert_false(cr_expect_match("1\n2", 3, "1\n2\n3", 5, &d));
  assert_int_equal(d.line, 3);
  assert_true(d.actual_eof);
  assert_false(d.expected_eof);
}

/* Long lines are cut to 127 bytes, never inside a UTF-8 character, and the
 * field is always NUL-terminated. */
static void test_long_line_cut(void **state) {
  char out[300], exp[300];
  cr_expect_diff d;

  memset(out, 'a', 200);
  memset(exp, 'a', 200);
  exp[199] = 'b';
  memset(&d, 0x5A, sizeof d);
  assert_false(cr_expect_match(out, 200, exp, 200, &d));
  assert_int_equal(d.line, 1);
  assert_int_equal(strlen(d.actual), 127);
  assert_int_equal(strlen(d.expected), 127);
  assert_memory_equal(d.actual, out, 127);

  /* 126 ASCII bytes then a 2-byte character straddling the cut: dropped whole. */
  memset(out, 'x', 126);
  memcpy(out + 126, "\xC3\xA9zz", 4);
  memset(&d, 0x5A, sizeof d);
  assert_false(cr_expect_match(out, 130, "y", 1, &d));
  assert_int_equal(strlen(d.actual), 126);
  assert_string_equal(d.expected, "y");

  /* 125 bytes then a 4-byte character: cut back to 125. */
  memset(out, 'x', 125);
  memcpy(out + 125, "\xF0\x9F\x98\x80", 4);
  memset(&d, 0x5A, sizeof d);
  assert_false(cr_expect_match(out, 129, "y", 1, &d));
  assert_int_equal(strlen(d.actual), 125);

  /* A character ending exactly at 127 is kept. */
  memset(out, 'x', 125);
  memcpy(out + 125, "\xC3\xA9\xC3\xA9", 4);
  memset(&d, 0x5A, sizeof d);
  assert_false(cr_expect_match(out, 129, "y", 1, &d));
  assert_int_equal(strlen(d.actual), 127);
  assert_memory_equal(d.actual + 125, "\xC3\xA9", 2);

  /* Exactly 127 bytes fits untouched. */
  memset(out, 'q', 127);
  memset(&d, 0x5A, sizeof d);
  assert_false(cr_expect_match(out, 127, "y", 1, &d));
  assert_int_equal(strlen(d.actual), 127);
}

/* The first difference is reported, not a later one, on big inputs too. */
static void test_many_lines(void **state) {
  const size_t lines = 10000;
  char *out = malloc(lines * 8), *exp = malloc(lines * 8);
  assert_non_null(out);
  assert_non_null(exp);
  size_t ol = 0, el = 0;
  for (size_t i = 0; i < lines; i++) {
    memcpy(out + ol, "line \r\n", 7);
    ol += 7;
    memcpy(exp + el, "line\n", 5);
    el += 5;
  }
  cr_expect_diff d;
  assert_true(cr_expect_match(out, ol, exp, el, &d));
  out[7 * 5000] = 'L';
  out[7 * 6000] = 'L';
  assert_false(cr_expect_match(out, ol, exp, el, &d));
  assert_int_equal(d.line, 5001);
  assert_string_equal(d.actual, "Line");
  assert_string_equal(d.expected, "line");
  free(out);
  free(exp);
}

static void test_unescape(void **state) {
  static const struct {
    const char *in;
    const char *out;
    size_t out_len;
  } u[] = {
      {"", "", 0},
      {"plain", "plain", 5},
      {"45\\n", "45\n", 3},
      {"a\\tb\\r\\n", "a\tb\r\n", 5},
      {"back\\\\slash", "back\\slash", 10},
      {"\\\\n", "\\n", 2},                 /* escaped backslash, then a plain n */
      {"nul\\0here", "nul\0here", 8},
      {"\\x41", "\\x41", 4},               /* unknown escape stays as typed */
      {"\\q\\n", "\\q\n", 3},
      {"trailing\\", "trailing\\", 9},    /* lone backslash at the end */
      {"\\", "\\", 1},
  };
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
    size_t len = 999;
    char *r = cr_unescape(u[i].in, &len);
    assert_non_null(r);
    if (len != u[i].out_len || memcmp(r, u[i].out, len) != 0)
      fail_msg("unescape case %zu ('%s'): got %zu bytes", i, u[i].in, len);
    assert_int_equal(r[len], '\0');
    free(r);
  }
  char *r = cr_unescape("x\\ny", NULL);
  assert_string_equal(r, "x\ny");
  free(r);
}

/* What the CLI does with --expect: unescape what was typed, then compare. */
static void test_unescape_then_match(void **state) {
  size_t el;
  char *exp = cr_unescape("1\\n2\\n", &el);
  assert_non_null(exp);
  assert_true(cr_expect_match("1\r\n2\r\n\r\n", 8, exp, el, NULL));
  assert_false(cr_expect_match("1\n3\n", 4, exp, el, NULL));
  free(exp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_stream_byte_by_byte),
      cmocka_unit_test(test_stream_against_reference_random),
      cmocka_unit_test(test_stream_long_output),
      cmocka_unit_test(test_symmetry),
      cmocka_unit_test(test_long_line_cut),
      cmocka_unit_test(test_many_lines),
      cmocka_unit_test(test_unescape),
      cmocka_unit_test(test_unescape_then_match),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

#define R "\xEF\xBF\xBD" /* U+FFFD */

typedef struct ucase {
  const char *in;
  size_t in_len;
  bool valid;
  const char *out;   /* sanitized */
  size_t out_len;
} ucase;

#define C(in, valid, out) {in, sizeof(in) - 1, valid, out, sizeof(out) - 1}

static const ucase cases[] = {
    C("", true, ""),
    C("plain ascii\n", true, "plain ascii\n"),
    C("caf\xC3\xA9", true, "caf\xC3\xA9"),                /* U+00E9 */
    C("\xE2\x82\xAC", true, "\xE2\x82\xAC"),              /* U+20AC */
    C("\xF0\x9D\x84\x9E", true, "\xF0\x9D\x84\x9E"),      /* U+1D11E */
    C("\xC2\x80", true, "\xC2\x80"),                      /* U+0080, smallest 2-byte */
    C("\xDF\xBF", true, "\xDF\xBF"),                      /* U+07FF */
    C("\xE0\xA0\x80", true, "\xE0\xA0\x80"),              /* U+0800, smallest 3-byte */
    C("\xED\x9F\xBF", true, "\xED\x9F\xBF"),              /* U+D7FF, just below surrogates */
    C("\xEE\x80\x80", true, "\xEE\x80\x80"),              /* U+E000, just above */
    C("\xEF\xBF\xBF", true, "\xEF\xBF\xBF"),              /* U+FFFF */
    C(R, true, R),                                        /* U+FFFD itself */
    C("\xF0\x90\x80\x80", true, "\xF0\x90\x80\x80"),      /* U+10000 */
    C("\xF4\x8F\xBF\xBF", true, "\xF4\x8F\xBF\xBF"),      /* U+10FFFF */
    C("a\0b", true, "a\0b"),                              /* NUL is valid and kept */
    /* stray continuation bytes */
    C("\x80", false, R),
    C("a\xBF" "b", false, "a" R "b"),
    C("\x80\x80", false, R R),
    /* overlongs: the lead byte already rules them out, one U+FFFD per byte */
    C("\xC0\x80", false, R R),
    C("\xC0\xAF", false, R R),
    C("\xC1\xBF", false, R R),
    C("\xE0\x80\x80", false, R R R),
    C("\xE0\x9F\xBF", false, R R R),
    C("\xF0\x80\x80\x80", false, R R R R),
    C("\xF0\x8F\xBF\xBF", false, R R R R),
    /* surrogates */
    C("\xED\xA0\x80", false, R R R),
    C("\xED\xBF\xBF", false, R R R),
    C("\xED\xA0\xBD\xED\xB8\x80", false, R R R R R R),    /* CESU-8 pair */
    /* beyond U+10FFFF and bytes that never occur */
    C("\xF4\x90\x80\x80", false, R R R R),
    C("\xF5\x80\x80\x80", false, R R R R),
    C("\xF8\x88\x80\x80\x80", false, R R R R R),
    C("\xFE", false, R),
    C("\xFF", false, R),
    /* truncated sequences: one U+FFFD for the maximal subpart */
    C("\xC3", false, R),
    C("a\xE2\x82", false, "a" R),
    C("\xF0\x9F\x98", false, R),
    C("\xE2\x82" "a", false, R "a"),
    C("\xF0\x9F" "ok", false, R "ok"),
    C("\xE2\x82\xE2\x82\xAC", false, R "\xE2\x82\xAC"),   /* valid char after a cut one */
    C("\xC3" "\xC3\xA9", false, R "\xC3\xA9"),
    /* NUL next to garbage stays a NUL */
    C("a\0\xFF" "b", false, "a\0" R "b"),
};

static void test_table(void **state) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const ucase *c = &cases[i];
    if (cr_utf8_valid(c->in, c->in_len) != c->valid)
      fail_msg("case %zu: valid should be %d", i, c->valid);
    size_t len = 999;
    char *out = cr_utf8_sanitize(c->in, c->in_len, &len);
    assert_non_null(out);
    if (len != c->out_len || memcmp(out, c->out, len) != 0)
      fail_msg("case %zu: sanitize gave %zu bytes, want %zu", i, len, c->out_len);
    assert_int_equal(out[len], '\0');
    assert_true(cr_utf8_valid(out, len));
    free(out);
  }
}

static size_t encode(uint32_t cp, unsigned char *b) {
  if (cp < 0x80) {
    b[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    b[0] = (unsigned char)(0xC0 | cp >> 6);
    b[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    b[0] = (unsigned char)(0xE0 | cp >> 12);
    b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  b[0] = (unsigned char)(0xF0 | cp >> 18);
  b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  b[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Every code point, encoded the shortest way, is valid unless it is a
 * surrogate; every truncation of a multi-byte one is not. */
static void test_all_code_points(void **state) {
  unsigned char b[4];
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
    size_t n = encode(cp, b);
    bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    if (cr_utf8_valid((const char *)b, n) == surrogate)
      fail_msg("U+%04X", (unsigned)cp);
    for (size_t k = 1; k < n; k++)
      if (cr_utf8_valid((const char *)b, k))
        fail_msg("U+%04X cut to %zu bytes", (unsigned)cp, k);
  }
}

/* Every 2-, 3- and 4-byte pattern that encodes a code point in too many
 * bytes is rejected, as is everything above U+10FFFF the 4-byte form can
 * reach. */
static void test_overlongs_and_out_of_range(void **state) {
  unsigned char b[4];
  for (uint32_t cp = 0; cp < 0x80; cp++) {
    b[0] = (unsigned char)(0xC0 | cp >> 6);
    b[1] = (unsigned char)(0x80 | (cp & 0x3F));
    assert_false(cr_utf8_valid((const char *)b, 2));
  }
  for (uint32_t cp = 0; cp < 0x800; cp++) {
    b[0] = 0xE0;
    b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp & 0x3F));
    assert_false(cr_utf8_valid((const char *)b, 3));
  }
  for (uint32_t cp = 0; cp < 0x10000; cp++) {
    b[0] = 0xF0;
    b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (unsigned char)(0x80 | (cp & 0x3F));
    assert_false(cr_utf8_valid((const char *)b, 4));
  }
  for (uint32_t cp = 0x110000; cp < 0x200000; cp += 0x3F) {
    encode(cp, b);
    assert_false(cr_utf8_valid((const char *)b, 4));
  }
}

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Random bytes: sanitize always yields valid UTF-8, is the identity on valid
 * input, and is idempotent. */
static void test_random_sanitize_properties(void **state) {
  uint64_t seed = 12345;
  unsigned char buf[64];
  for (int round = 0; round < 20000; round++) {
    size_t n = (size_t)(rng_next(&seed) % sizeof buf);
    bool mostly_valid = round % 2;
    for (size_t i = 0; i < n; i++) {
      uint64_t r = rng_next(&seed);
      /* Bias toward bytes that form sequences so both paths get exercised. */
      buf[i] = mostly_valid ? (unsigned char)(r % 3 == 0 ? 0x80 | (r >> 8 & 0x3F) : r >> 16)
                            : (unsigned char)r;
    }
    size_t l1, l2;
    char *s1 = cr_utf8_sanitize((const char *)buf, n, &l1);
    assert_non_null(s1);
    assert_true(cr_utf8_valid(s1, l1));
    assert_true(l1 <= 3 * n);
    if (cr_utf8_valid((const char *)buf, n)) {
      assert_int_equal(l1, n);
      assert_memory_equal(s1, buf, n);
    } else {
      assert_true(l1 != n || memcmp(s1, buf, n) != 0);
    }
    char *s2 = cr_utf8_sanitize(s1, l1, &l2);
    assert_non_null(s2);
    assert_int_equal(l1, l2);
    assert_memory_equal(s1, s2, l1);
    free(s1);
    free(s2);
  }
}

static void test_large_mixed_input(void **state) {
  /* 1 MB of a valid character followed by a stray byte, repeated. */
  const size_t reps = 250000;
  char *in = malloc(reps * 4);
  assert_non_null(in);
  for (size_t i = 0; i < reps; i++)
    memcpy(in + 4 * i, "\xE2\x82\xAC\x80", 4);
  assert_false(cr_utf8_valid(in, reps * 4));
  size_t len;
  char *out = cr_utf8_sanitize(in, reps * 4, &len);
  assert_non_null(out);
  assert_int_equal(len, reps * 6);
  for (size_t i = 0; i < reps; i++)
    assert_memory_equal(out + 6 * i, "\xE2\x82\xAC" R, 6);
  free(out);
  free(in);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_all_code_points),
      cmocka_unit_test(test_overlongs_and_out_of_range),
      cmocka_unit_test(test_random_sanitize_properties),
      cmocka_unit_test(test_large_mixed_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

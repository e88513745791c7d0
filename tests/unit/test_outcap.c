#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/outcap.h"

/* A deterministic generator local to each test, so runs are reproducible and
 * there is no shared state between tests. */
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* What render() must return, computed the obvious way from the whole stream. */
static char *naive_render(const char *all, size_t total, size_t cap, size_t *len) {
  if (total <= cap) {
    char *r = malloc(total + 1);
    assert_non_null(r);
    memcpy(r, all, total);
    r[total] = '\0';
    *len = total;
    return r;
  }
  size_t hc = cap / 2, tc = cap - cap / 2;
  char marker[80];
  int m = snprintf(marker, sizeof marker, "\n[... corral: %zu bytes dropped ...]\n",
                   total - cap);
  size_t n = hc + (size_t)m + tc;
  char *r = malloc(n + 1);
  assert_non_null(r);
  memcpy(r, all, hc);
  memcpy(r + hc, marker, (size_t)m);
  memcpy(r + hc + (size_t)m, all + total - tc, tc);
  r[n] = '\0';
  *len = n;
  return r;
}

static void assert_render(const cr_outcap *c, const char *want, size_t want_len) {
  size_t len = 12345;
  char *got = cr_outcap_render(c, &len);
  assert_non_null(got);
  assert_int_equal(len, want_len);
  assert_memory_equal(got, want, want_len);
  assert_int_equal(got[len], '\0');
  free(got);
}

static void test_small_output_verbatim(void **state) {
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 64), 0);
  assert_int_equal(cr_outcap_feed(&c, "hello ", 6), 6);
  assert_int_equal(cr_outcap_feed(&c, "world\n", 6), 6);
  assert_false(cr_outcap_truncated(&c));
  assert_int_equal(cr_outcap_dropped(&c), 0);
  assert_render(&c, "hello world\n", 12);
  size_t len = 0;
  char *t = cr_outcap_tail(&c, &len);
  assert_int_equal(len, 12);
  assert_memory_equal(t, "hello world\n", 12);
  free(t);
  cr_outcap_free(&c);
}

static void test_empty(void **state) {
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 16), 0);
  assert_int_equal(cr_outcap_feed(&c, NULL, 0), 0);
  size_t len = 99;
  char *r = cr_outcap_render(&c, &len);
  assert_non_null(r);
  assert_int_equal(len, 0);
  assert_string_equal(r, "");
  free(r);
  r = cr_outcap_tail(&c, &len);
  assert_non_null(r);
  assert_int_equal(len, 0);
  free(r);
  cr_outcap_free(&c);
}

static void test_init_rejects_tiny_cap(void **state) {
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 0), -1);
  assert_int_equal(cr_outcap_init(&c, 1), -1);
  assert_int_equal(cr_outcap_init(&c, 2), 0);
  cr_outcap_free(&c);
}

/* Exactly cap bytes is not a truncation: a program that fills the cap to the
 * byte must come back untouched. */
static void test_exactly_cap_is_verbatim(void **state) {
  char data[100];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (char)('a' + i % 26);
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 100), 0);
  assert_int_equal(cr_outcap_feed(&c, data, 100), 50);
  assert_false(cr_outcap_truncated(&c));
  assert_render(&c, data, 100);
  /* One more byte and it flips. */
  assert_int_equal(cr_outcap_feed(&c, "!", 1), 0);
  assert_true(cr_outcap_truncated(&c));
  assert_int_equal(cr_outcap_dropped(&c), 1);
  char want[200];
  memcpy(want, data, 50);
  const char *mk = "\n[... corral: 1 bytes dropped ...]\n";
  memcpy(want + 50, mk, strlen(mk));
  memcpy(want + 50 + strlen(mk), data + 51, 49);
  want[50 + strlen(mk) + 49] = '!';
  assert_render(&c, want, 50 + strlen(mk) + 50);
  size_t len = 0;
  char *t = cr_outcap_tail(&c, &len);
  assert_int_equal(len, 50);
  assert_memory_equal(t, data + 51, 49);
  assert_int_equal(t[49], '!');
  free(t);
  cr_outcap_free(&c);
}

/* 10 MB through a 1 KiB cap: the first 512 and last 512 bytes survive, the
 * count in between is exact, and memory never exceeds the cap. */
static void test_flood_10mb_cap_1k(void **state) {
  const size_t total = 10u * 1000 * 1000, chunk = 4096;
  char *buf = malloc(chunk);
  assert_non_null(buf);
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 1024), 0);
  long forwarded = 0;
  for (size_t off = 0; off < total; off += chunk) {
    size_t n = total - off < chunk ? total - off : chunk;
    for (size_t i = 0; i < n; i++)
      buf[i] = (char)((off + i) * 7 % 251);
    long r = cr_outcap_feed(&c, buf, n);
    assert_true(r >= 0);
    forwarded += r;
  }
  assert_int_equal(forwarded, 512);
  assert_true(cr_outcap_truncated(&c));
  assert_int_equal(cr_outcap_dropped(&c), total - 1024);
  assert_true(c.head.cap <= 1024 + 1);

  size_t len = 0;
  char *r = cr_outcap_render(&c, &len);
  assert_non_null(r);
  const char *mk = "\n[... corral: 9998976 bytes dropped ...]\n";
  size_t mlen = strlen(mk);
  assert_int_equal(len, 512 + mlen + 512);
  for (size_t i = 0; i < 512; i++)
    assert_int_equal((unsigned char)r[i], i * 7 % 251);
  assert_memory_equal(r + 512, mk, mlen);
  for (size_t i = 0; i < 512; i++)
    assert_int_equal((unsigned char)r[512 + mlen + i], (total - 512 + i) * 7 % 251);
  free(r);
  free(buf);
  cr_outcap_free(&c);
}

/* The point of keeping a tail: the traceback printed after a flood is there. */
static void test_last_line_of_flood_survives(void **state) {
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 4096), 0);
  char line[32];
  for (int i = 0; i < 100000; i++) {
    int n = snprintf(line, sizeof line, "line %d\n", i);
    assert_true(cr_outcap_feed(&c, line, (size_t)n) >= 0);
  }
  const char *tb = "Traceback (most recent call last):\n  File \"<x>\", line 3\n"
                   "ZeroDivisionError: division by zero\n";
  assert_true(cr_outcap_feed(&c, tb, strlen(tb)) >= 0);
  size_t len = 0;
  char *r = cr_outcap_render(&c, &len);
  assert_non_null(r);
  assert_true(len > strlen(tb));
  assert_memory_equal(r + len - strlen(tb), tb, strlen(tb));
  assert_memory_equal(r, "line 0\nline 1\n", 14);
  assert_non_null(strstr(r, " bytes dropped ...]\n"));
  free(r);
  char *t = cr_outcap_tail(&c, &len);
  assert_int_equal(len, 2048);
  assert_memory_equal(t + len - strlen(tb), tb, strlen(tb));
  free(t);
  cr_outcap_free(&c);
}

static void test_chunk_larger_than_cap(void **state) {
  char data[1000];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (char)i;
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 10), 0);
  assert_int_equal(cr_outcap_feed(&c, data, sizeof data), 5);
  assert_int_equal(cr_outcap_dropped(&c), 990);
  size_t want_len;
  char *want = naive_render(data, sizeof data, 10, &want_len);
  assert_render(&c, want, want_len);
  free(want);
  size_t len;
  char *t = cr_outcap_tail(&c, &len);
  assert_int_equal(len, 5);
  assert_memory_equal(t, data + 995, 5);
  free(t);
  cr_outcap_free(&c);
}

static void test_cap_2_and_odd_cap(void **state) {
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 2), 0);
  assert_int_equal(cr_outcap_feed(&c, "ab", 2), 1);
  assert_render(&c, "ab", 2);
  assert_int_equal(cr_outcap_feed(&c, "cd", 2), 0);
  const char *w = "a\n[... corral: 2 bytes dropped ...]\nd";
  assert_render(&c, w, strlen(w));
  cr_outcap_free(&c);

  /* Odd cap: the tail gets the extra byte. */
  assert_int_equal(cr_outcap_init(&c, 3), 0);
  assert_int_equal(c.tail_cap, 2);
  assert_int_equal(cr_outcap_feed(&c, "abcdef", 6), 1);
  w = "a\n[... corral: 3 bytes dropped ...]\nef";
  assert_render(&c, w, strlen(w));
  cr_outcap_free(&c);
}

/* feed() reports how many leading bytes of each chunk are in the first cap/2
 * bytes of the stream: exactly what a live view may forward at once. */
static void test_feed_return_values(void **state) {
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 10), 0);
  assert_int_equal(cr_outcap_feed(&c, "abc", 3), 3);
  assert_int_equal(cr_outcap_feed(&c, "defg", 4), 2);
  assert_int_equal(cr_outcap_feed(&c, "hij", 3), 0);
  assert_int_equal(cr_outcap_feed(&c, "", 0), 0);
  assert_int_equal(cr_outcap_feed(&c, "klmno", 5), 0);
  assert_render(&c, "abcde\n[... corral: 5 bytes dropped ...]\nklmno",
                strlen("abcde\n[... corral: 5 bytes dropped ...]\nklmno"));
  cr_outcap_free(&c);
}

static void test_nul_bytes_kept(void **state) {
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, 8), 0);
  assert_int_equal(cr_outcap_feed(&c, "a\0b\0", 4), 4);
  assert_render(&c, "a\0b\0", 4);
  assert_int_equal(cr_outcap_feed(&c, "\0\0\0\0\0x\0y", 8), 0);
  const char w[] = "a\0b\0\n[... corral: 4 bytes dropped ...]\n\0x\0y";
  assert_render(&c, w, sizeof w - 1);
  cr_outcap_free(&c);
}

/* Feeding one byte at a time and feeding one chunk give the same result. */
static void test_bytewise_equals_one_chunk(void **state) {
  const size_t caps[] = {2, 3, 7, 64, 1000};
  const size_t n = 5000;
  char *data = malloc(n);
  assert_non_null(data);
  uint64_t seed = 42;
  for (size_t i = 0; i < n; i++)
    data[i] = (char)rng_next(&seed);
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
    for (size_t upto = 0; upto <= n; upto += (upto < 20 ? 1 : 997)) {
      cr_outcap a, b;
      assert_int_equal(cr_outcap_init(&a, caps[k]), 0);
      assert_int_equal(cr_outcap_init(&b, caps[k]), 0);
      long fa = 0;
      for (size_t i = 0; i < upto; i++)
        fa += cr_outcap_feed(&a, data + i, 1);
      long fb = cr_outcap_feed(&b, data, upto);
      assert_int_equal(fa, fb);
      size_t la, lb;
      char *ra = cr_outcap_render(&a, &la), *rb = cr_outcap_render(&b, &lb);
      assert_int_equal(la, lb);
      assert_memory_equal(ra, rb, la);
      free(ra);
      free(rb);
      ra = cr_outcap_tail(&a, &la);
      rb = cr_outcap_tail(&b, &lb);
      assert_int_equal(la, lb);
      assert_memory_equal(ra, rb, la);
      free(ra);
      free(rb);
      cr_outcap_free(&a);
      cr_outcap_free(&b);
    }
  }
  free(data);
}

/* Random chunk sizes against the naive reference, for many caps and lengths,
 * checking after every chunk (render, tail, dropped and the head count). */
static void test_random_chunking_matches_reference(void **state) {
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  const size_t caps[] = {2, 3, 4, 5, 16, 17, 255, 256, 257, 1000, 4096};
  for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
    size_t cap = caps[k];
    for (int round = 0; round < 20; round++) {
      size_t total = (size_t)(rng_next(&seed) % (3 * cap + 50));
      char *all = malloc(total + 1);
      assert_non_null(all);
      for (size_t i = 0; i < total; i++)
        all[i] = (char)rng_next(&seed);
      cr_outcap c;
      assert_int_equal(cr_outcap_init(&c, cap), 0);
      size_t off = 0;
      while (off < total) {
        size_t maxc = rng_next(&seed) % 4 == 0 ? 2 * cap + 3 : 9;
        size_t n = (size_t)(rng_next(&seed) % (maxc + 1));
        if (n > total - off)
          n = total - off;
        size_t head_room = off < cap / 2 ? cap / 2 - off : 0;
        long want_fwd = (long)(n < head_room ? n : head_room);
        assert_int_equal(cr_outcap_feed(&c, all + off, n), want_fwd);
        off += n;

        size_t wl, gl;
        char *want = naive_render(all, off, cap, &wl);
        char *got = cr_outcap_render(&c, &gl);
        assert_non_null(got);
        assert_int_equal(gl, wl);
        assert_memory_equal(got, want, wl);
        free(want);
        free(got);
        assert_int_equal(cr_outcap_truncated(&c), off > cap);
        assert_int_equal(cr_outcap_dropped(&c), off > cap ? off - cap : 0);
        char *t = cr_outcap_tail(&c, &gl);
        size_t tl = off > cap ? cap - cap / 2 : off;
        assert_int_equal(gl, tl);
        assert_memory_equal(t, all + off - tl, tl);
        free(t);
        assert_true(c.head.cap <= cap + 1);
      }
      free(all);
      cr_outcap_free(&c);
    }
  }
}

/* A 1 MiB cap: 3 MiB fed in odd-sized chunks keeps the right bytes, and the
 * buffer stays within cap + 1 bytes. */
static void test_cap_1mib(void **state) {
  const size_t cap = 1u << 20, total = 3u << 20;
  char *all = malloc(total);
  assert_non_null(all);
  uint64_t seed = 7;
  for (size_t i = 0; i < total; i++)
    all[i] = (char)(rng_next(&seed) >> 24);
  cr_outcap c;
  assert_int_equal(cr_outcap_init(&c, cap), 0);
  size_t off = 0, step = 1;
  while (off < total) {
    size_t n = step < total - off ? step : total - off;
    assert_true(cr_outcap_feed(&c, all + off, n) >= 0);
    off += n;
    step = step * 3 + 1;
    if (step > 700000)
      step = 1;
  }
  assert_true(c.head.cap <= cap + 1);
  size_t wl, gl;
  char *want = naive_render(all, total, cap, &wl);
  char *got = cr_outcap_render(&c, &gl);
  assert_int_equal(gl, wl);
  assert_memory_equal(got, want, wl);
  free(want);
  free(got);
  free(all);
  cr_outcap_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_output_verbatim),
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_init_rejects_tiny_cap),
      cmocka_unit_test(test_exactly_cap_is_verbatim),
      cmocka_unit_test(test_flood_10mb_cap_1k),
      cmocka_unit_test(test_last_line_of_flood_survives),
      cmocka_unit_test(test_chunk_larger_than_cap),
      cmocka_unit_test(test_cap_2_and_odd_cap),
      cmocka_unit_test(test_feed_return_values),
      cmocka_unit_test(test_nul_bytes_kept),
      cmocka_unit_test(test_bytewise_equals_one_chunk),
      cmocka_unit_test(test_random_chunking_matches_reference),
      cmocka_unit_test(test_cap_1mib),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

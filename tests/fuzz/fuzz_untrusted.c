/* libFuzzer target for the code that reads what a sandboxed program wrote.
 *
 * The program is hostile, and everything it prints reaches these functions
 * in the supervisor: the output capture (head, tail, dropped count), the
 * UTF-8 repair that keeps the JSON valid, the error classification that reads
 * the tail of stderr, the expected-output comparison, base64 (rich results,
 * uploads) and the result writer with rich results the session driver passes
 * through. The first input byte picks the target; each target checks the
 * property the rest of corral relies on and aborts when it does not hold, so
 * a wrong answer is a finding too, not only a crash (AddressSanitizer and
 * UndefinedBehaviorSanitizer run alongside).
 *
 * Built by `meson setup build-fuzz -Dfuzz=true` with clang; `make fuzz` runs
 * it from the seeds in tests/fuzz/corpus. */
#include "exec/classify.h"
#include "exec/expect.h"
#include "exec/outcap.h"
#include "exec/result.h"
#include "util/base64.h"
#include "util/utf8.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "fuzz_untrusted: %s:%d: property failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                                      \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

/* The input as a C string (cut at its first NUL by the callee). */
static char *dup_z(const char *s, size_t n) {
  char *z = malloc(n + 1);
  CHECK(z);
  if (n)
    memcpy(z, s, n);
  z[n] = '\0';
  return z;
}

/* A second UTF-8 validator that shares nothing with src/util/utf8.c: it
 * decodes each sequence to its code point and then rejects what RFC 3629
 * forbids (overlong forms, surrogates, beyond U+10FFFF), where the code
 * under test checks byte ranges up front. cr_utf8_valid alone cannot judge
 * cr_utf8_sanitize: both use the same seq_len(), so a wrong range there
 * (surrogates let through, say) passes both and reaches a JSON writer. */
static bool ref_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned char b = s[i];
    size_t len;
    uint32_t cp, min;
    if (b < 0x80) {
      i++;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, cp = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, cp = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, cp = b & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (n - i < len)
      return false;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

/* What reaches a client is a jansson string: jansson validates UTF-8 with
 * its own code and refuses (NULL) what it would not write. */
static bool jansson_accepts(const char *s, size_t n) {
  json_t *j = json_stringn(s, n);
  json_decref(j);
  return j != NULL;
}

static void fuzz_utf8(const char *s, size_t n) {
  size_t m = 0;
  char *t = cr_utf8_sanitize(s, n, &m);
  CHECK(t != NULL);
  CHECK(cr_utf8_valid(t, m));
  CHECK(ref_utf8_valid(t, m));
  CHECK(jansson_accepts(t, m));
  /* The validator the result writer trusts agrees with both others. */
  bool v = cr_utf8_valid(s, n);
  CHECK(v == ref_utf8_valid(s, n));
  CHECK(v == jansson_accepts(s, n));
  if (v)
    CHECK(m == n && memcmp(s, t, n) == 0);
  free(t);
}

/* The stream arrives in reads of any size; the cap is small so that the
 * input overflows it. */
static void fuzz_outcap(const char *s, size_t n) {
  if (n < 2)
    return;
  size_t cap = 2 + (unsigned char)s[0] % 64;
  size_t chunk = 1 + (unsigned char)s[1] % 17;
  s += 2;
  n -= 2;
  cr_outcap c;
  CHECK(cr_outcap_init(&c, cap) == 0);
  size_t forwarded = 0;
  for (size_t off = 0; off < n; off += chunk) {
    size_t k = n - off < chunk ? n - off : chunk;
    long head = cr_outcap_feed(&c, s + off, k);
    CHECK(head >= 0 && (size_t)head <= k);
    forwarded += (size_t)head;
  }
  CHECK(c.total == n);
  /* What a live stream forwards as it comes is the head: the first cap/2
   * bytes, never more, never a byte twice. */
  CHECK(forwarded == (n < cap / 2 ? n : cap / 2));
  size_t rl = 0, tl = 0;
  char *r = cr_outcap_render(&c, &rl);
  char *t = cr_outcap_tail(&c, &tl);
  CHECK(r && t);
  if (!cr_outcap_truncated(&c)) {
    /* Everything kept, in order, nothing counted as dropped. */
    CHECK(cr_outcap_dropped(&c) == 0);
    CHECK(rl == n && memcmp(r, s, n) == 0);
  } else {
    /* Kept + dropped is all of it; the head is a prefix; the tail is the
     * very end of the stream. */
    CHECK(cr_outcap_dropped(&c) + c.head.len + c.ring_len == n);
    CHECK(memcmp(r, s, c.head.len) == 0);
    CHECK(tl <= n && memcmp(t, s + n - tl, tl) == 0);
    CHECK(rl >= c.head.len + tl && memcmp(r + rl - tl, t, tl) == 0);
  }
  free(r);
  free(t);
  cr_outcap_free(&c);
}

static void fuzz_classify(const char *s, size_t n) {
  if (n < 2)
    return;
  static const char *const langs[] = {"python", "node", "bash"};
  cr_classify_input in = {.language = langs[(unsigned char)s[0] % 3],
                          .err_text = s + 2,
                          .err_len = n - 2,
                          .installed = "numpy, pandas"};
  if (s[1] & 1)
    in.signal = (unsigned char)s[1] >> 1;
  else
    in.exit_code = (unsigned char)s[1] >> 1;
  cr_error_info e;
  memset(&e, 0, sizeof e);
  CHECK(cr_classify(&in, &e) == 0);
  /* Always something a model can read, and valid in JSON. */
  CHECK(e.category != CR_CAT_NONE);
  CHECK(e.name && e.message && e.hint);
  CHECK(cr_utf8_valid(e.name, strlen(e.name)));
  CHECK(cr_utf8_valid(e.message, strlen(e.message)));
  CHECK(cr_utf8_valid(e.hint, strlen(e.hint)));
  cr_error_info_free(&e);
}

/* The comparison as the judges' rule states it, line lists at once, as a
 * reference for the streaming one: strip blank space and newlines from the
 * end of both texts, split on newlines, right-strip each line, compare. */
static bool ref_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

static size_t ref_lines(const char *t, size_t n, const char **ls, size_t *ll, size_t max) {
  while (n > 0 && (t[n - 1] == '\n' || ref_blank(t[n - 1])))
    n--;
  if (n == 0)
    return 0;
  size_t k = 0, start = 0;
  for (size_t i = 0; i <= n && k < max; i++)
    if (i == n || t[i] == '\n') {
      size_t e = i;
      while (e > start && ref_blank(t[e - 1]))
        e--;
      ls[k] = t + start;
      ll[k++] = e - start;
      start = i + 1;
    }
  return k;
}

static bool ref_match(const char *out, size_t on, const char *exp, size_t en, size_t *line) {
  static const char *la[4097], *le[4097];
  static size_t lla[4097], lle[4097];
  size_t na = ref_lines(out, on, la, lla, 4097), ne = ref_lines(exp, en, le, lle, 4097);
  for (size_t i = 0;; i++) {
    if (i >= na && i >= ne)
      return true;
    if (i < na && i < ne && lla[i] == lle[i] && (lla[i] == 0 || memcmp(la[i], le[i], lla[i]) == 0))
      continue;
    *line = i + 1;
    return false;
  }
}

static void fuzz_expect(const char *s, size_t n) {
  /* The program's output against itself always matches, also with
   * trailing blanks added to the expected text. */
  CHECK(cr_expect_match(s, n, s, n, NULL));
  char *padded = malloc(n + 3);
  CHECK(padded);
  if (n)
    memcpy(padded, s, n);
  memcpy(padded + n, " \n\n", 3);
  CHECK(cr_expect_match(s, n, padded, n + 3, NULL));
  /* Fed as a stream in chunks of any size, the verdict and the diff are
   * those of the whole text at once. */
  if (n >= 2) {
    size_t split = (unsigned char)s[0] % n, step = 1 + (unsigned char)s[1] % 7;
    cr_expect_diff whole, streamed;
    memset(&whole, 0, sizeof whole);
    memset(&streamed, 0, sizeof streamed);
    bool w = cr_expect_match(s + split, n - split, s, split, &whole);
    cr_expect_stream es;
    cr_expect_stream_init(&es, s, split);
    for (size_t off = split; off < n; off += step)
      cr_expect_stream_feed(&es, s + off, n - off < step ? n - off : step);
    bool st = cr_expect_stream_end(&es, &streamed);
    CHECK(w == st);
    if (!w)
      CHECK(memcmp(&whole, &streamed, sizeof whole) == 0);
    size_t rl = 0;
    bool r = ref_match(s + split, n - split, s, split, &rl);
    CHECK(r == w);
    if (!r)
      CHECK(rl == whole.line);
  }
  /* Two halves compared either way: no crash, and symmetric. */
  size_t h = n / 2;
  cr_expect_diff d1, d2;
  bool a = cr_expect_match(s, h, s + h, n - h, &d1);
  bool b = cr_expect_match(s + h, n - h, s, h, &d2);
  CHECK(a == b);
  free(padded);
  char *z = dup_z(s, n);
  size_t ul = 0;
  char *u = cr_unescape(z, &ul);
  CHECK(u && ul <= strlen(z));
  free(u);
  free(z);
}

static void fuzz_base64(const char *s, size_t n) {
  char *enc = cr_b64_encode(s, n);
  CHECK(enc);
  size_t m = 0;
  unsigned char *dec = cr_b64_decode(enc, &m);
  CHECK(dec && m == n && (n == 0 || memcmp(dec, s, n) == 0));
  free(dec);
  free(enc);
  /* Arbitrary text: decodes or is refused, never more bytes than it could
   * hold. */
  char *z = dup_z(s, n);
  unsigned char *any = cr_b64_decode(z, &m);
  if (any)
    CHECK(m <= strlen(z) / 4 * 3 + 3);
  free(any);
  free(z);
}

/* The result as every front end writes it: streams with any bytes, an error
 * built from them, and a rich result the driver sent (any JSON object). */
static void fuzz_result(const char *s, size_t n) {
  cr_result r;
  cr_result_init(&r);
  size_t h = n / 2;
  r.status = CR_ST_ERROR;
  r.exited = true;
  r.exit_code = 1;
  r.out = malloc(h + 1);
  r.err = malloc(n - h + 1);
  CHECK(r.out && r.err);
  memcpy(r.out, s, h);
  memcpy(r.err, s + h, n - h);
  r.out_len = h;
  r.err_len = n - h;
  r.language = strdup("python");
  cr_classify_input in = {.language = "python", .err_text = r.err, .err_len = r.err_len,
                          .exit_code = 1};
  CHECK(cr_classify(&in, &r.error) == 0);
  r.has_error = true;
  json_t *mime = json_loadb(s, n, JSON_DISABLE_EOF_CHECK, NULL);
  if (json_is_object(mime)) {
    r.results = malloc(sizeof *r.results);
    CHECK(r.results);
    r.results[0] = (cr_rich){.mime = mime, .main = true};
    r.nresults = 1;
  } else {
    json_decref(mime);
  }
  json_t *j = cr_result_to_json(&r);
  CHECK(j);
  char *text = json_dumps(j, JSON_COMPACT);
  CHECK(text);
  /* Valid JSON (NUL bytes travel as \u0000, which jansson reads only when
   * asked to). */
  json_t *back = json_loads(text, JSON_ALLOW_NUL, NULL);
  CHECK(back != NULL);
  /* Valid JSON alone proves nothing: jansson refuses invalid UTF-8 by
   * returning NULL, and json_object_set_new() with a NULL value drops the
   * key without a word, so a sanitizer that lets a bad byte through yields
   * valid JSON without "stdout". The streams and the error message must be
   * there, as strings, and a stream that was valid UTF-8 must be unchanged. */
  json_t *out = json_object_get(back, "stdout"), *err = json_object_get(back, "stderr");
  CHECK(json_is_string(out));
  CHECK(json_is_string(err));
  if (ref_utf8_valid(s, h))
    CHECK(json_string_length(out) == h && memcmp(json_string_value(out), s, h) == 0);
  if (ref_utf8_valid(s + h, n - h))
    CHECK(json_string_length(err) == n - h && memcmp(json_string_value(err), s + h, n - h) == 0);
  json_t *error = json_object_get(back, "error");
  CHECK(json_is_object(error));
  if (r.error.message)
    CHECK(json_is_string(json_object_get(error, "message")));
  if (r.error.name)
    CHECK(json_is_string(json_object_get(error, "name")));
  json_decref(back);
  free(text);
  json_decref(j);
  cr_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *s = (const char *)data + 1;
  size_t n = size - 1;
  switch (data[0] % 6) {
  case 0: fuzz_utf8(s, n); break;
  case 1: fuzz_outcap(s, n); break;
  case 2: fuzz_classify(s, n); break;
  case 3: fuzz_expect(s, n); break;
  case 4: fuzz_base64(s, n); break;
  default: fuzz_result(s, n); break;
  }
  return 0;
}

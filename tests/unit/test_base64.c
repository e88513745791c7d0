/* Base64 both ways, against known vectors (RFC 4648 section 10). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

static void test_vectors(void **state) {
  (void)state;
  static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  static const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  for (int i = 0; i < 7; i++) {
    char *e = cr_b64_encode(plain[i], strlen(plain[i]));
    assert_string_equal(e, coded[i]);
    free(e);
    size_t n;
    unsigned char *d = cr_b64_decode(coded[i], &n);
    assert_int_equal(n, strlen(plain[i]));
    assert_memory_equal(d, plain[i], n);
    free(d);
  }
}

static void test_binary_and_bad_input(void **state) {
  (void)state;
  unsigned char all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (unsigned char)i;
  char *e = cr_b64_encode(all, sizeof all);
  size_t n;
  unsigned char *d = cr_b64_decode(e, &n);
  assert_int_equal(n, 256);
  assert_memory_equal(d, all, 256);
  free(d);
  free(e);
  d = cr_b64_decode("Zm9v\nYmFy", &n); /* line breaks are fine */
  assert_int_equal(n, 6);
  assert_memory_equal(d, "foobar", 6);
  free(d);
  assert_null(cr_b64_decode("Zm9v!", &n));
  d = cr_b64_decode("-_-_", &n); /* URL-safe alphabet */
  assert_non_null(d);
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors),
      cmocka_unit_test(test_binary_and_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

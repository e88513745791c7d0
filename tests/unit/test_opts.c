/* Option parsing of `corral run`: values, defaults, and the errors a user
 * sees for bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cli/cli.h"

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})
#define ARGC(a) ((int)(sizeof(a) / sizeof(char *)) - 1)

static int parse(char **argv, int argc, cr_run_opts *o, cr_err *e) {
  return cr_cli_parse_run(argc, argv, o, e);
}

static void test_defaults(void **state) {
  (void)state;
  char *a[] = {"run", "-c", "print(1)", NULL};
  cr_run_opts o;
  cr_err e = {0};
  assert_int_equal(parse(a, 3, &o, &e), 0);
  assert_string_equal(o.code, "print(1)");
  assert_null(o.lang);
  assert_false(o.json);
  assert_true(o.timeout_s == 30.0);
  assert_int_equal(o.memory_bytes, 256ull << 20);
  assert_int_equal(o.output_limit, 1u << 20);
  assert_int_equal(o.output_max, 64u << 20);
  assert_int_equal(o.pids, 128);
}

static void test_values(void **state) {
  (void)state;
  char f1[] = "data.csv", f2[] = "/tmp/x.txt:in/y.txt";
  char *a[] = {"run", "--json", "--lang", "node", "-t", "2.5", "--memory", "64", "--cpu", "1",
               "--pids", "10", "--disk", "8", "--output-limit", "100", "--output-max", "1000",
               "--stdin", "in.txt", "-f", f1, "--file", f2, "-o", "outd", "--expect", "45\\n",
               "-e", "A=1", "--env", "B=2", "script.js", NULL};
  cr_run_opts o;
  cr_err e = {0};
  assert_int_equal(parse(a, (int)(sizeof a / sizeof *a) - 1, &o, &e), 0);
  assert_true(o.json);
  assert_string_equal(o.lang, "node");
  assert_true(o.timeout_s == 2.5);
  assert_int_equal(o.memory_bytes, 64ull << 20);
  assert_true(o.cpu_s == 1.0);
  assert_int_equal(o.pids, 10);
  assert_int_equal(o.disk_bytes, 8ull << 20);
  assert_int_equal(o.output_limit, 100);
  assert_int_equal(o.output_max, 1000);
  assert_string_equal(o.stdin_path, "in.txt");
  assert_int_equal(o.nfiles, 2);
  assert_string_equal(o.file_src[0], "data.csv");
  assert_string_equal(o.file_dst[0], "data.csv");
  assert_string_equal(o.file_src[1], "/tmp/x.txt");
  assert_string_equal(o.file_dst[1], "in/y.txt");
  assert_string_equal(o.out_dir, "outd");
  assert_string_equal(o.expect, "45\\n");
  assert_int_equal(o.nenv, 2);
  assert_string_equal(o.env[1], "B=2");
  assert_string_equal(o.path, "script.js");
}

static void expect_error(char **a, int n, const char *needle) {
  cr_run_opts o;
  cr_err e = {0};
  assert_int_equal(parse(a, n, &o, &e), -1);
  if (!strstr(e.msg, needle))
    fail_msg("error '%s' does not mention '%s'", e.msg, needle);
}

static void test_errors(void **state) {
  (void)state;
  char *a1[] = {"run", "--timeout", "abc", "-c", "x", NULL};
  expect_error(a1, 5, "--timeout 'abc'");
  char *a2[] = {"run", "--bogus", "-c", "x", NULL};
  expect_error(a2, 4, "unknown option '--bogus'");
  char *a3[] = {"run", NULL};
  expect_error(a3, 1, "no program");
  char *a4[] = {"run", "-c", "x", "file.py", NULL};
  expect_error(a4, 4, "choose one");
  char *a5[] = {"run", "--memory", "-5", "-c", "x", NULL};
  expect_error(a5, 5, "--memory");
  char *a6[] = {"run", "-e", "NOEQUALS", "-c", "x", NULL};
  expect_error(a6, 5, "KEY=VALUE");
  char *a7[] = {"run", "-c", NULL};
  expect_error(a7, 2, "needs a value");
  char *a8[] = {"run", "--timeout", "0", "-c", "x", NULL};
  expect_error(a8, 5, "above 0");
  char *a9[] = {"run", "--stdin", "-", "-", NULL};
  expect_error(a9, 4, "--stdin -");
  /* strtoull skips blanks and takes a sign: " -5" must not become 2^64-5 */
  char *a10[] = {"run", "--output-max", " -5", "-c", "x", NULL};
  expect_error(a10, 5, "--output-max ' -5'");
  char *a11[] = {"run", "--pids", "+7", "-c", "x", NULL};
  expect_error(a11, 5, "--pids");
  char *a12[] = {"run", "-c", "x", "-c", "y", NULL};
  expect_error(a12, 5, "given twice");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

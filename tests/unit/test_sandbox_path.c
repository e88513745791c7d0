/* Which workspace paths a caller may name: the only gate between a file
 * name from a request and a path the supervisor creates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/runtime.h"
#include "sandbox/sandbox.h"

static void test_paths(void **state) {
  (void)state;
  assert_true(cr_sb_path_ok("a.csv"));
  assert_true(cr_sb_path_ok("data/x.csv"));
  assert_true(cr_sb_path_ok(".hidden"));
  assert_true(cr_sb_path_ok("a..b"));
  assert_false(cr_sb_path_ok(""));
  assert_false(cr_sb_path_ok(NULL));
  assert_false(cr_sb_path_ok("/etc/passwd"));
  assert_false(cr_sb_path_ok(".."));
  assert_false(cr_sb_path_ok("../x"));
  assert_false(cr_sb_path_ok("a/../../x"));
  assert_false(cr_sb_path_ok("a/./b"));
  assert_false(cr_sb_path_ok("a//b"));
  assert_false(cr_sb_path_ok("a/"));
  char deep[200] = "";
  for (int i = 0; i < 33; i++)
    strcat(deep, "d/");
  strcat(deep, "f");
  assert_false(cr_sb_path_ok(deep));
  char longname[300];
  memset(longname, 'x', 299);
  longname[299] = '\0';
  assert_false(cr_sb_path_ok(longname));
}

static void test_runtimes(void **state) {
  (void)state;
  assert_string_equal(cr_runtime_find("py")->name, "python");
  assert_string_equal(cr_runtime_find("JavaScript")->name, "node");
  assert_string_equal(cr_runtime_find("sh")->name, "bash");
  assert_null(cr_runtime_find("cobol"));
  assert_string_equal(cr_runtime_for_file("dir/x.mjs")->name, "node");
  assert_string_equal(cr_runtime_for_file("run.sh")->name, "bash");
  assert_null(cr_runtime_for_file("README"));
  assert_null(cr_runtime_for_file("a.b/c"));
  const cr_runtime *js = cr_runtime_find("node");
  const char *esm = "import fs from 'fs';\nconsole.log(1)";
  const char *cjs = "const fs = require('fs');\n// import x\nconsole.log(1)";
  assert_string_equal(cr_runtime_code_name(js, esm, strlen(esm)), "main.mjs");
  assert_string_equal(cr_runtime_code_name(js, cjs, strlen(cjs)), "main.js");
  assert_string_equal(cr_runtime_code_name(cr_runtime_find("python"), "", 0), "main.py");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths),
      cmocka_unit_test(test_runtimes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The result JSON: field names and types of DESIGN.md section 3, and
 * program output that is not valid UTF-8 or holds NULs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "exec/result.h"

static void test_shape(void **state) {
  (void)state;
  cr_result r;
  cr_result_init(&r);
  r.status = CR_ST_ERROR;
  r.exited = true;
  r.exit_code = 1;
  r.out = strdup("hi\n");
  r.out_len = 3;
  static const char bad[] = "a\xff\xfe" "b\0c";
  r.err = malloc(sizeof bad - 1);
  memcpy(r.err, bad, sizeof bad - 1);
  r.err_len = sizeof bad - 1;
  r.duration_ms = 12.345;
  r.memory_peak_bytes = 1234;
  r.has_error = true;
  r.error.category = CR_CAT_MODULE;
  r.error.name = strdup("ModuleNotFoundError");
  r.error.message = strdup("No module named 'sympy'");
  r.error.retryable = true;
  r.error.hint = strdup("use numpy");
  r.nfiles = 1;
  r.files = calloc(1, sizeof *r.files);
  r.files[0].path = strdup("out/c.png");
  r.files[0].size = 20;
  r.files[0].change = CR_FILE_CREATED;
  r.enforced_by = "cgroup-v1";
  r.timeout_s = 30;

  json_t *j = cr_result_to_json(&r);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "status")), "error");
  assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 1);
  assert_true(json_is_null(json_object_get(j, "signal")));
  assert_string_equal(json_string_value(json_object_get(j, "stdout")), "hi\n");
  json_t *se = json_object_get(j, "stderr");
  /* invalid bytes become U+FFFD, the NUL survives inside the string */
  assert_int_equal(json_string_length(se), 1 + 3 + 3 + 1 + 1 + 1);
  assert_memory_equal(json_string_value(se), "a\xef\xbf\xbd\xef\xbf\xbd" "b\0c", 10);
  assert_false(json_boolean_value(json_object_get(j, "stdout_truncated")));
  assert_true(json_is_real(json_object_get(j, "duration_ms")));
  json_t *e = json_object_get(j, "error");
  assert_string_equal(json_string_value(json_object_get(e, "category")), "module_not_found");
  assert_true(json_is_true(json_object_get(e, "retryable")));
  json_t *f = json_array_get(json_object_get(j, "files"), 0);
  assert_string_equal(json_string_value(json_object_get(f, "change")), "created");
  assert_true(json_is_array(json_object_get(j, "results")));
  json_t *l = json_object_get(j, "limits");
  assert_string_equal(json_string_value(json_object_get(l, "enforced_by")), "cgroup-v1");
  /* The whole thing serialises (jansson refuses invalid UTF-8). */
  char *s = json_dumps(j, JSON_COMPACT);
  assert_non_null(s);
  assert_non_null(strstr(s, "\\u0000"));
  free(s);
  json_decref(j);
  cr_result_free(&r);
}

static void test_statuses(void **state) {
  (void)state;
  assert_string_equal(cr_status_name(CR_ST_OK), "ok");
  assert_string_equal(cr_status_name(CR_ST_MEMORY), "memory_limit");
  assert_string_equal(cr_status_name(CR_ST_OUTPUT), "output_limit");
  assert_string_equal(cr_status_name(CR_ST_WRONG), "wrong_answer");
  assert_string_equal(cr_status_name(CR_ST_SANDBOX), "sandbox_error");
  cr_result r;
  cr_result_init(&r);
  r.status = CR_ST_TIMEOUT;
  json_t *j = cr_result_to_json(&r);
  assert_true(json_is_null(json_object_get(j, "exit_code")));
  assert_true(json_is_null(json_object_get(j, "error")));
  assert_string_equal(json_string_value(json_object_get(j, "stdout")), "");
  json_decref(j);
  cr_result_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape),
      cmocka_unit_test(test_statuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

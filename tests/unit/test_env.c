/* The sandbox environment: built from nothing, caller's entries win, the
 * host's never appear. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/env.h"

static const char *get(char **env, const char *key) {
  size_t kl = strlen(key);
  const char *found = NULL;
  for (char **e = env; *e; e++)
    if (strncmp(*e, key, kl) == 0 && (*e)[kl] == '=') {
      if (found)
        fail_msg("%s appears twice", key);
      found = *e + kl + 1;
    }
  return found;
}

static void test_base_and_host(void **state) {
  (void)state;
  setenv("CORRAL_UNIT_SECRET", "s3cret", 1);
  char **env = cr_env_build(NULL, false);
  assert_string_equal(get(env, "HOME"), "/workspace");
  assert_string_equal(get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
  assert_string_equal(get(env, "MPLBACKEND"), "Agg");
  assert_null(get(env, "CORRAL_SESSION"));
  assert_null(get(env, "CORRAL_UNIT_SECRET"));
  for (char **e = env; *e; e++)
    assert_null(strstr(*e, "s3cret"));
  cr_env_free(env);
  env = cr_env_build(NULL, true);
  assert_string_equal(get(env, "CORRAL_SESSION"), "1");
  assert_null(get(env, "MPLBACKEND"));
  cr_env_free(env);
}

static void test_caller_wins(void **state) {
  (void)state;
  const char *extra[] = {"HOME=/tmp", "A=1", "A=2", "B=x=y", "PATHX=1", NULL};
  char **env = cr_env_build(extra, false);
  assert_string_equal(get(env, "HOME"), "/tmp");
  assert_string_equal(get(env, "A"), "2");
  assert_string_equal(get(env, "B"), "x=y");
  assert_string_equal(get(env, "PATHX"), "1");
  assert_string_equal(get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
  cr_env_free(env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base_and_host),
      cmocka_unit_test(test_caller_wins),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

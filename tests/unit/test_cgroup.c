/* The memory limit files of a sandbox's cgroup, written into a directory
 * of the test's own that stands in for the cgroup: a wall that cannot be
 * set must fail the setup, and only a kernel without socket-buffer
 * accounting (the file is missing) may go without, and say so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "read_file.h"

#define LIMIT (64ull << 20)

typedef struct fake {
  char dir[64];
} fake;

static void touch(const fake *f, const char *name) {
  char p[200];
  snprintf(p, sizeof p, "%s/%s", f->dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  assert_true(fd >= 0);
  close(fd);
}

/* A directory where the kernel would have a file: open(O_WRONLY) fails
 * with EISDIR, a failure that is not "this kernel has no such file". */
static void blocker(const fake *f, const char *name) {
  char p[200];
  snprintf(p, sizeof p, "%s/%s", f->dir, name);
  assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state) {
  fake *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/corral-test-cg-XXXXXX");
  if (!mkdtemp(f->dir))
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fake *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  int rc = system(cmd);
  free(f);
  return rc == 0 ? 0 : -1;
}

static void test_v1_all_set(void **state) {
  fake *f = *state;
  touch(f, "memory.limit_in_bytes");
  touch(f, "memory.memsw.limit_in_bytes");
  touch(f, "memory.kmem.tcp.limit_in_bytes");
  bool unacc = true;
  cr_err err = {0};
  assert_int_equal(cr_cg_limit_memory(f->dir, CR_CG_V1, true, LIMIT, &unacc, &err), 0);
  assert_false(unacc);
  char buf[64];
  read_file_in(f->dir, "memory.limit_in_bytes", buf, sizeof buf);
  assert_string_equal(buf, "67108864");
  read_file_in(f->dir, "memory.memsw.limit_in_bytes", buf, sizeof buf);
  assert_string_equal(buf, "67108864");
  read_file_in(f->dir, "memory.kmem.tcp.limit_in_bytes", buf, sizeof buf);
  assert_string_equal(buf, "16777216");
}

static void test_v1_tcp_unwritable_fails(void **state) {
  fake *f = *state;
  touch(f, "memory.limit_in_bytes");
  touch(f, "memory.memsw.limit_in_bytes");
  blocker(f, "memory.kmem.tcp.limit_in_bytes");
  bool unacc = false;
  cr_err err = {0};
  assert_true(cr_cg_limit_memory(f->dir, CR_CG_V1, true, LIMIT, &unacc, &err) < 0);
  assert_int_equal(err.errnum, EISDIR);
  assert_non_null(strstr(err.msg, "memory.kmem.tcp.limit_in_bytes"));
  assert_non_null(strstr(err.msg, f->dir));
}

static void test_v1_tcp_missing_is_reported(void **state) {
  fake *f = *state;
  touch(f, "memory.limit_in_bytes");
  bool unacc = false;
  cr_err err = {0};
  assert_int_equal(cr_cg_limit_memory(f->dir, CR_CG_V1, false, LIMIT, &unacc, &err), 0);
  assert_true(unacc);
  char buf[64];
  read_file_in(f->dir, "memory.limit_in_bytes", buf, sizeof buf);
  assert_string_equal(buf, "67108864");
}

static void test_v1_limit_unwritable_fails(void **state) {
  fake *f = *state;
  blocker(f, "memory.limit_in_bytes");
  touch(f, "memory.kmem.tcp.limit_in_bytes");
  bool unacc = false;
  cr_err err = {0};
  assert_true(cr_cg_limit_memory(f->dir, CR_CG_V1, false, LIMIT, &unacc, &err) < 0);
  assert_non_null(strstr(err.msg, "memory.limit_in_bytes"));
}

static void test_v2_swap_unwritable_fails(void **state) {
  fake *f = *state;
  touch(f, "memory.max");
  blocker(f, "memory.swap.max");
  bool unacc = false;
  cr_err err = {0};
  assert_true(cr_cg_limit_memory(f->dir, CR_CG_V2, true, LIMIT, &unacc, &err) < 0);
  assert_non_null(strstr(err.msg, "memory.swap.max"));
  /* without swap accounting there is no file to write, and no failure */
  err = (cr_err){0};
  assert_int_equal(cr_cg_limit_memory(f->dir, CR_CG_V2, false, LIMIT, &unacc, &err), 0);
  char buf[64];
  read_file_in(f->dir, "memory.max", buf, sizeof buf);
  assert_string_equal(buf, "67108864");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_v1_all_set, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v1_tcp_unwritable_fails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v1_tcp_missing_is_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v1_limit_unwritable_fails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v2_swap_unwritable_fails, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

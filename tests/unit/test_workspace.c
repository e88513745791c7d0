/* Copying a run's files out (--out), against directories of the test's
 * own standing in for /workspace and the host's output directory. */
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

#include "exec/workspace.h"
#include "read_file.h"

typedef struct dirs {
  char top[64];
  char ws[96], out[96], link[96];
  int ws_fd;
} dirs;

static void put(const char *dir, const char *name, const char *text, mode_t mode) {
  char p[200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  assert_int_equal(fchmod(fd, mode), 0);
  close(fd);
}

static int setup(void **state) {
  dirs *d = calloc(1, sizeof *d);
  snprintf(d->top, sizeof d->top, "/tmp/corral-test-ws-XXXXXX");
  if (!mkdtemp(d->top))
    return -1;
  snprintf(d->ws, sizeof d->ws, "%s/ws", d->top);
  snprintf(d->out, sizeof d->out, "%s/out", d->top);
  snprintf(d->link, sizeof d->link, "%s/link", d->top);
  if (mkdir(d->ws, 0755) < 0)
    return -1;
  d->ws_fd = open(d->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  *state = d;
  return d->ws_fd < 0 ? -1 : 0;
}

static int teardown(void **state) {
  dirs *d = *state;
  close(d->ws_fd);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->top);
  int rc = system(cmd);
  free(d);
  return rc == 0 ? 0 : -1;
}

static void test_copies_without_exec_bits(void **state) {
  dirs *d = *state;
  put(d->ws, "build.sh", "echo hi\n", 0755);
  cr_file_entry f[] = {{.path = "build.sh", .size = 8, .change = CR_FILE_CREATED}};
  cr_result res = {.files = f, .nfiles = 1};
  cr_err err = {0};
  assert_int_equal(cr_ws_out_dir_check(d->out, &err), 0); /* new: made by the copy */
  assert_int_equal(cr_ws_copy_out(d->ws_fd, &res, d->out, 1 << 20, &err), 0);
  char buf[64];
  read_file_in(d->out, "build.sh", buf, sizeof buf);
  assert_string_equal(buf, "echo hi\n");
  char p[200];
  snprintf(p, sizeof p, "%s/build.sh", d->out);
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0644);
}

/* The copy never writes over a file, even one that appeared after its
 * emptiness check. A path listed twice stands in for that file (the first
 * copy made it): the second must fail with EEXIST, not replace it. */
static void test_never_writes_over_a_file(void **state) {
  dirs *d = *state;
  put(d->ws, "build.sh", "touch /tmp/pwned\n", 0644);
  cr_file_entry f[] = {{.path = "build.sh", .size = 17, .change = CR_FILE_CREATED},
                       {.path = "build.sh", .size = 17, .change = CR_FILE_CREATED}};
  cr_result res = {.files = f, .nfiles = 2};
  cr_err err = {0};
  assert_true(cr_ws_copy_out(d->ws_fd, &res, d->out, 1 << 20, &err) < 0);
  assert_int_equal(err.errnum, EEXIST);
}

static void test_refuses_non_empty(void **state) {
  dirs *d = *state;
  put(d->ws, "build.sh", "touch /tmp/pwned\n", 0644);
  assert_int_equal(mkdir(d->out, 0755), 0);
  put(d->out, "build.sh", "echo safe\n", 0755);
  cr_file_entry f[] = {{.path = "build.sh", .size = 17, .change = CR_FILE_CREATED}};
  cr_result res = {.files = f, .nfiles = 1};
  cr_err err = {0};
  assert_true(cr_ws_out_dir_check(d->out, &err) < 0);
  assert_non_null(strstr(err.msg, "not empty"));
  err = (cr_err){0};
  assert_true(cr_ws_copy_out(d->ws_fd, &res, d->out, 1 << 20, &err) < 0);
  assert_non_null(strstr(err.msg, "not empty"));
  char buf[64];
  read_file_in(d->out, "build.sh", buf, sizeof buf);
  assert_string_equal(buf, "echo safe\n");
}

/* A symlink to an empty directory: the check before the run and the copy
 * after it give the same answer (both refuse), so a run never happens only
 * to lose its files. */
static void test_symlinked_out_dir_refused_by_both(void **state) {
  dirs *d = *state;
  put(d->ws, "a.txt", "a\n", 0644);
  assert_int_equal(mkdir(d->out, 0755), 0);
  assert_int_equal(symlink(d->out, d->link), 0);
  cr_file_entry f[] = {{.path = "a.txt", .size = 2, .change = CR_FILE_CREATED}};
  cr_result res = {.files = f, .nfiles = 1};
  cr_err err = {0};
  assert_true(cr_ws_out_dir_check(d->link, &err) < 0);
  assert_non_null(strstr(err.msg, "symbolic link"));
  err = (cr_err){0};
  assert_true(cr_ws_copy_out(d->ws_fd, &res, d->link, 1 << 20, &err) < 0);
  assert_non_null(strstr(err.msg, "symbolic link"));
  char p[200];
  snprintf(p, sizeof p, "%s/a.txt", d->out);
  assert_int_equal(access(p, F_OK), -1);
  /* the directory itself is fine */
  assert_int_equal(cr_ws_out_dir_check(d->out, &err), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_copies_without_exec_bits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_never_writes_over_a_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_non_empty, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symlinked_out_dir_refused_by_both, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

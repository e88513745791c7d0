/* Unit tests for the installed-package inventory, on directory trees the
 * tests build under a fresh temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/inventory.h"

typedef struct tree {
  char root[64];
} tree;

/* root/rel into buf, failing the test rather than cutting a path short. */
static void join(char *buf, size_t size, const tree *t, const char *rel) {
  int n = snprintf(buf, size, "%s/%s", t->root, rel);
  assert_true(n > 0 && (size_t)n < size);
}

static int setup(void **state) {
  tree *t = calloc(1, sizeof *t);
  if (!t)
    return -1;
  snprintf(t->root, sizeof t->root, "/tmp/corral-inventory-XXXXXX");
  if (!mkdtemp(t->root)) {
    free(t);
    return -1;
  }
  *state = t;
  return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  return remove(path);
}

static int teardown(void **state) {
  tree *t = *state;
  int rc = nftw(t->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(t);
  return rc;
}

/* Creates root/rel: a directory when rel ends in '/', else an empty file. */
static void make(const tree *t, const char *rel) {
  char path[PATH_MAX];
  size_t n = strlen(rel);
  assert_true(n > 0);
  join(path, sizeof path, t, rel);
  if (rel[n - 1] == '/') {
    path[strlen(path) - 1] = '\0';
    assert_int_equal(mkdir(path, 0755), 0);
  } else {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
  }
}

static void link_to(const tree *t, const char *target, const char *rel) {
  char path[PATH_MAX];
  join(path, sizeof path, t, rel);
  assert_int_equal(symlink(target, path), 0);
}

static char *sub(const tree *t, const char *rel) {
  char *p = malloc(PATH_MAX);
  assert_non_null(p);
  join(p, PATH_MAX, t, rel);
  return p;
}

static void test_python_names_dedup_and_order(void **state) {
  tree *t = *state;
  make(t, "a/");
  make(t, "a/numpy-1.24.2.egg-info/");
  make(t, "a/pandas-1.5.3.egg-info/");
  make(t, "a/PyYAML-6.0.dist-info/");
  make(t, "a/zope.interface-5.5.2.egg-info"); /* egg-info can be a file */
  make(t, "a/requests-2.31.0.dist-info/");
  make(t, "a/Brotli-1.0.9.egg-info/");
  make(t, "a/cryptography.egg-info/"); /* no version in the name */
  make(t, "a/some_pkg/");              /* a package without metadata */
  make(t, "a/__pycache__/");
  make(t, "a/six.py");
  make(t, "a/.hidden-1.0.dist-info/");
  make(t, "b/");
  make(t, "b/scipy-1.10.1.dist-info/");
  make(t, "b/pyyaml-6.0.1.dist-info/");  /* the same project as PyYAML */
  make(t, "b/numpy-1.26.0.dist-info/");  /* and as numpy */
  make(t, "b/typing_extensions-4.4.0.dist-info/");
  make(t, "b/typing-extensions-4.5.0.dist-info/"); /* '-' and '_' alike */

  char *a = sub(t, "a"), *b = sub(t, "b"), *missing = sub(t, "missing");
  const char *dirs[] = {a, missing, NULL, b};
  char *list = cr_inventory_from_dirs("python", dirs, 4);
  assert_non_null(list);
  assert_string_equal(list, "numpy, pandas, scipy, Brotli, cryptography, PyYAML, requests, "
                            "typing_extensions, zope.interface");
  free(list);

  /* matplotlib joins the front when it is there. */
  make(t, "b/matplotlib-3.6.3.egg-info/");
  list = cr_inventory_from_dirs("python", dirs, 4);
  assert_non_null(list);
  assert_string_equal(list, "numpy, pandas, scipy, matplotlib, Brotli, cryptography, PyYAML, "
                            "requests, typing_extensions, zope.interface");
  free(list);
  free(a);
  free(b);
  free(missing);
}

static void test_node_names_scoped_links_and_sort(void **state) {
  tree *t = *state;
  make(t, "nm/");
  make(t, "nm/lodash/");
  make(t, "nm/express/");
  make(t, "nm/@types/");
  make(t, "nm/@types/node/");
  make(t, "nm/@types/react/");
  make(t, "nm/@types/README");
  make(t, "nm/.bin/");
  make(t, "nm/.package-lock.json");
  make(t, "nm/README");
  make(t, "real-pkg/");
  link_to(t, "../real-pkg", "nm/linked-pkg");
  link_to(t, "../nowhere", "nm/broken-link");
  make(t, "share/");
  make(t, "share/lodash/");
  make(t, "share/Axios/");

  char *nm = sub(t, "nm"), *share = sub(t, "share");
  const char *dirs[] = {nm, share};
  char *list = cr_inventory_from_dirs("node", dirs, 2);
  assert_non_null(list);
  assert_string_equal(list, "@types/node, @types/react, Axios, express, linked-pkg, lodash");
  free(list);
  free(nm);
  free(share);
}

static void test_list_is_capped(void **state) {
  tree *t = *state;
  make(t, "many/");
  char rel[64];
  for (int i = 0; i < 45; i++) {
    snprintf(rel, sizeof rel, "many/pkg%02d-1.0.dist-info/", i);
    make(t, rel);
  }
  char *many = sub(t, "many");
  const char *dirs[] = {many};
  char *list = cr_inventory_from_dirs("python", dirs, 1);
  assert_non_null(list);
  assert_non_null(strstr(list, "pkg00, pkg01, pkg02"));
  assert_non_null(strstr(list, ", pkg39, and 5 more"));
  assert_null(strstr(list, "pkg40"));
  size_t commas = 0;
  for (const char *p = list; *p; p++)
    commas += *p == ',';
  assert_int_equal(commas, 40); /* 40 names, then ", and 5 more" */
  free(list);

  /* Exactly 40 shows them all with no tail. */
  for (int i = 40; i < 45; i++) {
    char path[PATH_MAX];
    snprintf(rel, sizeof rel, "many/pkg%02d-1.0.dist-info", i);
    join(path, sizeof path, t, rel);
    assert_int_equal(rmdir(path), 0);
  }
  list = cr_inventory_from_dirs("python", dirs, 1);
  assert_non_null(list);
  assert_null(strstr(list, "more"));
  assert_non_null(strstr(list, ", pkg39"));
  free(list);
  free(many);
}

static void test_nothing_found_and_other_languages(void **state) {
  tree *t = *state;
  make(t, "empty/");
  make(t, "empty/not-metadata/");
  char *empty = sub(t, "empty");
  const char *dirs[] = {empty};

  errno = EINVAL;
  assert_null(cr_inventory_from_dirs("python", dirs, 1));
  assert_int_equal(errno, 0);

  make(t, "empty/ruby-gem-1.0.dist-info/");
  errno = EINVAL;
  assert_null(cr_inventory_from_dirs("ruby", dirs, 1));
  assert_int_equal(errno, 0);
  assert_null(cr_inventory_from_dirs(NULL, dirs, 1));
  assert_null(cr_inventory_from_dirs("python", NULL, 0));
  assert_null(cr_inventory_packages("ruby"));
  assert_null(cr_inventory_packages(NULL));
  free(empty);
}

/* The public call scans the documented default directories. */
static void test_defaults_are_the_documented_dirs(void **state) {
  glob_t g;
  memset(&g, 0, sizeof g);
  int grc = glob("/usr/local/lib/python3*/dist-packages", GLOB_ONLYDIR, NULL, &g);
  size_t nlocal = grc == 0 ? g.gl_pathc : 0;
  const char *py[16] = {"/usr/lib/python3/dist-packages"};
  assert_true(nlocal < 15);
  for (size_t i = 0; i < nlocal; i++)
    py[i + 1] = g.gl_pathv[i];
  char *want = cr_inventory_from_dirs("python", py, nlocal + 1);
  char *got = cr_inventory_packages("python");
  if (want) {
    assert_non_null(got);
    assert_string_equal(got, want);
  } else {
    assert_null(got);
  }
  free(want);
  free(got);
  globfree(&g);

  const char *node[] = {"/usr/lib/node_modules", "/usr/local/lib/node_modules",
                        "/usr/share/nodejs", "/usr/lib/nodejs"};
  want = cr_inventory_from_dirs("node", node, 4);
  got = cr_inventory_packages("node");
  if (want) {
    assert_non_null(got);
    assert_string_equal(got, want);
  } else {
    assert_null(got);
  }
  free(want);
  free(got);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_python_names_dedup_and_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_node_names_scoped_links_and_sort, setup, teardown),
      cmocka_unit_test_setup_teardown(test_list_is_capped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nothing_found_and_other_languages, setup, teardown),
      cmocka_unit_test(test_defaults_are_the_documented_dirs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

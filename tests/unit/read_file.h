/* For the unit tests that check files a function wrote in a scratch
 * directory: reads dir/name whole into buf (NUL-terminated), failing the
 * test if it cannot. Include after cmocka.h. */
#ifndef CORRAL_TESTS_READ_FILE_H
#define CORRAL_TESTS_READ_FILE_H

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static inline void read_file_in(const char *dir, const char *name, char *buf, size_t size) {
  char p[200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  assert_true(n >= 0);
  buf[n] = '\0';
}

#endif

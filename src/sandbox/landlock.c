/* Landlock: a second filesystem wall, enforced by the kernel on every path
 * walk, independent of the mount table. If a mount were ever left writable
 * by mistake, Landlock still refuses writes outside /workspace, /tmp and
 * /dev. Where the ABI has scoping (6+), signals to processes outside the
 * program's domain (PID 1) and connections to abstract unix sockets made
 * outside it are refused too. */
#include "sandbox/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define CR_SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define CR_SCOPE_SIGNAL (1ULL << 1)

/* Our own copy of the ruleset attribute so that older uapi headers (without
 * the scoped field) still build; the kernel takes the size we pass. */
struct cr_ll_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

int cr_landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

static uint64_t fs_rights(int abi) {
  uint64_t r = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
               LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
               LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
               LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
               LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
               LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
               LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2)
    r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5)
    r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return r;
}

static int add_path(int ruleset, const char *path, uint64_t access) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
  long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
  int e = errno;
  close(fd);
  return rc < 0 ? -e : 0;
}

int cr_landlock_apply_child(int abi, const char **step) {
  if (abi <= 0)
    return 0;
  uint64_t all = fs_rights(abi);
  struct cr_ll_attr attr = {.handled_access_fs = all};
  size_t size = sizeof(uint64_t); /* ABI 1-3: fs only */
  if (abi >= 6) {
    attr.scoped = CR_SCOPE_ABSTRACT_UNIX | CR_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  *step = "landlock: create ruleset";
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0)
    return -errno;
  const uint64_t read_exec = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
                             LANDLOCK_ACCESS_FS_READ_DIR;
  /* /dev holds only the five harmless devices; writing /dev/null is normal. */
  const uint64_t dev = read_exec | LANDLOCK_ACCESS_FS_WRITE_FILE |
                       (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0);
  int rc;
  *step = "landlock: add rules";
  if ((rc = add_path(rs, "/", read_exec)) < 0 || (rc = add_path(rs, "/dev", dev)) < 0 ||
      (rc = add_path(rs, "/tmp", all)) < 0 || (rc = add_path(rs, CR_SB_WORKSPACE, all)) < 0) {
    close(rs);
    return rc;
  }
  *step = "landlock: restrict self";
  if (syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
    rc = -errno;
    close(rs);
    return rc;
  }
  close(rs);
  return 0;
}

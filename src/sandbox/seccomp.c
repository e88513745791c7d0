/* The seccomp wall: an allow-list for what python3, node and bash need.
 *
 * Unknown system calls fail with ENOSYS (so runtimes fall back as they would
 * on an older kernel); calls that only an attacker wants fail with EPERM. The
 * filter is compiled once per process with libseccomp and exported to raw
 * BPF, which the child loads with a single seccomp(2) call. */
#include "sandbox/internal.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/sched.h>

#ifdef CR_SECCOMP_GENERATOR
#include <seccomp.h>
#include <sys/resource.h>

/* ioprio_set's `which` (include/uapi/linux/ioprio.h; the header is not in
 * every distribution's kernel headers). */
#define CR_IOPRIO_WHO_PROCESS 1
#define CR_IOPRIO_WHO_PGRP 2
#define CR_IOPRIO_WHO_USER 3

/* Plain allow, no argument checks. Names unknown to the installed libseccomp
 * are skipped: the default action (ENOSYS) then applies, which is safe. */
static const char *const allow_plain[] = {
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
    "preadv2", "pwritev2", "open", "openat", "openat2", "close", "close_range", "creat",
    "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access",
    "faccessat", "faccessat2", "lseek", "mmap", "mprotect", "munmap", "mremap", "msync",
    "mincore", "madvise", "brk", "mlock", "mlock2", "munlock", "mlockall", "munlockall",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
    "rt_sigqueueinfo", "rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack", "pipe", "pipe2",
    "select", "pselect6", "poll", "ppoll", "epoll_create", "epoll_create1", "epoll_ctl",
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd",
    "signalfd4", "timerfd_create", "timerfd_settime", "timerfd_gettime", "inotify_init",
    "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "sched_yield",
    "sched_getaffinity", "sched_getparam", "sched_getscheduler", "sched_get_priority_max",
    "sched_get_priority_min", "sched_rr_get_interval", "sched_getattr",
    "dup", "dup2", "dup3", "pause", "nanosleep", "clock_nanosleep", "getitimer", "setitimer",
    "alarm", "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid",
    "getresuid", "getresgid", "getgroups", "getpgid", "getpgrp", "getsid", "setpgid",
    "setsid", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
    "setfsuid", "setfsgid", "setgroups", "capget", "capset", "sendfile", "connect", "accept",
    "accept4", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
    "shutdown", "bind", "listen", "getsockname", "getpeername", "setsockopt", "getsockopt",
    "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "kill",
    "tgkill", "tkill", "uname", "fcntl", "flock", "fsync", "fdatasync", "sync", "syncfs",
    "sync_file_range", "truncate", "ftruncate", "fallocate", "fadvise64", "readahead",
    "getdents", "getdents64", "getcwd", "chdir", "fchdir", "rename", "renameat",
    "renameat2", "mkdir", "mkdirat", "rmdir", "link", "linkat", "unlink", "unlinkat",
    "symlink", "symlinkat", "readlink", "readlinkat", "chmod", "fchmod", "fchmodat",
    "fchmodat2", "chown", "fchown", "lchown", "fchownat", "umask", "mknod", "mknodat",
    "utime", "utimes", "utimensat", "futimesat", "gettimeofday", "time", "clock_gettime",
    "clock_getres", "getrlimit", "setrlimit", "getrusage", "sysinfo", "times",
    "getpriority", "prctl", "arch_prctl", "futex", "futex_waitv",
    "set_robust_list", "get_robust_list", "set_tid_address", "restart_syscall", "rseq",
    "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
    "getrandom", "memfd_create", "membarrier", "copy_file_range", "splice", "tee",
    "vmsplice", "getcpu", "pkey_mprotect", "pkey_alloc", "pkey_free", "getxattr",
    "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr", "setxattr",
    "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
    "mq_timedreceive", "mq_notify", "mq_getsetattr", "pidfd_open", "pidfd_send_signal",
    "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "seccomp",
    "set_thread_area", "get_thread_area", "ioprio_get", "name_to_handle_at",
    "cachestat", "map_shadow_stack",
};

/* Denied with EPERM: each is a way out, a kernel attack surface, or a host
 * resource not namespaced (DESIGN.md section 4). Listed (rather than left to
 * the default) so the policy documents itself and the errno is the one a
 * program expects for "not allowed". */
static const char *const deny_eperm[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
    "kcmp", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "setns", "unshare",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "syslog", "iopl", "ioperm", "vhangup",
    "lookup_dcookie", "fanotify_init", "open_by_handle_at", "uselib", "ustat", "sysfs",
    "_sysctl", "nfsservctl", "personality", "sethostname", "setdomainname", "mbind",
    "set_mempolicy", "migrate_pages", "move_pages", "memfd_secret", "io_setup",
    "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
    "get_mempolicy", "set_mempolicy_home_node", "modify_ldt", "vm86", "vm86old",
};

/* io_uring bypasses seccomp for every operation it performs: pretend it does
 * not exist so runtimes use plain system calls. clone3 cannot be inspected
 * (its flags are behind a pointer): ENOSYS makes glibc fall back to clone,
 * whose flags we can check. */
static const char *const deny_enosys[] = {
    "io_uring_setup", "io_uring_enter", "io_uring_register", "clone3",
};

static int add_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
                    const struct scmp_arg_cmp *args) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR)
    return 0; /* not known to this libseccomp: the default action applies */
  int rc = seccomp_rule_add_array(ctx, action, nr, n, args);
  /* -EEXIST (duplicate) is harmless; -EACCES means the action is the
   * default one, which then applies anyway. */
  return rc == -EEXIST || rc == -EACCES ? 0 : rc;
}

/* Rules for a call whose argument `arg` names a process: allowed unless it
 * names PID 1, which is then refused with EPERM. The kernel reads a pid as
 * a 32-bit pid_t and ignores the high half of the register, so only the
 * low 32 bits are compared (1 | 1<<32 is PID 1 too). libseccomp lets an
 * unconditional allow shadow a conditional denial, so the allow is written
 * as the complement, as for ioctl: the low half is 0 (the caller itself),
 * or one of its bits 1-31 is set (anything but 0 and 1). `pre` (may be
 * NULL) is a condition on another argument that every rule also has. */
static int add_not_pid1(scmp_filter_ctx ctx, const char *name, unsigned arg,
                        const struct scmp_arg_cmp *pre) {
  int rc;
  unsigned n = pre ? 2 : 1;
  struct scmp_arg_cmp a[2];
  if (pre)
    a[1] = *pre;
  a[0] = SCMP_CMP64(arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, 0);
  if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, name, n, a)) < 0)
    return rc;
  for (unsigned b = 1; b < 32; b++) {
    a[0] = SCMP_CMP64(arg, SCMP_CMP_MASKED_EQ, 1u << b, 1u << b);
    if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, name, n, a)) < 0)
      return rc;
  }
  a[0] = SCMP_CMP64(arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, 1);
  return add_rule(ctx, SCMP_ACT_ERRNO(EPERM), name, n, a);
}

static int build(struct sock_fprog *out, char *msg, size_t msg_size) {
  int rc = 0;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
  if (!ctx) {
    snprintf(msg, msg_size, "seccomp_init failed");
    return -1;
  }
  /* Another architecture's system call numbers (i386 via int 0x80, x32) mean
   * other rules: kill rather than reason about them. */
  if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0)
    goto fail;
  /* The filter is loaded after no_new_privs is set; do not let libseccomp
   * try to set it again, and keep the kernel's default speculation handling. */
  if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0)
    goto fail;
  /* A binary tree over syscall numbers instead of a list: fewer
   * instructions per call, and a faster load (the kernel runs the filter for
   * every syscall number when it is attached, to cache the constant
   * allows). */
  if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)) < 0)
    goto fail;

  for (size_t i = 0; i < sizeof allow_plain / sizeof *allow_plain; i++)
    if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, allow_plain[i], 0, NULL)) < 0)
      goto fail;
  for (size_t i = 0; i < sizeof deny_eperm / sizeof *deny_eperm; i++)
    if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), deny_eperm[i], 0, NULL)) < 0)
      goto fail;
  for (size_t i = 0; i < sizeof deny_enosys / sizeof *deny_enosys; i++)
    if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), deny_enosys[i], 0, NULL)) < 0)
      goto fail;

  /* clone: threads and processes yes, new namespaces no (a nested user
   * namespace would give the program capabilities again, over a kernel
   * surface we did not audit). */
  {
    const uint64_t ns = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                        CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP;
    struct scmp_arg_cmp a[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, ns, 0)};
    if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "clone", 1, a)) < 0)
      goto fail;
  }

  /* ioctl: TIOCSTI and TIOCLINUX push keystrokes into a terminal (the
   * classic sandbox escape, CVE-2017-5226). The kernel reads the request as
   * 32 bits, so only the low 32 bits may be compared, and libseccomp lets an
   * unconditional allow shadow conditional denials: the allow is therefore
   * written as the complement. TIOCSTI (0x5412) and TIOCLINUX (0x541C) share
   * every bit but bits 1-3 (001 vs 110); a request is neither when one of the
   * other 29 low bits differs from their common pattern, or when bits 1-3
   * hold one of the six other values. */
  {
    const uint32_t common = TIOCSTI & ~0xEu;
    for (unsigned b = 0; b < 32; b++) {
      if (b >= 1 && b <= 3)
        continue;
      uint32_t bit = 1u << b;
      struct scmp_arg_cmp a[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, bit, (common & bit) ^ bit)};
      if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1, a)) < 0)
        goto fail;
    }
    for (uint32_t v = 0; v < 8; v++) {
      if (v << 1 == (TIOCSTI & 0xEu) || v << 1 == (TIOCLINUX & 0xEu))
        continue;
      struct scmp_arg_cmp a[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xEu, v << 1)};
      if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1, a)) < 0)
        goto fail;
    }
    struct scmp_arg_cmp sti[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI)};
    struct scmp_arg_cmp lnx[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX)};
    if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, sti)) < 0 ||
        (rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, lnx)) < 0)
      goto fail;
  }

  /* prlimit64 on itself only (pid 0: glibc's getrlimit and setrlimit):
   * another process of the sandbox with the same uid includes PID 1 of a
   * session, whose open-file limit a cell could lower until no program
   * can be started again. The pid is compared as 64 bits: a value with
   * high bits set is refused, though the kernel would read its low half. */
  {
    struct scmp_arg_cmp self[] = {SCMP_A0(SCMP_CMP_EQ, 0)};
    struct scmp_arg_cmp other[] = {SCMP_A0(SCMP_CMP_NE, 0)};
    if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, self)) < 0 ||
        (rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "prlimit64", 1, other)) < 0)
      goto fail;
  }

  /* Scheduling and I/O priority of other processes: the kernel allows them
   * against any process of the same uid, and PID 1 has the program's uid
   * (a program could make its sandbox's init SCHED_IDLE, nice 19, idle I/O
   * class or pin it to one CPU: a session's init then starts every later
   * cell slowly, and its teardown lags). Refused for PID 1 only, not
   * limited to pid 0 as prlimit64 is: threads set their own affinity and
   * niceness by their tid (pthread_setaffinity_np, per-thread nice), and
   * every other process here is the program's own. */
  {
    static const char *const by_pid[] = {"sched_setaffinity", "sched_setscheduler",
                                         "sched_setparam", "sched_setattr"};
    for (size_t i = 0; i < sizeof by_pid / sizeof *by_pid; i++)
      if ((rc = add_not_pid1(ctx, by_pid[i], 0, NULL)) < 0)
        goto fail;
    /* setpriority(which, who) and ioprio_set(which, who): a process
     * (who 0: the caller) or a process group (who 0: the caller's; PID 1
     * leads none, but who 1 is refused all the same) may be named, not PID
     * 1. A user never: every process of the sandbox has the same uid, so
     * PRIO_USER / IOPRIO_WHO_USER always reaches PID 1. `which` is an int:
     * its low 32 bits are compared, as the kernel reads them. */
    static const struct {
      const char *name;
      int process, pgrp, user;
    } by_who[] = {{"setpriority", PRIO_PROCESS, PRIO_PGRP, PRIO_USER},
                  {"ioprio_set", CR_IOPRIO_WHO_PROCESS, CR_IOPRIO_WHO_PGRP, CR_IOPRIO_WHO_USER}};
    for (size_t i = 0; i < sizeof by_who / sizeof *by_who; i++) {
      struct scmp_arg_cmp proc = SCMP_A0_64(SCMP_CMP_MASKED_EQ, 0xffffffffu,
                                            (uint64_t)by_who[i].process);
      struct scmp_arg_cmp pgrp = SCMP_A0_64(SCMP_CMP_MASKED_EQ, 0xffffffffu,
                                            (uint64_t)by_who[i].pgrp);
      struct scmp_arg_cmp user[] = {SCMP_A0_64(SCMP_CMP_MASKED_EQ, 0xffffffffu,
                                               (uint64_t)by_who[i].user)};
      if ((rc = add_not_pid1(ctx, by_who[i].name, 1, &proc)) < 0 ||
          (rc = add_not_pid1(ctx, by_who[i].name, 1, &pgrp)) < 0 ||
          (rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), by_who[i].name, 1, user)) < 0)
        goto fail;
    }
  }

  /* socket: the families a program needs (unix, IPv4, IPv6 in its own empty
   * network namespace; route netlink for interface listing). Packet sockets,
   * vsock (reaches the hypervisor), AF_ALG (kernel crypto surface) and
   * AF_KEY fall to the default. */
  {
    /* ...and within them the protocols programs use (0 = the type's
     * default, TCP, UDP, ICMP for ping sockets): MPTCP, SCTP, UDP-Lite and
     * the like are kernel surface no program here needs. */
    static const int fams[] = {AF_INET, AF_INET6};
    static const int protos[] = {0, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6};
    for (size_t i = 0; i < sizeof fams / sizeof *fams; i++)
      for (size_t k = 0; k < sizeof protos / sizeof *protos; k++) {
        struct scmp_arg_cmp a[] = {SCMP_A0(SCMP_CMP_EQ, (uint64_t)fams[i]),
                                   SCMP_A2(SCMP_CMP_EQ, (uint64_t)protos[k])};
        if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "socket", 2, a)) < 0)
          goto fail;
      }
    struct scmp_arg_cmp ux[] = {SCMP_A0(SCMP_CMP_EQ, AF_UNIX), SCMP_A2(SCMP_CMP_EQ, 0)};
    if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "socket", 2, ux)) < 0)
      goto fail;
    struct scmp_arg_cmp nl[] = {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
                                SCMP_A2(SCMP_CMP_EQ, NETLINK_ROUTE)};
    if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "socket", 2, nl)) < 0)
      goto fail;
    struct scmp_arg_cmp sp[] = {SCMP_A0(SCMP_CMP_EQ, AF_UNIX)};
    if ((rc = add_rule(ctx, SCMP_ACT_ALLOW, "socketpair", 1, sp)) < 0)
      goto fail;
  }

  int fd = memfd_create("corral-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    rc = -errno;
    goto fail;
  }
  if ((rc = seccomp_export_bpf(ctx, fd)) < 0) {
    close(fd);
    goto fail;
  }
  off_t size = lseek(fd, 0, SEEK_END);
  if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0) {
    close(fd);
    rc = -EINVAL;
    goto fail;
  }
  struct sock_filter *f = malloc((size_t)size);
  if (!f || pread(fd, f, (size_t)size, 0) != size) {
    free(f);
    close(fd);
    rc = -EIO;
    goto fail;
  }
  close(fd);
  out->filter = f;
  out->len = (unsigned short)((size_t)size / sizeof(struct sock_filter));
  seccomp_release(ctx);
  return 0;
fail:
  snprintf(msg, msg_size, "building the seccomp filter: %s", strerror(-rc));
  seccomp_release(ctx);
  return -1;
}

/* Build-time generator: compiles the policy with libseccomp and writes the
 * BPF program as a C array, so that corral itself does not spend 2 ms of
 * every run compiling the same filter (measured here). */
int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT.h\n", argv[0]);
    return 2;
  }
  struct sock_fprog prog;
  char msg[CR_ERR_MSG_MAX];
  if (build(&prog, msg, sizeof msg) < 0) {
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  FILE *f = fopen(argv[1], "w");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fprintf(f, "/* Generated by seccomp-gen from src/sandbox/seccomp.c: do not edit. */\n");
  fprintf(f, "static const struct sock_filter cr_seccomp_prebuilt[%u] = {\n", prog.len);
  for (unsigned i = 0; i < prog.len; i++) {
    const struct sock_filter *x = &prog.filter[i];
    fprintf(f, "  {0x%04x, %u, %u, 0x%08xu},\n", x->code, x->jt, x->jf, x->k);
  }
  fprintf(f, "};\n");
  free(prog.filter);
  return fclose(f) == 0 ? 0 : 1;
}
#else
#include "seccomp_prebuilt.h"

int cr_seccomp_program(const struct sock_fprog **prog, cr_err *err) {
  static const struct sock_fprog p = {
      .len = sizeof cr_seccomp_prebuilt / sizeof *cr_seccomp_prebuilt,
      .filter = (struct sock_filter *)cr_seccomp_prebuilt,
  };
  (void)err;
  *prog = &p;
  return 0;
}

int cr_seccomp_load_child(const struct sock_fprog *prog) {
  /* TSYNC is not needed: the child is single-threaded. */
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
    return -errno;
  return 0;
}
#endif

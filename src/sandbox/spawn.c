/* Starting a sandbox: the privileged steps in the order DESIGN.md section 4
 * gives, each with what it defends against. */
#include "sandbox/internal.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Exit code of a child whose setup failed (it reported why on the control
 * socket first). */
#define CHILD_SETUP_FAILED 125

/* ------------------------------------------------------------------------ */
/* Host detection                                                            */

static cr_host_info g_host;
static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;
static cr_mount_plan g_plan_base;
static int g_plan_rc;
static cr_err g_plan_err;

static void host_detect(void) {
  cr_host_info *h = &g_host;
  h->root = geteuid() == 0;
  long v = 0;
  FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
  if (f) {
    if (fscanf(f, "%ld", &v) != 1)
      v = 0;
    fclose(f);
  }
  h->cap_last_cap = v > 0 && v < 64 ? (int)v : CAP_LAST_CAP;
  f = fopen("/proc/sys/user/max_user_namespaces", "re");
  v = 1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1)
      v = 1;
    fclose(f);
  }
  h->userns = v > 0;
  h->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  /* Where this process's command line and environment strings live (fields
   * 48-51 of /proc/self/stat): each sandbox's PID 1 wipes its copy. */
  f = fopen("/proc/self/stat", "re");
  if (f) {
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *q = strrchr(buf, ')');
    int field = 2;
    unsigned long long addr[4] = {0};
    while (q && *q) {
      q = strchr(q, ' ');
      if (!q)
        break;
      q++;
      field++;
      if (field >= 48 && field <= 51)
        addr[field - 48] = strtoull(q, NULL, 10);
    }
    h->arg_start = (uintptr_t)addr[0];
    h->arg_end = (uintptr_t)addr[1];
    h->env_start = (uintptr_t)addr[2];
    h->env_end = (uintptr_t)addr[3];
  }
  h->landlock_abi = cr_landlock_abi();
  /* mount_setattr with a bad fd: EBADF/EINVAL means the call exists. */
  h->mount_setattr = syscall(SYS_mount_setattr, -1, "", 0, NULL, 0) < 0 && errno != ENOSYS;
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(h->kernel, sizeof h->kernel, "%s %s", u.sysname, u.release);
  cr_cg_detect(h);
  /* The part of the mount plan that does not depend on limits. */
  cr_sb_limits none = {0};
  g_plan_rc = cr_mount_plan_init(&g_plan_base, &none, &g_plan_err);
  g_plan_base.use_mount_setattr = h->mount_setattr;
}

const cr_host_info *cr_host_get(void) {
  pthread_once(&g_host_once, host_detect);
  return &g_host;
}

bool cr_sb_path_ok(const char *path) {
  if (!path || !*path || *path == '/' || strlen(path) > 4096)
    return false;
  int depth = 0;
  const char *s = path;
  while (*s) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.') || n > 255)
      return false;
    if (++depth > 32)
      return false;
    if (!e)
      break;
    s = e + 1;
    if (!*s)
      return false; /* trailing slash */
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Child side: from here to execve nothing allocates or takes a lock.        */

typedef struct child_args {
  const cr_sb_config *cfg;
  const cr_mount_plan *plan;
  const struct sock_fprog *prog;
  const cr_host_info *host;
  int ctl;
  int cg_join[2];   /* cgroup v1 "tasks" files opened by the supervisor, or -1 */
  bool root;
  long clk_tck;     /* units of /proc/PID/stat's CPU times */
} child_args;

/* fd and fd2 (-1: none) travel with the message. */
static void send_msg_full(int ctl, int type, int err, int status, int32_t own_cpu_ms,
                          const char *text, int fd, int fd2) {
  cr_ctl_msg m;
  memset(&m, 0, sizeof m);
  m.type = type;
  m.err = err;
  m.status = status;
  m.own_cpu_ms = own_cpu_ms;
  if (text) {
    size_t i = 0;
    for (; text[i] && i + 1 < sizeof m.text; i++)
      m.text[i] = text[i];
    m.text[i] = '\0';
  }
  struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
  union {
    char buf[CMSG_SPACE(2 * sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  int fds[2], n = 0;
  if (fd >= 0)
    fds[n++] = fd;
  if (fd2 >= 0)
    fds[n++] = fd2;
  if (n) {
    memset(&u, 0, sizeof u);
    mh.msg_control = u.buf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
  }
  while (sendmsg(ctl, &mh, MSG_NOSIGNAL) < 0 && errno == EINTR)
    ;
}

static void send_msg2(int ctl, int type, int err, int status, const char *text, int fd, int fd2) {
  send_msg_full(ctl, type, err, status, -1, text, fd, fd2);
}

static void send_msg(int ctl, int type, int err, int status, const char *text, int fd) {
  send_msg2(ctl, type, err, status, text, fd, -1);
}

/* CPU time (ms) of process pid itself, every thread of it but none of its
 * children (utime + stime, fields 14 and 15 of /proc/PID/stat; a zombie's
 * are still there), or -1. The sandbox's own /proc, so pid is as PID 1
 * sees it. No stdio: this runs in PID 1. */
static int32_t own_cpu_ms(pid_t pid, long clk_tck) {
  char path[32] = "/proc/";
  char digits[12];
  int nd = 0;
  for (unsigned v = (unsigned)pid; nd == 0 || v; v /= 10)
    digits[nd++] = (char)('0' + v % 10);
  size_t k = strlen(path);
  while (nd)
    path[k++] = digits[--nd];
  memcpy(path + k, "/stat", 6);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0 || clk_tck <= 0)
    return -1;
  buf[n] = '\0';
  /* After the command name, which may hold spaces and parentheses. */
  char *q = strrchr(buf, ')');
  if (!q)
    return -1;
  unsigned long long t[2] = {0, 0};
  int field = 2;
  for (q++; *q && field < 15;) {
    while (*q == ' ')
      q++;
    field++;
    unsigned long long v = 0;
    while (*q >= '0' && *q <= '9')
      v = v * 10 + (unsigned long long)(*q++ - '0');
    if (field == 14 || field == 15)
      t[field - 14] = v;
    while (*q && *q != ' ')
      q++;
  }
  if (field < 15)
    return -1;
  unsigned long long ms = (t[0] + t[1]) * 1000ull / (unsigned long long)clk_tck;
  return ms > INT32_MAX ? INT32_MAX : (int32_t)ms;
}

/* A persistent sandbox tells the supervisor which process its program is:
 * a pidfd, from which the supervisor reads the program's pid as the host
 * sees it (/proc/self/fdinfo), to measure its CPU per cell. Orphans the
 * program left behind are PID 1's children too, so "PID 1's child" is not
 * an answer. -1 for one-shot sandboxes (their CPU comes from wait4). */
static int payload_pidfd(const child_args *a, pid_t payload) {
  if (!a->cfg->persistent || payload <= 0)
    return -1;
  return (int)syscall(SYS_pidfd_open, payload, 0);
}

static _Noreturn void child_fail(int ctl, const char *step, int err) {
  send_msg(ctl, CR_CTL_FAIL, err, 0, step, -1);
  _exit(CHILD_SETUP_FAILED);
}

static int drop_caps(int last_cap) {
  /* The bounding set first (needs CAP_SETPCAP, which capset is about to
   * remove), then ambient, then the three sets. With no_new_privs and an
   * empty bounding set no execve can give any capability back. */
  for (int c = 0; c <= last_cap; c++)
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
      return -errno;
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return -errno;
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &hdr, data) < 0)
    return -errno;
  return 0;
}

static int set_rlimit(int res, uint64_t soft, uint64_t hard) {
  struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
  return setrlimit(res, &rl) < 0 ? -errno : 0;
}

/* The program's streams: fd 0, 1, 2 and the extra fds that become 3, 4. */
typedef struct payload_fds {
  int in, out, err;
  int extra[CR_SB_MAX_EXTRA_FDS];
  size_t nextra;
} payload_fds;

/* Sets a limit to v, or to the inherited hard limit if that is lower (an
 * unprivileged process may not raise it). */
static int lower_rlimit(int res, uint64_t v) {
  struct rlimit cur;
  if (getrlimit(res, &cur) < 0)
    return -errno;
  if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < v)
    v = cur.rlim_max;
  return set_rlimit(res, v, v);
}

static _Noreturn void run_payload(const child_args *a, const payload_fds *pf) {
  const cr_sb_config *cfg = a->cfg;
  int ctl = a->ctl;
  int rc;
  const char *step = "";

  /* A new session with no controlling terminal: TIOCSTI/TIOCLINUX have no
   * terminal of ours to push keystrokes into (and seccomp denies them). */
  if (setsid() < 0)
    child_fail(ctl, "setsid", errno);

  /* Dispositions and the mask survive execve: whatever the supervisor
   * ignored or blocked must not leak into the program. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < _NSIG; s++)
    sigaction(s, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  /* The three streams. Source fds are first moved above 2 so that a source
   * that happens to be 0, 1 or 2 is not overwritten before it is used. */
  int in = pf->in >= 0 ? fcntl(pf->in, F_DUPFD_CLOEXEC, 16)
                       : open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = fcntl(pf->out, F_DUPFD_CLOEXEC, 16);
  int er = fcntl(pf->err, F_DUPFD_CLOEXEC, 16);
  int ex[CR_SB_MAX_EXTRA_FDS];
  for (size_t i = 0; i < pf->nextra; i++)
    if ((ex[i] = fcntl(pf->extra[i], F_DUPFD_CLOEXEC, 16)) < 0)
      child_fail(ctl, "preparing the extra fds", errno);
  int cfd = fcntl(ctl, F_DUPFD_CLOEXEC, 16);
  if (in < 0 || out < 0 || er < 0 || cfd < 0)
    child_fail(ctl, "preparing the standard streams", errno);
  ctl = cfd;
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(er, 2) < 0)
    child_fail(ctl, "installing the standard streams", errno);
  for (size_t i = 0; i < pf->nextra; i++)
    if (dup2(ex[i], 3 + (int)i) < 0)
      child_fail(ctl, "installing the extra fds", errno);

  if (chdir(CR_SB_WORKSPACE) < 0)
    child_fail(ctl, "entering /workspace", errno);

  /* rlimits: the second line behind the cgroup (and the first where there
   * is none). CORE 0: a crash must not write a core anywhere. */
  const cr_sb_limits *l = &cfg->limits;
  step = "setting rlimits";
  if ((rc = set_rlimit(RLIMIT_CORE, 0, 0)) < 0)
    child_fail(ctl, step, -rc);
  /* Nothing else inherited from the supervisor: no real-time priority, no
   * raised niceness, little locked memory, small POSIX queues. */
  if ((rc = set_rlimit(RLIMIT_RTPRIO, 0, 0)) < 0 || (rc = set_rlimit(RLIMIT_NICE, 0, 0)) < 0 ||
      (rc = lower_rlimit(RLIMIT_MEMLOCK, 8u << 20)) < 0 ||
      (rc = lower_rlimit(RLIMIT_MSGQUEUE, 800u << 10)) < 0)
    child_fail(ctl, step, -rc);
  if (l->cpu_ms) {
    uint64_t s = (l->cpu_ms + 999) / 1000;
    /* SIGXCPU at the soft limit, SIGKILL one second later. */
    if ((rc = set_rlimit(RLIMIT_CPU, s, s + 1)) < 0)
      child_fail(ctl, step, -rc);
  }
  if (l->fsize_bytes && (rc = set_rlimit(RLIMIT_FSIZE, l->fsize_bytes, l->fsize_bytes)) < 0)
    child_fail(ctl, step, -rc);
  uint32_t nofile = l->nofile ? l->nofile : 1024;
  if ((rc = set_rlimit(RLIMIT_NOFILE, nofile, nofile)) < 0)
    child_fail(ctl, step, -rc);
  /* NPROC is counted per user namespace (kernel 5.14+: ucounts), so it
   * bounds this sandbox's own processes, also where no pids cgroup exists
   * (unprivileged) and the outside uid is the caller's. */
  if (l->pids && (rc = set_rlimit(RLIMIT_NPROC, l->pids, l->pids)) < 0)
    child_fail(ctl, step, -rc);
  if (l->memory_bytes && !a->host->cg_memory &&
      (rc = set_rlimit(RLIMIT_DATA, l->memory_bytes, l->memory_bytes)) < 0)
    child_fail(ctl, step, -rc);

  /* no_new_privs: no setuid bit or file capability can raise privileges
   * (also what Landlock and seccomp require of an unprivileged caller). */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    child_fail(ctl, "setting no_new_privs", errno);
  /* Lock "root is not special" so that no uid change can bring
   * capabilities back. Needs CAP_SETPCAP, so before the drop. */
  if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
                                   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
            0, 0, 0) < 0)
    child_fail(ctl, "locking securebits", errno);
  if ((rc = drop_caps(a->host->cap_last_cap)) < 0)
    child_fail(ctl, "dropping capabilities", -rc);

  if ((rc = cr_landlock_apply_child(a->host->landlock_abi, &step)) < 0)
    child_fail(ctl, step, -rc);

  /* Nothing of the supervisor's survives: the control socket moves just
   * above the program's fds (closed by execve) so that a failing execve can
   * still be reported, and everything above it is closed. */
  int top = 3 + (int)pf->nextra;
  if (dup2(ctl, top) < 0)
    child_fail(ctl, "moving the control socket", errno);
  ctl = top;
  if (fcntl(ctl, F_SETFD, FD_CLOEXEC) < 0)
    child_fail(ctl, "marking the control socket close-on-exec", errno);
  if (syscall(SYS_close_range, (unsigned)top + 1, ~0U, 0) < 0) {
    for (int fd = top + 1; fd < 65536; fd++)
      close(fd);
  }

  /* seccomp last: every step above needed calls the filter denies. */
  if ((rc = cr_seccomp_load_child(a->prog)) < 0)
    child_fail(ctl, "loading the seccomp filter", -rc);

  execve(cfg->argv[0], (char *const *)cfg->argv, (char *const *)cfg->envp);
  child_fail(ctl, "execve of the program", errno);
}

/* Starting the program's process. Not glibc's fork: that one runs atfork
 * handlers and takes the allocator's locks, which another thread of a
 * multithreaded supervisor may have held when we were cloned (a deadlock
 * here). The process shares PID 1's memory until its execve (CLONE_VM) and
 * PID 1 waits meanwhile (CLONE_VFORK): no copy of PID 1's page tables,
 * which map the whole supervisor, on every start. It runs on a stack of
 * its own, so no frame of PID 1's is touched; what it changes (rlimits,
 * credentials, seccomp, Landlock, fds, signal dispositions) belongs to its
 * own task, not to the shared memory. Until the execve PID 1 cannot answer
 * the supervisor; a process an earlier session cell left behind could stop
 * the new one there (SIGSTOP) where Landlock cannot scope signals (ABI < 6):
 * that freezes only its own session, whose commands time out, and closing
 * it still works (SIGKILL ends the wait). */
static char payload_stack[256 * 1024] __attribute__((aligned(64)));

typedef struct payload_start {
  const struct child_args *a;
  const struct payload_fds *pf;
} payload_start;

static _Noreturn void run_payload(const child_args *a, const payload_fds *pf);

static int payload_entry(void *p) {
  const payload_start *ps = p;
  run_payload(ps->a, ps->pf);
}

#if defined(__SANITIZE_ADDRESS__)
#define CR_PAYLOAD_OWN_STACK 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CR_PAYLOAD_OWN_STACK 0
#endif
#endif
#ifndef CR_PAYLOAD_OWN_STACK
#define CR_PAYLOAD_OWN_STACK 1
#endif

static pid_t spawn_payload(const child_args *a, const payload_fds *pf) {
  payload_start ps = {.a = a, .pf = pf};
#if CR_PAYLOAD_OWN_STACK
  return clone(payload_entry, payload_stack + sizeof payload_stack,
               CLONE_VM | CLONE_VFORK | SIGCHLD, &ps);
#else
  /* AddressSanitizer cannot follow a process onto a stack of its own (it
   * warns on the program's stderr): the sanitizer build copies instead. */
  (void)payload_stack;
  pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
  if (pid == 0)
    payload_entry(&ps);
  return pid;
#endif
}

static void bring_up_lo(void) {
  /* An empty network namespace has lo down; programs that talk to
   * themselves on 127.0.0.1 expect it up. Nothing else exists to reach. */
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  close(s);
}

/* PID 1's last act: every other process of the namespace killed and
 * reaped, so that their CPU time adds up in PID 1's (which the supervisor
 * reads from wait4) instead of vanishing with an unreaped tree. kill(-1)
 * from PID 1 reaches all of them but itself; it is repeated until none is
 * left, for children that were being forked at the first one. */
static _Noreturn void kill_all_and_exit(void) {
  for (;;) {
    kill(-1, SIGKILL);
    int st;
    pid_t p = waitpid(-1, &st, 0);
    if (p < 0 && errno == ECHILD)
      break;
  }
  _exit(0);
}

static _Noreturn void run_init(const child_args *a) {
  int ctl = a->ctl;
  const char *step = "";

  /* If the supervisor dies, the sandbox dies with it: PID 1 exits when the
   * control socket hangs up (its loop below; EOF here), and the kernel then
   * kills the whole pid namespace. Not PR_SET_PDEATHSIG: it follows the
   * supervisor *thread* that cloned us (a server's connection thread ends
   * long before its session) and a uid change clears it. */
  char go;
  ssize_t n;
  while ((n = read(ctl, &go, 1)) < 0 && errno == EINTR)
    ;
  if (n != 1)
    _exit(CHILD_SETUP_FAILED);

  /* Into the sandbox's cgroups before anything else: the setup's own memory
   * and every process after are accounted and limited there. */
  int rc;
  if ((rc = cr_cg_join_child(a->cg_join)) < 0)
    child_fail(ctl, "joining the sandbox's cgroup", -rc);

  /* Become the sandbox user while keeping the capabilities that the new
   * user namespace gave us for the setup below. */
  if (prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0)
    child_fail(ctl, "setting securebits", errno);
  /* Raw system calls: glibc's wrappers broadcast the change to every thread
   * the supervisor had, which do not exist in this child, and wait forever. */
  if (syscall(SYS_setresgid, CR_SB_GID, CR_SB_GID, CR_SB_GID) < 0)
    child_fail(ctl, "setresgid", errno);
  if (syscall(SYS_setresuid, CR_SB_UID, CR_SB_UID, CR_SB_UID) < 0)
    child_fail(ctl, "setresuid", errno);

  /* PID 1 is a copy of the supervisor's memory (environment, keys, file
   * contents): non-dumpable makes /proc/1/{environ,mem,maps,fd} and ptrace
   * of it refused to the program, which has no capability over the
   * supervisor's user namespace. After the uid change, which would reset
   * it, and after the parent wrote our id maps (a non-dumpable child's
   * /proc files belong to root). */
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    child_fail(ctl, "making PID 1 non-dumpable", errno);

  /* Wait until we are in the sandbox's cgroups (cgroup v2: the parent
   * moves us while we set up our ids; v1: we joined above): the cgroup
   * namespace must be rooted there, and the program inherits them. */
  while ((n = read(ctl, &go, 1)) < 0 && errno == EINTR)
    ;
  if (n != 1 || go != 'c')
    _exit(CHILD_SETUP_FAILED);

  /* A cgroup namespace rooted at our cgroup hides the host's cgroup paths. */
  if (unshare(CLONE_NEWCGROUP) < 0)
    child_fail(ctl, "unsharing the cgroup namespace", errno);

  if ((rc = cr_mounts_build_child(a->plan, a->cfg->files, a->cfg->nfiles, a->cfg->root_files,
                                  a->cfg->nroot_files, &step)) < 0)
    child_fail(ctl, step, -rc);
  /* Input fds were copied; the program must never hold host files. */
  for (size_t i = 0; i < a->cfg->nfiles; i++)
    if (a->cfg->files[i].fd >= 0)
      close(a->cfg->files[i].fd);
  if ((rc = cr_mounts_pivot_child(a->plan, &step)) < 0)
    child_fail(ctl, step, -rc);

  /* Wipe our copies of the supervisor's command line and environment, so
   * /proc/1/cmdline (readable to anyone) shows nothing of the supervisor
   * either. Only now: the file names copied above may point into them. */
  if (a->host->arg_end > a->host->arg_start)
    memset((void *)a->host->arg_start, 0, a->host->arg_end - a->host->arg_start);
  if (a->host->env_end > a->host->env_start)
    memset((void *)a->host->env_start, 0, a->host->env_end - a->host->env_start);

  if (sethostname("sandbox", 7) < 0)
    child_fail(ctl, "sethostname", errno);
  bring_up_lo();

  int ws = open(CR_SB_WORKSPACE, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (ws < 0)
    child_fail(ctl, "opening /workspace", errno);

  payload_fds pf = {.in = a->cfg->stdin_fd, .out = a->cfg->stdout_fd, .err = a->cfg->stderr_fd,
                    .nextra = a->cfg->nextra};
  for (size_t i = 0; i < pf.nextra; i++)
    pf.extra[i] = a->cfg->extra_fds[i];
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  /* PID 1 learns of exits through a signalfd, polled together with the
   * control socket (whose hang-up means the supervisor is gone). */
  sigprocmask(SIG_BLOCK, &chld, NULL);
  pid_t payload = spawn_payload(a, &pf);
  if (payload < 0)
    child_fail(ctl, "starting the program", errno);
  /* The supervisor gets /workspace: it lists and copies out files through
   * this fd after everything here is gone, never through a path. */
  int pidfd = payload_pidfd(a, payload);
  send_msg2(ctl, CR_CTL_READY, 0, 0, NULL, ws, pidfd);
  close(ws);
  if (pidfd >= 0)
    close(pidfd);

  /* PID 1 keeps only the control socket: no stream of the program, no fd of
   * the supervisor. A one-shot PID 1 needs no capability any more; a
   * persistent one keeps them to set up the next program's walls (it is
   * unreachable from the program: non-dumpable, outside its Landlock
   * domain, ptrace denied by seccomp). */
  if (ctl > 0)
    syscall(SYS_close_range, 0, (unsigned)ctl - 1, 0);
  syscall(SYS_close_range, (unsigned)ctl + 1, ~0U, 0);

  if (!a->cfg->persistent)
    drop_caps(a->host->cap_last_cap);

  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0)
    child_fail(ctl, "creating PID 1's signalfd", errno);
  for (;;) {
    struct pollfd fds[2] = {{.fd = ctl, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      _exit(CHILD_SETUP_FAILED);
    }
    if (fds[1].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) > 0)
        ;
      int st;
      pid_t p;
      /* The program's own CPU time, read while it is a zombie (WNOWAIT):
       * a SIGKILL is a CPU-limit kill only if this is over the limit.
       * RLIMIT_CPU is per process: the whole tree's time, or wait4's
       * (which adds the children it reaped), would blame a program whose
       * workers used the time. */
      int32_t own_ms = -1;
      siginfo_t wi;
      memset(&wi, 0, sizeof wi);
      if (payload > 0 && waitid(P_PID, (id_t)payload, &wi, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          wi.si_pid == payload)
        own_ms = own_cpu_ms(payload, a->clk_tck);
      while ((p = waitpid(-1, &st, WNOHANG)) > 0)
        if (p == payload) {
          payload = 0;
          send_msg_full(ctl, CR_CTL_EXIT, 0, st, own_ms, NULL, -1, -1);
          /* A one-shot run is over when its program is: whatever it left
           * behind (daemons, double forks) is killed, and counted. */
          if (!a->cfg->persistent)
            kill_all_and_exit();
        }
    }
    if (fds[0].revents) {
      cr_ctl_msg m;
      int got[2 + CR_SB_MAX_EXTRA_FDS];
      size_t ngot = 0;
      union {
        char buf[CMSG_SPACE(sizeof(int) * (2 + CR_SB_MAX_EXTRA_FDS))];
        struct cmsghdr align;
      } u;
      struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
      struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                          .msg_controllen = sizeof u.buf};
      ssize_t got_n = recvmsg(ctl, &mh, MSG_CMSG_CLOEXEC);
      if (got_n == 0)
        _exit(0); /* the supervisor closed the sandbox */
      if (got_n < 0) {
        if (errno == EINTR)
          continue;
        _exit(CHILD_SETUP_FAILED);
      }
      for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
          size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
          for (size_t i = 0; i < k && ngot < sizeof got / sizeof *got; i++)
            memcpy(&got[ngot++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
      if (got_n == (ssize_t)sizeof m && m.type == CR_CTL_STOP) {
        for (size_t i = 0; i < ngot; i++)
          close(got[i]);
        kill_all_and_exit();
      }
      if (got_n == (ssize_t)sizeof m && m.type == CR_CTL_SIGNAL && payload > 0) {
        /* The whole process group: a driver's children (a shell's
         * foreground command) get the interrupt too. */
        kill(-payload, m.status);
      } else if (got_n == (ssize_t)sizeof m && m.type == CR_CTL_SPAWN && payload == 0 &&
                 ngot >= 2 && ngot - 2 == a->cfg->nextra) {
        payload_fds np = {.in = -1, .out = got[0], .err = got[1], .nextra = ngot - 2};
        for (size_t i = 0; i < np.nextra; i++)
          np.extra[i] = got[2 + i];
        payload = spawn_payload(a, &np);
        int e = errno;
        int npidfd = payload_pidfd(a, payload);
        send_msg2(ctl, payload > 0 ? CR_CTL_SPAWNED : CR_CTL_FAIL, payload > 0 ? 0 : e, 0,
                  payload > 0 ? NULL : "starting the program again", npidfd, -1);
        if (npidfd >= 0)
          close(npidfd);
        if (payload < 0)
          payload = 0;
      } else if (got_n == (ssize_t)sizeof m && m.type == CR_CTL_SPAWN) {
        /* Never silent: the supervisor waits for an answer. */
        send_msg(ctl, CR_CTL_FAIL, payload ? EBUSY : EINVAL, 0,
                 payload ? "starting the program again: the previous one is still running"
                         : "starting the program again: wrong fds",
                 -1);
      }
      for (size_t i = 0; i < ngot; i++)
        close(got[i]);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Parent side                                                               */

static int write_proc(pid_t pid, const char *file, const char *text, cr_err *err) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, file);
  int fd = open(p, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return cr_fail(err, errno, "opening %s", p);
  size_t n = strlen(text);
  ssize_t w = write(fd, text, n);
  int e = errno;
  close(fd);
  if (w != (ssize_t)n)
    return cr_fail(err, w < 0 ? e : EIO, "writing %s (\"%.*s\")", p, (int)strcspn(text, "\n"),
                   text);
  return 0;
}

/* Outside uids, as root: 0x40000000 + (our pid << 9 | slot), far above any
 * real user and unique across the corral processes of one pid namespace
 * (corral servers in separate containers that share the host's user
 * namespace may have the same pid, and then share uids). A slot is taken
 * for the sandbox's whole life and given back when it is released, so no
 * two live sandboxes of this process ever share a uid (the kernel's per-user
 * counters, pipe buffers and inotify instances among them, stay per
 * sandbox). 512 sandboxes at once per process; pids fit in 22 bits. */
#define CR_UID_SLOTS CR_SB_MAX_LIVE
static pthread_mutex_t g_uid_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_uid_used[CR_UID_SLOTS / 64];
static unsigned g_uid_next;

static int uid_slot_take(void) {
  int slot = -1;
  pthread_mutex_lock(&g_uid_mu);
  /* Round robin from the last one taken: a just-freed uid is reused last. */
  for (unsigned i = 0; i < CR_UID_SLOTS && slot < 0; i++) {
    unsigned k = (g_uid_next + i) % CR_UID_SLOTS;
    if (!(g_uid_used[k / 64] & (1ull << (k % 64)))) {
      g_uid_used[k / 64] |= 1ull << (k % 64);
      g_uid_next = k + 1;
      slot = (int)k;
    }
  }
  pthread_mutex_unlock(&g_uid_mu);
  return slot;
}

static void uid_slot_give(int slot) {
  if (slot < 0 || slot >= CR_UID_SLOTS)
    return;
  pthread_mutex_lock(&g_uid_mu);
  g_uid_used[slot / 64] &= ~(1ull << (slot % 64));
  pthread_mutex_unlock(&g_uid_mu);
}

int cr_sb_start(const cr_sb_config *cfg, cr_sb *sb, cr_err *err) {
  memset(sb, 0, sizeof *sb);
  sb->ctl_fd = sb->ws_fd = sb->payload_pidfd = -1;
  sb->uid_slot = -1;
  for (size_t i = 0; i < sizeof sb->cg_stat_fds / sizeof *sb->cg_stat_fds; i++)
    sb->cg_stat_fds[i] = -1;
  const cr_host_info *h = cr_host_get();
  if (g_plan_rc < 0)
    return cr_fail(err, 0, "%s", g_plan_err.msg);
  if (!h->userns)
    return cr_fail(err, 0, "user namespaces are disabled on this host "
                           "(/proc/sys/user/max_user_namespaces is 0): enable them to run "
                           "sandboxes");
  const struct sock_fprog *prog;
  if (cr_seccomp_program(&prog, err) < 0)
    return -1;
  /* The child inherits our supplementary groups and, with setgroups
   * denied, cannot drop them: root's group 0 would still open host files
   * readable by that group. A root supervisor has no use for them. */
  if (h->root && getgroups(0, NULL) > 0 && setgroups(0, NULL) < 0)
    return cr_fail(err, errno, "dropping the supervisor's supplementary groups");

  cr_mount_plan *plan = malloc(sizeof *plan);
  if (!plan)
    return cr_fail(err, ENOMEM, "planning the sandbox root");
  memcpy(plan, &g_plan_base, sizeof *plan);
  snprintf(plan->tmp_opts, sizeof plan->tmp_opts, "size=%llu,mode=1777,nr_inodes=65536",
           (unsigned long long)cfg->limits.tmp_bytes);
  snprintf(plan->ws_opts, sizeof plan->ws_opts, "size=%llu,mode=0755,nr_inodes=65536",
           (unsigned long long)cfg->limits.workspace_bytes);

  if (cr_cg_create(h, sb, &cfg->limits, err) < 0) {
    free(plan);
    return -1;
  }
  /* Honest about swap (without swap accounting a group limits RAM only)
   * and, on v1, about socket buffers (a kernel without kmem accounting
   * leaves them out of the limit). */
  if (!h->cg_memory)
    sb->enforced_by = "rlimit";
  else if (h->cg_mode == CR_CG_V2)
    sb->enforced_by = h->cg_swap ? "cgroup-v2" : "cgroup-v2 (no swap limit)";
  else if (!sb->cg_tcp_unaccounted)
    sb->enforced_by = h->cg_swap ? "cgroup-v1" : "cgroup-v1 (no swap limit)";
  else
    sb->enforced_by = h->cg_swap ? "cgroup-v1 (socket buffers unaccounted)"
                                 : "cgroup-v1 (no swap limit, socket buffers unaccounted)";
  sb->landlock = h->landlock_abi > 0;
  sb->landlock_abi = h->landlock_abi;

  int cg_join[2];
  if (cr_cg_open_join(sb, cg_join, err) < 0) {
    cr_cg_remove(sb);
    free(plan);
    return -1;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
    int e = errno;
    for (int i = 0; i < 2; i++)
      if (cg_join[i] >= 0)
        close(cg_join[i]);
    cr_cg_remove(sb);
    free(plan);
    return cr_fail(err, e, "creating the control socket");
  }

  /* One unprivileged id outside. As root, each sandbox gets its own uid far
   * above any real user: files it creates, RLIMIT_NPROC and the kernel's
   * per-user counters are then its own. Unprivileged, our own uid is the
   * only one we may map. */
  uid_t out_uid;
  gid_t out_gid;
  if (h->root) {
    sb->uid_slot = uid_slot_take();
    if (sb->uid_slot < 0) {
      for (int i = 0; i < 2; i++)
        if (cg_join[i] >= 0)
          close(cg_join[i]);
      close(sv[0]);
      close(sv[1]);
      cr_cg_remove(sb);
      free(plan);
      return cr_fail(err, EAGAIN, "this process already runs %d sandboxes at once, the most "
                                  "it can give a user id of their own; end some first",
                     CR_UID_SLOTS);
    }
    out_uid = (uid_t)(0x40000000u + ((((unsigned)getpid() & 0x3fffffu) << 9) |
                                     (unsigned)sb->uid_slot));
    out_gid = out_uid;
  } else {
    out_uid = geteuid();
    out_gid = getegid();
  }

  sb->out_uid = out_uid;
  sb->out_gid = out_gid;
  child_args args = {.cfg = cfg, .plan = plan, .prog = prog, .host = h, .ctl = sv[1],
                     .cg_join = {cg_join[0], cg_join[1]}, .root = h->root,
                     .clk_tck = sysconf(_SC_CLK_TCK)};
  clock_gettime(CLOCK_MONOTONIC, &sb->started);
  /* Every namespace but the cgroup one (entered by the child once it is in
   * its own cgroup): user (capabilities only over what it owns), mount (its
   * own root), pid (sees only itself; PID 1 dying kills all), ipc (no host
   * SysV/POSIX queues or shared memory), uts (its own hostname), net (no
   * interface but lo: no network, no host services on loopback or abstract
   * unix sockets). */
  long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
               CLONE_NEWNET | SIGCHLD;
  pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
  if (pid != 0)
    for (int i = 0; i < 2; i++)
      if (cg_join[i] >= 0)
        close(cg_join[i]);
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    cr_cg_remove(sb);
    uid_slot_give(sb->uid_slot);
    sb->uid_slot = -1;
    free(plan);
    if (e == EPERM || e == EINVAL)
      return cr_fail(err, e, "creating the sandbox's namespaces (clone); check that user "
                             "namespaces are allowed (`corral doctor`)");
    return cr_fail(err, e, "creating the sandbox's namespaces (clone)");
  }
  if (pid == 0) {
    close(sv[0]);
    run_init(&args);
  }
  close(sv[1]);
  free(plan);
  sb->init_pid = pid;
  sb->ctl_fd = sv[0];

  char map[64];
  int rc = 0;
  /* setgroups denied: an unprivileged gid map requires it (CVE-2014-8989),
   * and nothing in the sandbox may change its groups anyway. */
  rc = write_proc(pid, "setgroups", "deny", err);
  if (rc == 0) {
    snprintf(map, sizeof map, "%d %u 1\n", CR_SB_GID, (unsigned)out_gid);
    rc = write_proc(pid, "gid_map", map, err);
  }
  if (rc == 0) {
    snprintf(map, sizeof map, "%d %u 1\n", CR_SB_UID, (unsigned)out_uid);
    rc = write_proc(pid, "uid_map", map, err);
  }
  if (rc == 0 && write(sb->ctl_fd, "g", 1) != 1)
    rc = cr_fail(err, errno, "releasing the sandbox's init");
  /* cgroup v2: we move the child (on v1 it joined itself through the
   * "tasks" fds, which avoids the RCU grace period a move by another
   * process waits for). The child waits for "c" before it enters its cgroup
   * namespace and builds the root, so the namespace is rooted at the
   * sandbox's cgroup and nothing of the sandbox runs outside it. */
  if (rc == 0)
    rc = cr_cg_attach(sb, pid, err);
  if (rc == 0 && write(sb->ctl_fd, "c", 1) != 1)
    rc = cr_fail(err, errno, "releasing the sandbox's init");
  if (rc < 0) {
    cr_sb_release(sb);
    return -1;
  }
  return 0;
}

int cr_sb_read_ctl(cr_sb *sb, cr_ctl_msg *msg, cr_err *err) {
  if (sb->ctl_fd < 0)
    return 0;
  union {
    char buf[CMSG_SPACE(2 * sizeof(int))];
    struct cmsghdr align;
  } u;
  struct iovec iov = {.iov_base = msg, .iov_len = sizeof *msg};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                      .msg_controllen = sizeof u.buf};
  ssize_t n;
  while ((n = recvmsg(sb->ctl_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) < 0 && errno == EINTR)
    ;
  if (n < 0) {
    if (errno == EAGAIN)
      return cr_fail(err, EAGAIN, "reading the sandbox's control socket");
    return cr_fail(err, errno, "reading the sandbox's control socket");
  }
  /* READY: /workspace, then (persistent) the program's pidfd; SPAWNED:
   * the new program's pidfd. Anything else attached is closed. */
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      bool whole = n == (ssize_t)sizeof *msg;
      if (whole && msg->type == CR_CTL_READY && i == 0 && sb->ws_fd < 0) {
        sb->ws_fd = fd;
      } else if (whole && ((msg->type == CR_CTL_READY && i == 1) ||
                           (msg->type == CR_CTL_SPAWNED && i == 0))) {
        if (sb->payload_pidfd >= 0)
          close(sb->payload_pidfd);
        sb->payload_pidfd = fd;
      } else {
        close(fd);
      }
    }
  }
  if (n == 0) {
    close(sb->ctl_fd);
    sb->ctl_fd = -1;
    return 0;
  }
  if (n != (ssize_t)sizeof *msg)
    return cr_fail(err, 0, "malformed control message from the sandbox (%zd bytes)", n);
  msg->text[sizeof msg->text - 1] = '\0';
  return 1;
}

void cr_sb_kill(cr_sb *sb) {
  /* init_pid is our unreaped child, so the pid cannot have been reused. */
  if (sb->init_pid > 0)
    kill(sb->init_pid, SIGKILL);
}

static int send_cmd(cr_sb *sb, int type, int status, const int *fds, size_t nfds, int flags,
                    cr_err *err);

void cr_sb_stop(cr_sb *sb) {
  if (sb->init_pid <= 0 || sb->stop_deadline > 0)
    return;
  cr_err e;
  sb->stop_deadline = cr_now_s() + 1.0;
  /* No control socket (PID 1 is going anyway) or no room in it: the hard
   * way at once. MSG_DONTWAIT: the socket is blocking, and a PID 1 that
   * reads no more (stalled, or flooded with commands it has not read)
   * would otherwise hold the caller in sendmsg, timers and all; EAGAIN
   * then means the hard way. */
  if (send_cmd(sb, CR_CTL_STOP, 0, NULL, 0, MSG_DONTWAIT, &e) < 0)
    cr_sb_kill(sb);
}

void cr_sb_ending(cr_sb *sb) {
  if (sb->init_pid > 0 && sb->stop_deadline <= 0)
    sb->stop_deadline = cr_now_s() + 1.0;
}

int cr_sb_reap(cr_sb *sb, cr_sb_stats *st, cr_err *err) {
  memset(st, 0, sizeof *st);
  if (sb->init_pid <= 0)
    return cr_fail(err, 0, "reaping the sandbox: it was not started or was already reaped");
  int status;
  pid_t p;
  /* After cr_sb_stop or cr_sb_ending, PID 1 is killing and reaping; if it
   * has not finished by the deadline (it cannot be stopped from inside, but
   * a kernel under pressure can be slow), SIGKILL it: nothing may outlive
   * the run. */
  if (sb->stop_deadline > 0) {
    long pause_us = 200;
    while ((p = wait4(sb->init_pid, &status, WNOHANG, &st->rusage)) == 0 ||
           (p < 0 && errno == EINTR)) {
      if (cr_now_s() >= sb->stop_deadline) {
        cr_sb_kill(sb);
        break;
      }
      struct timespec ts = {0, pause_us * 1000};
      nanosleep(&ts, NULL);
      if (pause_us < 10000)
        pause_us *= 2;
    }
    if (p > 0)
      goto reaped;
  }
  while ((p = wait4(sb->init_pid, &status, 0, &st->rusage)) < 0 && errno == EINTR)
    ;
reaped:
  if (p < 0)
    return cr_fail(err, errno, "reaping the sandbox's init (pid %d)", (int)sb->init_pid);
  sb->init_pid = 0;
  st->init_status = status;
  cr_cg_collect(sb, st);
  if (st->memory_peak_bytes == 0)
    st->memory_peak_bytes = (uint64_t)st->rusage.ru_maxrss * 1024u;
  cr_cg_remove(sb);
  return 0;
}

void cr_sb_release(cr_sb *sb) {
  if (sb->init_pid > 0) {
    cr_sb_kill(sb);
    int status;
    while (waitpid(sb->init_pid, &status, 0) < 0 && errno == EINTR)
      ;
    sb->init_pid = 0;
  }
  if (sb->ctl_fd >= 0)
    close(sb->ctl_fd);
  if (sb->ws_fd >= 0)
    close(sb->ws_fd);
  if (sb->payload_pidfd >= 0)
    close(sb->payload_pidfd);
  sb->ctl_fd = sb->ws_fd = sb->payload_pidfd = -1;
  cr_cg_remove(sb);
  /* PID 1 is reaped: nothing runs under the uid any more. */
  if (sb->init_pid == 0) {
    uid_slot_give(sb->uid_slot);
    sb->uid_slot = -1;
  }
}

static int send_cmd(cr_sb *sb, int type, int status, const int *fds, size_t nfds, int flags,
                    cr_err *err) {
  if (sb->ctl_fd < 0 || sb->init_pid <= 0)
    return cr_fail(err, 0, "the sandbox is not running");
  cr_ctl_msg m;
  memset(&m, 0, sizeof m);
  m.type = type;
  m.status = status;
  struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
  union {
    char buf[CMSG_SPACE(sizeof(int) * (2 + CR_SB_MAX_EXTRA_FDS))];
    struct cmsghdr align;
  } u;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (nfds) {
    memset(&u, 0, sizeof u);
    mh.msg_control = u.buf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  ssize_t n;
  while ((n = sendmsg(sb->ctl_fd, &mh, MSG_NOSIGNAL | flags)) < 0 && errno == EINTR)
    ;
  if (n != (ssize_t)sizeof m)
    return cr_fail(err, n < 0 ? errno : EIO, "sending a command to the sandbox's init");
  return 0;
}

int cr_sb_signal(cr_sb *sb, int sig, cr_err *err) {
  return send_cmd(sb, CR_CTL_SIGNAL, sig, NULL, 0, 0, err);
}

int cr_sb_respawn(cr_sb *sb, int stdout_fd, int stderr_fd, const int *extra_fds, size_t nextra,
                  cr_err *err) {
  if (nextra > CR_SB_MAX_EXTRA_FDS)
    return cr_fail(err, EINVAL, "respawning the program: too many fds");
  int fds[2 + CR_SB_MAX_EXTRA_FDS] = {stdout_fd, stderr_fd};
  for (size_t i = 0; i < nextra; i++)
    fds[2 + i] = extra_fds[i];
  return send_cmd(sb, CR_CTL_SPAWN, 0, fds, 2 + nextra, 0, err);
}

void cr_sb_sample(cr_sb *sb, cr_sb_stats *st, bool reset_peak) {
  memset(st, 0, sizeof *st);
  cr_cg_collect(sb, st);
  if (reset_peak)
    cr_cg_reset_peak(sb);
}

pid_t cr_sb_program_pid(const cr_sb *sb) {
  if (sb->payload_pidfd < 0)
    return -1;
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", sb->payload_pidfd);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  const char *q = strstr(buf, "\nPid:");
  if (!q)
    return -1;
  long v = strtol(q + 5, NULL, 10);
  return v > 0 ? (pid_t)v : -1; /* -1 once the program has been reaped */
}

/* The walls (DESIGN.md section 4).
 *
 * One call, cr_sb_start, builds a fresh sandbox and starts one program in it:
 *
 *   supervisor (caller) ── clone(NEWUSER|NEWNS|NEWPID|NEWIPC|NEWUTS|NEWNET) ──▶ init (PID 1)
 *                                                                               │ mounts, pivot_root
 *                                                                               └─ fork ─▶ payload (PID 2)
 *                                                                                   setsid, rlimits, caps dropped,
 *                                                                                   no_new_privs, Landlock, fds
 *                                                                                   closed, seccomp, execve
 *
 * The caller owns the timers and the pipes; it reads control messages from
 * sb->ctl_fd with cr_sb_read_ctl, kills the whole tree with cr_sb_kill (PID 1
 * dies, so the kernel kills everything in the pid namespace), reaps with
 * cr_sb_reap and releases everything with cr_sb_release. Nothing in this layer
 * knows about languages, results or front ends.
 *
 * Thread safety: cr_sb_start may be called from several threads at once; a
 * cr_sb is used by one thread at a time. The child side of the clone calls
 * only async-signal-safe code (no malloc), so a multithreaded server may use it.
 */
#ifndef CORRAL_SANDBOX_H
#define CORRAL_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "util/err.h"

/* Inside the sandbox the program runs as this user, whose home and working
 * directory is /workspace. */
#define CR_SB_UID 1000
#define CR_SB_GID 1000
#define CR_SB_WORKSPACE "/workspace"

typedef struct cr_sb_limits {
  uint64_t memory_bytes;    /* cgroup memory (+swap) limit; 0 = none */
  uint32_t pids;            /* most tasks at once (cgroup pids, rlimit NPROC as second line); 0 = none */
  uint64_t cpu_ms;          /* CPU time per process (RLIMIT_CPU, rounded up to seconds); 0 = none */
  uint64_t fsize_bytes;     /* largest file a process may write (RLIMIT_FSIZE); 0 = none */
  uint32_t nofile;          /* open files per process (RLIMIT_NOFILE); 0 = 1024 */
  uint64_t tmp_bytes;       /* size of the /tmp tmpfs */
  uint64_t workspace_bytes; /* size of the /workspace tmpfs */
} cr_sb_limits;

/* A file to place in /workspace before the program starts: either copied from
 * fd (read from its current offset... to EOF, so pass a fresh fd) or written
 * from data. path is relative ("data/x.csv"), validated by the caller with
 * cr_sb_path_ok. mtime is set on the copy so a later scan can tell whether the
 * program changed it. */
typedef struct cr_sb_file {
  const char *path;
  int fd;                  /* -1 when data is used */
  const void *data;
  size_t len;
  mode_t mode;             /* 0 = 0644 */
  struct timespec mtime;   /* {0,0} = leave as created */
} cr_sb_file;

#define CR_SB_MAX_EXTRA_FDS 2

typedef struct cr_sb_config {
  const char *const *argv;  /* argv[0] is an absolute path inside the sandbox */
  const char *const *envp;  /* the whole environment; nothing is inherited */
  int stdin_fd;             /* -1: /dev/null */
  int stdout_fd;            /* write ends the program gets as fd 1 and 2 */
  int stderr_fd;
  /* More fds the program gets as 3, 4, ... (a session driver's protocol
   * pipes). */
  int extra_fds[CR_SB_MAX_EXTRA_FDS];
  size_t nextra;
  const cr_sb_file *files;  /* into /workspace */
  size_t nfiles;
  /* Into the read-only root, before it is made read-only: paths relative
   * to / ("/.corral/driver.py" is given as ".corral/driver.py"). */
  const cr_sb_file *root_files;
  size_t nroot_files;
  cr_sb_limits limits;
  /* A persistent sandbox (a session) outlives its program: PID 1 reports
   * the program's exit and waits for the supervisor to start another one
   * (cr_sb_respawn) or to close it. A one-shot sandbox ends with its
   * program. */
  bool persistent;
} cr_sb_config;

/* Which layer enforced what, for result.limits and `corral doctor`. */
typedef enum { CR_CG_NONE = 0, CR_CG_V1, CR_CG_V2 } cr_cg_mode;

typedef struct cr_sb_stats {
  uint64_t memory_peak_bytes;  /* cgroup peak, else the largest ru_maxrss */
  bool oom_killed;             /* the cgroup's OOM killer fired */
  uint64_t oom_kills;          /* how many times, so far */
  bool pids_limited;           /* a fork failed on the pids limit */
  struct rusage rusage;        /* the whole tree (PID 1 reaps everything; see cr_sb_stop) */
  int init_status;             /* wait status of PID 1 */
} cr_sb_stats;

typedef struct cr_sb {
  pid_t init_pid;      /* > 0 while the sandbox has not been reaped */
  int ctl_fd;          /* supervisor end of the control socket, -1 once closed */
  int ws_fd;           /* /workspace directory (arrives in the READY message), or -1 */
  cr_cg_mode cg_mode;
  char cg_mem[256];    /* cgroup directories created for this sandbox ("" if none) */
  char cg_pids[256];
  bool cg_tcp_unaccounted;   /* cgroup v1 without socket-buffer accounting (old kernel) */
  int cg_stat_fds[4];   /* counters kept open while a session samples them (-1 = closed) */
  /* static string: "cgroup-v2", "cgroup-v1", "rlimit", with what is missing
   * in parentheses ("cgroup-v1 (no swap limit)") */
  const char *enforced_by;
  bool landlock;             /* Landlock was applied */
  int landlock_abi;
  struct timespec started;
  uid_t out_uid;       /* the sandbox's user as the host sees it */
  gid_t out_gid;
  int uid_slot;        /* this process's slot for out_uid (root only), -1 if none */
  int payload_pidfd;   /* persistent: a pidfd of the current program, or -1 */
  double stop_deadline; /* after cr_sb_stop: when reaping falls back to cr_sb_kill */
} cr_sb;

/* Control messages from the sandbox. */
typedef enum cr_ctl_type {
  CR_CTL_NONE = 0,
  CR_CTL_READY = 1,   /* the walls are up and /workspace exists; ws_fd is set */
  CR_CTL_FAIL = 2,    /* a setup step failed: text names the step, err is the errno */
  CR_CTL_EXIT = 3,    /* the program ended: status is its wait status */
  /* supervisor -> PID 1 (persistent sandboxes) */
  CR_CTL_SIGNAL = 4,  /* send signal `status` to the program's process group */
  CR_CTL_SPAWN = 5,   /* start the program again with the fds attached */
  CR_CTL_SPAWNED = 6, /* PID 1 -> supervisor: the new program runs (its pidfd attached) */
  CR_CTL_STOP = 7,    /* kill every process of the sandbox, reap them all, exit */
} cr_ctl_type;

typedef struct cr_ctl_msg {
  int32_t type;
  int32_t err;
  int32_t status;
  /* EXIT: CPU time (ms) of the program's own process, all its threads but
   * not its children: what RLIMIT_CPU limits. -1 when unknown. */
  int32_t own_cpu_ms;
  char text[240];
} cr_ctl_msg;

/* Starts the sandbox and the program. On success the program may already be
 * running; on failure nothing is left behind. */
int cr_sb_start(const cr_sb_config *cfg, cr_sb *sb, cr_err *err);

/* Reads one control message (nonblocking use: call when ctl_fd is readable).
 * Returns 1 with *msg filled, 0 at EOF (PID 1 is gone or going), -1 on error.
 * A READY message's fd is stored in sb->ws_fd. */
int cr_sb_read_ctl(cr_sb *sb, cr_ctl_msg *msg, cr_err *err);

/* Persistent sandboxes: signal the program's process group (SIGINT for an
 * interrupt, SIGKILL to end a stuck program), and start the program again
 * after it ended (new stdout/stderr/extra fds; the same argv, environment,
 * walls and /workspace). Replies (EXIT, SPAWNED) arrive as control
 * messages. */
int cr_sb_signal(cr_sb *sb, int sig, cr_err *err);
int cr_sb_respawn(cr_sb *sb, int stdout_fd, int stderr_fd, const int *extra_fds, size_t nextra,
                  cr_err *err);
/* Current counters of a live sandbox (peak memory since the last reset, OOM
 * kills so far); reset_peak starts a new peak window (cgroup v1). */
void cr_sb_sample(cr_sb *sb, cr_sb_stats *st, bool reset_peak);

/* Kills every process of the sandbox (SIGKILL to PID 1 of its namespace).
 * Safe to call more than once and before reaping. */
void cr_sb_kill(cr_sb *sb);

/* Ends the run: PID 1 kills every process of the sandbox and reaps them
 * before it exits, so that their CPU time reaches the run's figures (a
 * SIGKILL to PID 1 takes them down with it unreaped, and uncounted).
 * cr_sb_reap falls back to cr_sb_kill when PID 1 has not exited within a
 * second. Safe to call more than once. */
void cr_sb_stop(cr_sb *sb);

/* One-shot sandboxes, once the program's exit was reported: PID 1 is
 * already ending the run as after cr_sb_stop (it kills and reaps the rest,
 * then exits), so cr_sb_reap gives it the same second before cr_sb_kill
 * instead of waiting as long as it takes. */
void cr_sb_ending(cr_sb *sb);

/* Waits for PID 1 (and so for the whole tree), collects the statistics and
 * removes the cgroups. */
int cr_sb_reap(cr_sb *sb, cr_sb_stats *stats, cr_err *err);

/* Kills (if still running), reaps, closes every fd and removes the cgroups.
 * Always safe; the struct can be reused after. */
void cr_sb_release(cr_sb *sb);

/* As root, each live sandbox of a process has an outside uid of its own;
 * there are this many per process (docs/sandbox.md). */
#define CR_SB_MAX_LIVE 512

/* Persistent sandboxes: the current program's pid as this process sees it
 * (from the pidfd PID 1 sent with READY/SPAWNED), or -1 when unknown or
 * already reaped. */
pid_t cr_sb_program_pid(const cr_sb *sb);

/* true when path is a safe relative path for /workspace: not empty, not
 * absolute, no "." or ".." component, no empty component, no NUL, at most
 * 4096 bytes and 32 levels deep. */
bool cr_sb_path_ok(const char *path);

/* What this host supports, detected once per process. */
typedef struct cr_host_info {
  bool userns;              /* user namespaces can be created by this process */
  bool seccomp;
  int landlock_abi;         /* 0 = not available */
  bool mount_setattr;       /* recursive read-only binds in one call */
  cr_cg_mode cg_mode;       /* how memory/pids limits are enforced */
  bool cg_memory;           /* a memory controller we can use */
  bool cg_pids;
  bool cg_swap;             /* memsw / memory.swap.max available */
  char cg_mem_base[256];    /* directory under which per-sandbox groups go */
  char cg_pids_base[256];
  bool root;                /* running as root: a fresh outside uid per sandbox */
  int cap_last_cap;
  char kernel[200];
  char cg_note[512];        /* why cgroups are or are not used */
  uintptr_t arg_start, arg_end, env_start, env_end;   /* this process's argv/environ strings */
} cr_host_info;

/* Detects once (thread-safe) and returns the cached result; never NULL. */
const cr_host_info *cr_host_get(void);

#endif

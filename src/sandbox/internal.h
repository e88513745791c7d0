/* Private to src/sandbox: the pieces cr_sb_start puts together. Functions
 * named *_child run in the cloned child: they must not allocate, lock or call
 * anything that is not async-signal-safe, and they report failure as a
 * negative errno plus a static string naming the step. */
#ifndef CORRAL_SANDBOX_INTERNAL_H
#define CORRAL_SANDBOX_INTERNAL_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"

/* --- seccomp.c ------------------------------------------------------------ */
/* The compiled allow-list, built once per process (libseccomp, then exported
 * as raw BPF so the child only needs one prctl). */
int cr_seccomp_program(const struct sock_fprog **prog, cr_err *err);
int cr_seccomp_load_child(const struct sock_fprog *prog);

/* --- landlock.c ----------------------------------------------------------- */
int cr_landlock_abi(void);
/* Read/execute everywhere, write only in /workspace, /tmp and /dev; signals
 * and abstract unix sockets scoped to the sandbox where the ABI allows. */
int cr_landlock_apply_child(int abi, const char **step);

/* --- cgroup.c ------------------------------------------------------------- */
void cr_cg_detect(cr_host_info *h);
int cr_cg_create(const cr_host_info *h, cr_sb *sb, const cr_sb_limits *lim, cr_err *err);
/* Writes the memory limit files of the group at dir (part of cr_cg_create;
 * separate so that tests can point it at a directory of their own). Every
 * failure fails, except a v1 kernel without socket-buffer accounting (no
 * memory.kmem.tcp.limit_in_bytes): then *tcp_unaccounted is set, for
 * enforced_by to say so. */
int cr_cg_limit_memory(const char *dir, cr_cg_mode mode, bool swap, uint64_t bytes,
                       bool *tcp_unaccounted, cr_err *err);
/* Opens, for the child, the files through which it moves itself into its
 * cgroups (cgroup v1 "tasks"): fds[] get -1 where the parent must attach
 * instead (cr_cg_attach). */
int cr_cg_open_join(const cr_sb *sb, int fds[2], cr_err *err);
int cr_cg_join_child(const int fds[2]);
int cr_cg_attach(const cr_sb *sb, pid_t pid, cr_err *err);
/* Reads the counters; the files stay open in sb until cr_cg_remove. */
void cr_cg_collect(cr_sb *sb, cr_sb_stats *st);
void cr_cg_reset_peak(cr_sb *sb);
void cr_cg_remove(cr_sb *sb);

/* --- mounts.c ------------------------------------------------------------- */
#define CR_MAX_BINDS 48

typedef struct cr_bind {
  char src[128];       /* host path */
  char dst[160];       /* path under the new root ("usr", "etc/ssl") */
  char link[256];      /* when set: make dst a symlink to this instead */
  bool is_dir;
  bool is_dev;         /* a device node: keeps dev, gets noexec */
  bool new_parents;    /* dst's parent directories are not made yet */
} cr_bind;

/* Everything the child needs to build the root, computed by the parent
 * (which may allocate and look at the host) so the child only executes it. */
typedef struct cr_mount_plan {
  char stage[64];                /* host directory the new root is mounted on */
  cr_bind binds[CR_MAX_BINDS];   /* /usr, /bin..., chosen /etc entries, devices */
  size_t nbinds;
  char tmp_opts[96];             /* tmpfs options of /tmp and /workspace */
  char ws_opts[96];
  bool use_mount_setattr;
} cr_mount_plan;

int cr_mount_plan_init(cr_mount_plan *plan, const cr_sb_limits *lim, cr_err *err);
/* Builds the root under plan->stage and copies the input files into
 * /workspace; leaves the cwd at the new root, not yet pivoted. */
int cr_mounts_build_child(const cr_mount_plan *plan, const cr_sb_file *files, size_t nfiles,
                          const cr_sb_file *root_files, size_t nroot, const char **step);
/* pivot_root into the new root, detach the old one, make / read-only. */
int cr_mounts_pivot_child(const cr_mount_plan *plan, const char **step);

#endif

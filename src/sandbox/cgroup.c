/* cgroups: the limits that hold for the whole sandbox, not per process
 * (memory of every process plus the tmpfs files they write; how many tasks
 * exist at once), and the accounting a result reports (peak memory, whether
 * the OOM killer fired, whether a fork hit the pids limit).
 *
 * cgroup v2 is preferred where this process may create children with the
 * memory and pids controllers; cgroup v1 is used where the host has it (on
 * the CI machine a child of the process's own memory cgroup enforces and
 * reports OOM). Without either, the run still happens with rlimits as the
 * only memory wall, and result.limits.enforced_by says so. */
#include "sandbox/internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int write_file(const char *dir, const char *name, const char *val) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  size_t n = strlen(val);
  ssize_t w = write(fd, val, n);
  int e = errno;
  close(fd);
  if (w < 0)
    return -e;
  return (size_t)w == n ? 0 : -EIO;
}

static int read_file(const char *dir, const char *name, char *buf, size_t size) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = read(fd, buf, size - 1);
  int e = errno;
  close(fd);
  if (n < 0)
    return -e;
  buf[n] = '\0';
  return 0;
}

/* "key N" lines (memory.events, pids.events, memory.oom_control). */
static uint64_t keyed(const char *text, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
      return strtoull(p + kl + 1, NULL, 10);
  }
  return 0;
}

/* The two files cgroup detection needs, read once (each read of
 * mountinfo costs ~40-100 us, and detection is on every CLI run's path). */
typedef struct proc_text {
  char mountinfo[16384];
  char cgroup[4096];
} proc_text;

static void slurp(const char *path, char *buf, size_t size) {
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  size_t n = 0;
  ssize_t r;
  while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
    n += (size_t)r;
  buf[n] = '\0';
  close(fd);
}

static bool has_item(const char *list, const char *item) {
  size_t il = strlen(item);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == il && strncmp(p, item, il) == 0)
      return true;
    p = e ? e + 1 : NULL;
  }
  return false;
}

/* Copies the line at `line` into buf (cut to fit) and returns the next
 * line, or NULL after the last. */
static const char *take_line(const char *line, char *buf, size_t size) {
  const char *nl = strchr(line, '\n');
  size_t n = nl ? (size_t)(nl - line) : strlen(line);
  if (n >= size)
    n = size - 1;
  memcpy(buf, line, n);
  buf[n] = '\0';
  return nl ? nl + 1 : NULL;
}

/* Mount point of the cgroup hierarchy holding `controller` (v1), or of the
 * cgroup2 hierarchy when controller is NULL. */
static int find_mount(const proc_text *t, const char *controller, char *out, size_t size) {
  const char *line = t->mountinfo;
  while (line && *line) {
    char buf[1024];
    line = take_line(line, buf, sizeof buf);
    char *sep = strstr(buf, " - ");
    if (!sep)
      continue;
    char mnt[512], fstype[64], src[128], opts[512];
    if (sscanf(buf, "%*s %*s %*s %*s %511s", mnt) != 1 ||
        sscanf(sep + 3, "%63s %127s %511s", fstype, src, opts) != 3)
      continue;
    bool hit = controller == NULL ? strcmp(fstype, "cgroup2") == 0
                                  : strcmp(fstype, "cgroup") == 0 && has_item(opts, controller);
    if (hit) {
      snprintf(out, size, "%s", mnt);
      return 0;
    }
  }
  return -ENOENT;
}

/* This process's path in the hierarchy of `controller` (v1) or in the v2
 * hierarchy (controller NULL), from /proc/self/cgroup. */
static int own_path(const proc_text *t, const char *controller, char *out, size_t size) {
  const char *line = t->cgroup;
  while (line && *line) {
    char buf[1024];
    line = take_line(line, buf, sizeof buf);
    char *c1 = strchr(buf, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c1 = *c2 = '\0';
    const char *ctrls = c1 + 1, *path = c2 + 1;
    bool hit = controller == NULL ? strcmp(buf, "0") == 0 && *ctrls == '\0'
                                  : has_item(ctrls, controller);
    if (hit) {
      snprintf(out, size, "%s", path);
      return 0;
    }
  }
  return -ENOENT;
}

/* May we create child groups under dir? Asked of the permission bits only
 * (a real mkdir probe costs a few hundred microseconds of every run); a
 * sandbox whose mkdir still fails says so in its error. */
static bool can_create(const char *dir) { return access(dir, W_OK) == 0; }

static bool has_word(const char *text, const char *word) {
  size_t wl = strlen(word);
  for (const char *p = text; (p = strstr(p, word)) != NULL; p += wl)
    if ((p == text || p[-1] == ' ') && (p[wl] == '\0' || p[wl] == ' ' || p[wl] == '\n'))
      return true;
  return false;
}

static void detect_v2(const proc_text *t, cr_host_info *h) {
  char mnt[256], path[256], base[512], ctrls[256];
  if (find_mount(t, NULL, mnt, sizeof mnt) < 0 || own_path(t, NULL, path, sizeof path) < 0)
    return;
  snprintf(base, sizeof base, "%s%s", mnt, strcmp(path, "/") == 0 ? "" : path);
  if (read_file(base, "cgroup.controllers", ctrls, sizeof ctrls) < 0)
    return;
  if (!has_word(ctrls, "memory") || !has_word(ctrls, "pids"))
    return;
  /* A v2 group that hands controllers to children may hold no process
   * itself; so the sandboxes go under a "corral" child of our group whose
   * subtree gets the controllers, and we stay where we are. */
  char parent[512];
  snprintf(parent, sizeof parent, "%s/corral", base);
  if (mkdir(parent, 0755) < 0 && errno != EEXIST)
    return;
  if (write_file(base, "cgroup.subtree_control", "+memory +pids") < 0) {
    snprintf(h->cg_note, sizeof h->cg_note,
             "cgroup v2 at %s has memory and pids, but they cannot be enabled for children "
             "(this process is not in a leaf it may delegate from)",
             base);
    return;
  }
  if (write_file(parent, "cgroup.subtree_control", "+memory +pids") < 0 || !can_create(parent))
    return;
  h->cg_mode = CR_CG_V2;
  h->cg_memory = h->cg_pids = true;
  char probe[600];
  snprintf(probe, sizeof probe, "%s/memory.swap.max", parent);
  h->cg_swap = access(probe, F_OK) == 0;
  snprintf(h->cg_mem_base, sizeof h->cg_mem_base, "%s", parent);
  snprintf(h->cg_pids_base, sizeof h->cg_pids_base, "%s", parent);
  snprintf(h->cg_note, sizeof h->cg_note, "cgroup v2 under %s", parent);
}

static void detect_v1(const proc_text *t, cr_host_info *h) {
  char mnt[256], path[256];
  if (find_mount(t, "memory", mnt, sizeof mnt) == 0 && own_path(t, "memory", path, sizeof path) == 0) {
    snprintf(h->cg_mem_base, sizeof h->cg_mem_base, "%s%s", mnt,
             strcmp(path, "/") == 0 ? "" : path);
    h->cg_memory = can_create(h->cg_mem_base);
    char probe[600];
    snprintf(probe, sizeof probe, "%s/memory.memsw.limit_in_bytes", h->cg_mem_base);
    h->cg_swap = access(probe, F_OK) == 0;
  }
  if (find_mount(t, "pids", mnt, sizeof mnt) == 0 && own_path(t, "pids", path, sizeof path) == 0) {
    snprintf(h->cg_pids_base, sizeof h->cg_pids_base, "%s%s", mnt,
             strcmp(path, "/") == 0 ? "" : path);
    h->cg_pids = can_create(h->cg_pids_base);
  }
  if (h->cg_memory || h->cg_pids) {
    h->cg_mode = CR_CG_V1;
    /* Said here so that `corral doctor` shows it; each run's enforced_by
     * says it again from what the run itself found. */
    char probe[600];
    snprintf(probe, sizeof probe, "%s/memory.kmem.tcp.limit_in_bytes", h->cg_mem_base);
    bool tcp = !h->cg_memory || access(probe, F_OK) == 0;
    snprintf(h->cg_note, sizeof h->cg_note, "cgroup v1: memory %s, pids %s%s",
             h->cg_memory ? h->cg_mem_base : "unavailable",
             h->cg_pids ? h->cg_pids_base : "unavailable",
             tcp ? "" : "; socket buffers unaccounted (a kernel without kmem accounting: "
                        "no memory.kmem.tcp.limit_in_bytes)");
  } else {
    h->cg_mem_base[0] = h->cg_pids_base[0] = '\0';
  }
}

/* Groups left by a supervisor that died before removing them (kill -9):
 * corral-<pid>-<n> whose pid no longer exists, and empty (rmdir refuses
 * otherwise). Swept once per process. */
static void sweep_stale(const char *base) {
  if (!base[0])
    return;
  DIR *d = opendir(base);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int pid;
    unsigned seq;
    if (sscanf(e->d_name, "corral-%d-%u", &pid, &seq) != 2 || pid <= 0 || pid == getpid())
      continue;
    if (kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", base, e->d_name);
    rmdir(p);
  }
  closedir(d);
}

void cr_cg_detect(cr_host_info *h) {
  h->cg_mode = CR_CG_NONE;
  snprintf(h->cg_note, sizeof h->cg_note,
           "no cgroup this process may create children in (run as root, or delegate a "
           "cgroup v2 subtree with the memory and pids controllers); rlimits only");
  proc_text *t = malloc(sizeof *t);
  if (!t)
    return;
  slurp("/proc/self/mountinfo", t->mountinfo, sizeof t->mountinfo);
  slurp("/proc/self/cgroup", t->cgroup, sizeof t->cgroup);
  detect_v2(t, h);
  if (h->cg_mode == CR_CG_NONE)
    detect_v1(t, h);
  free(t);
  if (h->cg_memory)
    sweep_stale(h->cg_mem_base);
  if (h->cg_pids && strcmp(h->cg_pids_base, h->cg_mem_base) != 0)
    sweep_stale(h->cg_pids_base);
}

int cr_cg_limit_memory(const char *dir, cr_cg_mode mode, bool swap, uint64_t bytes,
                       bool *tcp_unaccounted, cr_err *err) {
  char v[32];
  int rc;
  *tcp_unaccounted = false;
  snprintf(v, sizeof v, "%llu", (unsigned long long)bytes);
  if (mode == CR_CG_V2) {
    if ((rc = write_file(dir, "memory.max", v)) < 0)
      return cr_fail(err, -rc, "setting memory.max of cgroup %s", dir);
    /* No swap: a program over its limit is killed, not slowed to a crawl.
     * Where detection found swap accounting the file must take the value;
     * without it (enforced_by says "no swap limit") there is none to set. */
    if (swap && (rc = write_file(dir, "memory.swap.max", "0")) < 0)
      return cr_fail(err, -rc, "setting memory.swap.max of cgroup %s", dir);
    return 0;
  }
  if ((rc = write_file(dir, "memory.limit_in_bytes", v)) < 0)
    return cr_fail(err, -rc, "setting memory.limit_in_bytes of cgroup %s", dir);
  if (swap && (rc = write_file(dir, "memory.memsw.limit_in_bytes", v)) < 0)
    return cr_fail(err, -rc, "setting memory.memsw.limit_in_bytes of cgroup %s", dir);
  /* v1 does not count socket buffers in the limit above (v2 does):
   * without this, loopback TCP held 256 MiB in a 64 MiB sandbox, bounded
   * only by the host-wide TCP memory every socket shares. A quarter of the
   * limit, so the whole stays within 1.25x of it. Only a kernel without
   * kmem accounting (no such file) may go without, and the run then says
   * so in enforced_by; any other failure is a wall that did not go up. */
  char tcp[32];
  snprintf(tcp, sizeof tcp, "%llu", (unsigned long long)(bytes / 4));
  rc = write_file(dir, "memory.kmem.tcp.limit_in_bytes", tcp);
  if (rc == -ENOENT) {
    *tcp_unaccounted = true;
    return 0;
  }
  if (rc < 0)
    return cr_fail(err, -rc, "setting memory.kmem.tcp.limit_in_bytes (socket buffers) of cgroup %s",
                   dir);
  return 0;
}

static atomic_uint g_seq;

int cr_cg_create(const cr_host_info *h, cr_sb *sb, const cr_sb_limits *lim, cr_err *err) {
  sb->cg_mem[0] = sb->cg_pids[0] = '\0';
  sb->cg_mode = h->cg_mode;
  if (h->cg_mode == CR_CG_NONE)
    return 0;
  unsigned seq = atomic_fetch_add(&g_seq, 1);
  char name[64];
  snprintf(name, sizeof name, "corral-%d-%u", (int)getpid(), seq);
  char v[32];
  int rc;
  if (h->cg_memory) {
    snprintf(sb->cg_mem, sizeof sb->cg_mem, "%s/%s", h->cg_mem_base, name);
    if (mkdir(sb->cg_mem, 0755) < 0) {
      int e = errno;
      sb->cg_mem[0] = '\0';
      return cr_fail(err, e, "creating memory cgroup %s/%s", h->cg_mem_base, name);
    }
    if (lim->memory_bytes &&
        cr_cg_limit_memory(sb->cg_mem, h->cg_mode, h->cg_swap, lim->memory_bytes,
                           &sb->cg_tcp_unaccounted, err) < 0) {
      cr_cg_remove(sb);
      return -1;
    }
  }
  if (h->cg_pids && lim->pids) {
    if (h->cg_mode == CR_CG_V2) {
      snprintf(sb->cg_pids, sizeof sb->cg_pids, "%s", sb->cg_mem);
    } else {
      snprintf(sb->cg_pids, sizeof sb->cg_pids, "%s/%s", h->cg_pids_base, name);
      if (mkdir(sb->cg_pids, 0755) < 0) {
        int e = errno;
        sb->cg_pids[0] = '\0';
        cr_cg_remove(sb);
        return cr_fail(err, e, "creating pids cgroup %s/%s", h->cg_pids_base, name);
      }
    }
    snprintf(v, sizeof v, "%u", lim->pids);
    if ((rc = write_file(sb->cg_pids, "pids.max", v)) < 0) {
      cr_cg_remove(sb);
      return cr_fail(err, -rc, "setting pids.max in %s", sb->cg_pids);
    }
  }
  return 0;
}

/* Moving another process into a cgroup takes the global threadgroup lock,
 * which waits for an RCU grace period (3-15 ms measured here): more than a
 * whole sandbox setup. A single thread moving itself, by writing "0" to the
 * v1 "tasks" file, skips that lock. The file is opened here by the
 * supervisor, so the kernel checks the supervisor's credentials (those of
 * the opener), and the child only writes through the fd. */
int cr_cg_open_join(const cr_sb *sb, int fds[2], cr_err *err) {
  fds[0] = fds[1] = -1;
  if (sb->cg_mode != CR_CG_V1)
    return 0;
  const char *dirs[2] = {sb->cg_mem, sb->cg_pids};
  for (int i = 0; i < 2; i++) {
    if (!dirs[i][0])
      continue;
    char p[600];
    snprintf(p, sizeof p, "%s/tasks", dirs[i]);
    fds[i] = open(p, O_WRONLY | O_CLOEXEC);
    if (fds[i] < 0) {
      int e = errno;
      if (i == 1 && fds[0] >= 0)
        close(fds[0]);
      fds[0] = fds[1] = -1;
      return cr_fail(err, e, "opening %s", p);
    }
  }
  return 0;
}

int cr_cg_join_child(const int fds[2]) {
  for (int i = 0; i < 2; i++) {
    if (fds[i] < 0)
      continue;
    ssize_t w = write(fds[i], "0", 1);
    int e = errno;
    close(fds[i]);
    if (w != 1)
      return w < 0 ? -e : -EIO;
  }
  return 0;
}

int cr_cg_attach(const cr_sb *sb, pid_t pid, cr_err *err) {
  if (sb->cg_mode == CR_CG_V1)
    return 0; /* the child joined itself (cr_cg_join_child) */
  char v[32];
  snprintf(v, sizeof v, "%d", (int)pid);
  int rc;
  if (sb->cg_mem[0] && (rc = write_file(sb->cg_mem, "cgroup.procs", v)) < 0)
    return cr_fail(err, -rc, "moving the sandbox into cgroup %s", sb->cg_mem);
  if (sb->cg_pids[0] && strcmp(sb->cg_pids, sb->cg_mem) != 0 &&
      (rc = write_file(sb->cg_pids, "cgroup.procs", v)) < 0)
    return cr_fail(err, -rc, "moving the sandbox into cgroup %s", sb->cg_pids);
  return 0;
}

/* The counter files of a sandbox, by index in cg_stat_fds. */
enum { CGF_PEAK, CGF_OOM, CGF_PIDS, CGF_N };

/* Reads a counter file through an fd kept open for the sandbox's life: a
 * session samples them before and after every cell, and opening three
 * files each time was most of a cell's overhead. */
static int read_counter(cr_sb *sb, int which, char *buf, size_t size) {
  int *fd = &sb->cg_stat_fds[which];
  if (*fd < 0) {
    const char *dir = which == CGF_PIDS ? sb->cg_pids : sb->cg_mem;
    const char *name = which == CGF_PIDS  ? "pids.events"
                       : which == CGF_OOM ? (sb->cg_mode == CR_CG_V2 ? "memory.events"
                                                                     : "memory.oom_control")
                                          : (sb->cg_mode == CR_CG_V2 ? "memory.peak"
                                                                     : "memory.max_usage_in_bytes");
    if (!dir[0])
      return -ENOENT;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    *fd = open(p, (which == CGF_PEAK ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (*fd < 0 && which == CGF_PEAK)
      *fd = open(p, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
      return -errno;
  }
  ssize_t n = pread(*fd, buf, size - 1, 0);
  if (n < 0)
    return -errno;
  buf[n] = '\0';
  return 0;
}

void cr_cg_collect(cr_sb *sb, cr_sb_stats *st) {
  char buf[2048];
  if (sb->cg_mem[0]) {
    if (read_counter(sb, CGF_PEAK, buf, sizeof buf) == 0)
      st->memory_peak_bytes = strtoull(buf, NULL, 10);
    if (read_counter(sb, CGF_OOM, buf, sizeof buf) == 0)
      st->oom_kills = keyed(buf, "oom_kill");
  }
  st->oom_killed = st->oom_kills > 0;
  if (sb->cg_pids[0] && read_counter(sb, CGF_PIDS, buf, sizeof buf) == 0)
    st->pids_limited = keyed(buf, "max") > 0;
}

void cr_cg_reset_peak(cr_sb *sb) {
  /* v1 resets the high-water mark on any write; v2's memory.peak only per
   * open file (6.12+), so there the peak stays the sandbox's lifetime's. */
  char buf[64];
  if (sb->cg_mem[0] && sb->cg_mode == CR_CG_V1 && read_counter(sb, CGF_PEAK, buf, sizeof buf) == 0)
    if (pwrite(sb->cg_stat_fds[CGF_PEAK], "0", 1, 0) < 0)
      write_file(sb->cg_mem, "memory.max_usage_in_bytes", "0");
}

static void remove_dir(char *dir) {
  if (!dir[0])
    return;
  /* The last task may still be leaving the group for a moment after it was
   * reaped; retry briefly rather than leak the directory. */
  for (int i = 0; i < 200; i++) {
    if (rmdir(dir) == 0 || errno == ENOENT)
      break;
    if (errno != EBUSY)
      break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  dir[0] = '\0';
}

void cr_cg_remove(cr_sb *sb) {
  for (int i = 0; i < CGF_N; i++)
    if (sb->cg_stat_fds[i] >= 0) {
      close(sb->cg_stat_fds[i]);
      sb->cg_stat_fds[i] = -1;
    }
  if (sb->cg_pids[0] && strcmp(sb->cg_pids, sb->cg_mem) == 0)
    sb->cg_pids[0] = '\0';
  remove_dir(sb->cg_pids);
  remove_dir(sb->cg_mem);
}

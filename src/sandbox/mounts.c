/* The sandbox's filesystem: a fresh tmpfs root holding read-only, nosuid,
 * nodev binds of the host's system directories, a synthetic /etc with only
 * the harmless files a runtime needs, a minimal /dev, a fresh /proc with the
 * entries that expose the kernel covered, and size-capped tmpfs /tmp and
 * /workspace. Nothing else of the host is reachable after pivot_root: no
 * /home, /root, /run (sockets of host services), /var, /sys or host /tmp.
 *
 * The parent plans (it may allocate and look at the host); the child, in its
 * own user and mount namespaces, only executes the plan. */
#include "sandbox/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* /etc entries a runtime may need and that hold no secret: the dynamic
 * linker's cache (without it ld.so misses the multiarch library dirs),
 * Debian's alternatives symlinks, TLS roots (never /etc/ssl/private),
 * timezone, MIME and service
 * tables, matplotlib's and Python's site configuration, fonts. Everything else
 * of the host's /etc (shadow, ssh keys, machine-id, hostname) stays out. */
static const char *const etc_entries[] = {
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl/certs", "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf", "matplotlibrc", "localtime", "timezone", "mime.types",
    "protocols", "services", "fonts", "gai.conf", "bash.bashrc", "inputrc", "profile",
};

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom"};

static int add_bind(cr_mount_plan *p, const char *src, const char *dst, cr_err *err) {
  if (p->nbinds >= CR_MAX_BINDS)
    return cr_fail(err, 0, "planning the sandbox root: more than %d mounts", CR_MAX_BINDS);
  cr_bind *b = &p->binds[p->nbinds];
  memset(b, 0, sizeof *b);
  struct stat st;
  if (lstat(src, &st) < 0)
    return 0; /* absent on this host: nothing to bind */
  snprintf(b->src, sizeof b->src, "%s", src);
  snprintf(b->dst, sizeof b->dst, "%s", dst);
  if (S_ISLNK(st.st_mode)) {
    /* Keep symlinks as symlinks (/bin -> usr/bin on merged-/usr hosts,
     * /etc/localtime -> /usr/share/zoneinfo/...): the target resolves inside
     * the sandbox's own tree. */
    ssize_t n = readlink(src, b->link, sizeof b->link - 1);
    if (n <= 0 || (size_t)n >= sizeof b->link - 1)
      return 0;
    b->link[n] = '\0';
  } else if (S_ISDIR(st.st_mode)) {
    b->is_dir = true;
  } else if (S_ISREG(st.st_mode)) {
    b->is_dir = false;
  } else if (S_ISCHR(st.st_mode)) {
    b->is_dev = true;
  } else {
    return 0;
  }
  p->nbinds++;
  return 0;
}

int cr_mount_plan_init(cr_mount_plan *p, const cr_sb_limits *lim, cr_err *err) {
  memset(p, 0, sizeof *p);
  /* The new root is assembled on a tmpfs mounted (in the child's private
   * mount namespace only) over an existing host directory. */
  struct stat st;
  const char *stages[] = {"/tmp", "/mnt", "/var/tmp", "/run"};
  for (size_t i = 0; i < sizeof stages / sizeof *stages; i++)
    if (lstat(stages[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      snprintf(p->stage, sizeof p->stage, "%s", stages[i]);
      break;
    }
  if (!p->stage[0])
    return cr_fail(err, 0, "planning the sandbox root: no directory to build it on "
                           "(none of /tmp, /mnt, /var/tmp, /run exists)");
  int rc = add_bind(p, "/usr", "usr", err);
  static const char *const top[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
  for (size_t i = 0; rc == 0 && i < sizeof top / sizeof *top; i++) {
    char src[64];
    snprintf(src, sizeof src, "/%s", top[i]);
    rc = add_bind(p, src, top[i], err);
  }
  for (size_t i = 0; rc == 0 && i < sizeof etc_entries / sizeof *etc_entries; i++) {
    char src[128], dst[128];
    snprintf(src, sizeof src, "/etc/%s", etc_entries[i]);
    snprintf(dst, sizeof dst, "etc/%s", etc_entries[i]);
    rc = add_bind(p, src, dst, err);
  }
  /* Python's per-version site configuration (/etc/python3.11, ...). */
  DIR *d = opendir("/etc");
  if (d) {
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
      if (strncmp(e->d_name, "python3", 7) != 0 || strlen(e->d_name) > 40)
        continue;
      char src[128], dst[128];
      snprintf(src, sizeof src, "/etc/%s", e->d_name);
      snprintf(dst, sizeof dst, "etc/%s", e->d_name);
      rc = add_bind(p, src, dst, err);
    }
    closedir(d);
  }
  /* Parent directories under the new root ("etc/ssl" for "etc/ssl/certs")
   * are made once, by the first bind that needs them, rather than tried
   * again (EEXIST) for every entry. */
  for (size_t i = 0; i < p->nbinds; i++) {
    const char *dst = p->binds[i].dst;
    const char *last = strrchr(dst, '/');
    if (!last || memchr(dst, '/', (size_t)(last - dst)) == NULL)
      continue; /* at the top or directly under a directory of the root */
    size_t plen = (size_t)(last - dst);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = p->binds[j].new_parents && strncmp(p->binds[j].dst, dst, plen) == 0 &&
             p->binds[j].dst[plen] == '/';
    p->binds[i].new_parents = !seen;
  }
  for (size_t i = 0; rc == 0 && i < sizeof dev_nodes / sizeof *dev_nodes; i++) {
    char src[64], dst[64];
    snprintf(src, sizeof src, "/dev/%s", dev_nodes[i]);
    snprintf(dst, sizeof dst, "dev/%s", dev_nodes[i]);
    rc = add_bind(p, src, dst, err);
  }
  if (rc < 0)
    return rc;
  snprintf(p->tmp_opts, sizeof p->tmp_opts, "size=%llu,mode=1777,nr_inodes=65536",
           (unsigned long long)lim->tmp_bytes);
  snprintf(p->ws_opts, sizeof p->ws_opts, "size=%llu,mode=0755,nr_inodes=65536",
           (unsigned long long)lim->workspace_bytes);
  return 0;
}

/* ---- child side: no allocation, errors as -errno plus a step name ---- */

static size_t cat(char *out, size_t size, const char *a, const char *b) {
  size_t n = 0;
  for (const char *s = a; *s && n + 1 < size; s++)
    out[n++] = *s;
  if (n + 1 < size)
    out[n++] = '/';
  for (const char *s = b; *s && n + 1 < size; s++)
    out[n++] = *s;
  out[n] = '\0';
  return n;
}

static int make_ro(const char *path, bool dev, bool use_setattr) {
  /* nosuid always: a setuid binary under /usr must not be a way up (the
   * payload also has no_new_privs). nodev everywhere but the device binds. */
  if (use_setattr) {
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                                       (dev ? MOUNT_ATTR_NOEXEC : MOUNT_ATTR_NODEV)};
    if (syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &a, sizeof a) == 0)
      return 0;
    if (errno != ENOSYS && errno != EINVAL)
      return -errno;
  }
  /* Fallback for kernels before 5.12: remount the top mount read-only,
   * keeping the flags the host locked on it (a remount may not clear them).
   * Submounts under /usr are rare; they stay as the host mounted them. */
  struct statvfs sv;
  unsigned long keep = 0;
  if (statvfs(path, &sv) == 0) {
    if (sv.f_flag & ST_NOEXEC)
      keep |= MS_NOEXEC;
    if (sv.f_flag & ST_NODEV)
      keep |= MS_NODEV;
    if (sv.f_flag & ST_NOATIME)
      keep |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME)
      keep |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME)
      keep |= MS_RELATIME;
  }
  unsigned long fl = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | keep |
                     (dev ? MS_NOEXEC : MS_NODEV);
  if (mount(NULL, path, NULL, fl, NULL) < 0)
    return -errno;
  return 0;
}

static int write_text(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return -errno;
  size_t n = strlen(text);
  ssize_t w = write(fd, text, n);
  int e = errno;
  close(fd);
  if (w < 0)
    return -e;
  return (size_t)w == n ? 0 : -EIO;
}

static int mkdirs_for(char *path) {
  /* Creates every parent directory of path (path is modified, then
   * restored). */
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    int rc = mkdir(path, 0755);
    int e = errno;
    *p = '/';
    if (rc < 0 && e != EEXIST)
      return -e;
  }
  return 0;
}

static int copy_in(const char *dst, const cr_sb_file *f) {
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                 f->mode ? f->mode : 0644);
  if (out < 0)
    return -errno;
  int rc = 0;
  if (f->fd < 0) {
    const char *p = f->data;
    size_t left = f->len;
    while (left > 0) {
      ssize_t w = write(out, p, left);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        rc = -errno;
        break;
      }
      p += w;
      left -= (size_t)w;
    }
  } else {
    for (;;) {
      ssize_t n = sendfile(out, f->fd, NULL, 1 << 20);
      if (n == 0)
        break;
      if (n > 0)
        continue;
      if (errno == EINTR)
        continue;
      if (errno != EINVAL && errno != ENOSYS) {
        rc = -errno;
        break;
      }
      /* sendfile cannot read this kind of file (a pipe): plain copy. */
      char buf[16384];
      for (;;) {
        ssize_t r = read(f->fd, buf, sizeof buf);
        if (r == 0)
          break;
        if (r < 0) {
          if (errno == EINTR)
            continue;
          rc = -errno;
          break;
        }
        for (ssize_t off = 0; off < r;) {
          ssize_t w = write(out, buf + off, (size_t)(r - off));
          if (w < 0) {
            if (errno == EINTR)
              continue;
            rc = -errno;
            break;
          }
          off += w;
        }
        if (rc < 0)
          break;
      }
      break;
    }
  }
  if (rc == 0 && f->mode)
    fchmod(out, f->mode);
  if (rc == 0 && (f->mtime.tv_sec || f->mtime.tv_nsec)) {
    struct timespec ts[2] = {f->mtime, f->mtime};
    futimens(out, ts);
  }
  close(out);
  return rc;
}

static const char passwd_txt[] =
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group_txt[] = "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n";
static const char hosts_txt[] = "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n";
static const char nsswitch_txt[] = "passwd: files\ngroup: files\nhosts: files\n";

static int bind_all(const cr_mount_plan *plan, const char *R, bool devices, char *p, size_t psz,
                    const char **step) {
  int rc;
  for (size_t i = 0; i < plan->nbinds; i++) {
    const cr_bind *b = &plan->binds[i];
    if (b->is_dev != devices)
      continue;
    cat(p, psz, R, b->dst);
    if (b->link[0]) {
      *step = "creating a symlink in the root";
      if (b->new_parents && (rc = mkdirs_for(p)) < 0)
        return rc;
      if (symlink(b->link, p) < 0)
        return -errno;
      continue;
    }
    *step = "creating a bind mount point";
    if (devices) {
      /* created in step 1, while the root was writable */
    } else if (b->is_dir) {
      if (b->new_parents && (rc = mkdirs_for(p)) < 0)
        return rc;
      if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return -errno;
    } else {
      if (b->new_parents && (rc = mkdirs_for(p)) < 0)
        return rc;
      /* An empty regular file to mount on: mknod makes it without opening
       * it (no CAP_MKNOD needed for S_IFREG). */
      if (mknod(p, S_IFREG | 0644, 0) < 0)
        return -errno;
    }
    *step = "bind-mounting a host system path";
    if (mount(b->src, p, NULL, MS_BIND | MS_REC, NULL) < 0)
      return -errno;
    if (!plan->use_mount_setattr) {
      *step = "making a bind mount read-only, nosuid, nodev";
      if ((rc = make_ro(p, devices, false)) < 0)
        return rc;
    }
  }
  return 0;
}

int cr_mounts_build_child(const cr_mount_plan *plan, const cr_sb_file *files, size_t nfiles,
                          const cr_sb_file *root_files, size_t nroot, const char **step) {
  char p[4352];
  const char *R = plan->stage;
  int rc;

  /* Nothing we mount may propagate back to the host, and nothing the host
   * mounts later may appear in here. */
  *step = "making the mount tree private";
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return -errno;
  *step = "mounting the root tmpfs";
  if (mount("tmpfs", R, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755,nr_inodes=4096") < 0)
    return -errno;

  /* 1. Everything written into the root, while it is still writable. */
  static const char *const dirs[] = {"etc", "dev", "proc", "tmp", "workspace", "root"};
  *step = "creating the root's directories";
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    cat(p, sizeof p, R, dirs[i]);
    if (mkdir(p, 0755) < 0)
      return -errno;
  }
  /* /dev is a mount of its own so that its device binds can be made nosuid
   * and noexec in one call without touching the rest of the tree. */
  *step = "mounting /dev";
  cat(p, sizeof p, R, "dev");
  if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=0755") < 0)
    return -errno;
  *step = "writing the synthetic /etc";
  struct {
    const char *name, *text;
  } etc[] = {{"etc/passwd", passwd_txt},     {"etc/group", group_txt},
             {"etc/hosts", hosts_txt},       {"etc/hostname", "sandbox\n"},
             {"etc/resolv.conf", ""},        {"etc/nsswitch.conf", nsswitch_txt}};
  for (size_t i = 0; i < sizeof etc / sizeof *etc; i++) {
    cat(p, sizeof p, R, etc[i].name);
    if ((rc = write_text(p, etc[i].text, 0644)) < 0)
      return rc;
  }
  *step = "creating /dev links";
  struct {
    const char *name, *target;
  } links[] = {{"dev/fd", "/proc/self/fd"},      {"dev/stdin", "/proc/self/fd/0"},
               {"dev/stdout", "/proc/self/fd/1"}, {"dev/stderr", "/proc/self/fd/2"},
               {"dev/shm", "/tmp"}};
  for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
    cat(p, sizeof p, R, links[i].name);
    if (symlink(links[i].target, p) < 0)
      return -errno;
  }

  *step = "creating the device nodes' mount points";
  for (size_t i = 0; i < plan->nbinds; i++) {
    if (!plan->binds[i].is_dev)
      continue;
    cat(p, sizeof p, R, plan->binds[i].dst);
    if (mknod(p, S_IFREG | 0644, 0) < 0)
      return -errno;
  }

  *step = "writing corral's own files into the root";
  for (size_t i = 0; i < nroot; i++) {
    cat(p, sizeof p, R, root_files[i].path);
    if ((rc = mkdirs_for(p)) < 0 || (rc = copy_in(p, &root_files[i])) < 0)
      return rc;
  }

  /* 2. The host's system paths. */
  if ((rc = bind_all(plan, R, false, p, sizeof p, step)) < 0)
    return rc;

  /* 3. One call makes the root and every bind under it read-only, nosuid
   * and nodev, recursively (submounts of /usr included); the writable and
   * device mounts below come after it and keep their own flags. */
  if (plan->use_mount_setattr) {
    *step = "making the root and the system binds read-only, nosuid, nodev";
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    if (syscall(SYS_mount_setattr, AT_FDCWD, R, AT_RECURSIVE, &a, sizeof a) < 0)
      return -errno;
  }

  /* 4. Devices: the five harmless nodes, bound from the host (a user
   * namespace may not mknod). Writable by nature; nothing else is in /dev. */
  if ((rc = bind_all(plan, R, true, p, sizeof p, step)) < 0)
    return rc;
  if (plan->use_mount_setattr) {
    *step = "making the device binds nosuid, noexec";
    struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC};
    cat(p, sizeof p, R, "dev");
    if (syscall(SYS_mount_setattr, AT_FDCWD, p, AT_RECURSIVE, &a, sizeof a) < 0)
      return -errno;
  }

  /* 5. A fresh procfs shows only this pid namespace. What it still exposes
   * of the kernel (memory image, keys, timers, sysrq, symbols) is covered
   * with /dev/null; its kernel directories are hidden under an empty
   * read-only tmpfs, and /proc/sys is bound read-only. */
  *step = "mounting /proc";
  cat(p, sizeof p, R, "proc");
  if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
    return -errno;
  static const char *const proc_files[] = {"kcore", "keys", "timer_list", "sched_debug",
                                           "sysrq-trigger", "kallsyms", "latency_stats"};
  char null_path[128];
  cat(null_path, sizeof null_path, R, "dev/null");
  *step = "covering kernel files in /proc";
  for (size_t i = 0; i < sizeof proc_files / sizeof *proc_files; i++) {
    char name[64];
    cat(name, sizeof name, "proc", proc_files[i]);
    cat(p, sizeof p, R, name);
    if (access(p, F_OK) < 0)
      continue;
    if (mount(null_path, p, NULL, MS_BIND, NULL) < 0)
      return -errno;
  }
  static const char *const proc_dirs[] = {"irq", "bus", "fs", "acpi", "scsi"};
  *step = "hiding kernel directories in /proc";
  /* One empty read-only tmpfs over the first; the others are binds of it
   * (a bind keeps its read-only and no* flags), not a superblock each. */
  char cover[128] = "";
  for (size_t i = 0; i < sizeof proc_dirs / sizeof *proc_dirs; i++) {
    char name[64];
    cat(name, sizeof name, "proc", proc_dirs[i]);
    cat(p, sizeof p, R, name);
    if (access(p, F_OK) < 0)
      continue;
    if (cover[0]) {
      if (mount(cover, p, NULL, MS_BIND, NULL) < 0)
        return -errno;
      continue;
    }
    if (mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,nr_inodes=1,mode=0555") < 0)
      return -errno;
    cat(cover, sizeof cover, R, name);
  }
  *step = "making /proc/sys read-only";
  cat(p, sizeof p, R, "proc/sys");
  if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 ||
      (rc = make_ro(p, false, plan->use_mount_setattr)) < 0)
    return errno ? -errno : rc;

  /* 6. The only writable places: size-capped, nosuid, nodev. */
  *step = "mounting /tmp";
  cat(p, sizeof p, R, "tmp");
  if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, plan->tmp_opts) < 0)
    return -errno;
  *step = "mounting /workspace";
  cat(p, sizeof p, R, "workspace");
  if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, plan->ws_opts) < 0)
    return -errno;

  *step = "copying input files into /workspace";
  for (size_t i = 0; i < nfiles; i++) {
    char rel[4200];
    cat(rel, sizeof rel, "workspace", files[i].path);
    cat(p, sizeof p, R, rel);
    if ((rc = mkdirs_for(p)) < 0 || (rc = copy_in(p, &files[i])) < 0)
      return rc;
  }
  if (chdir(R) < 0) {
    *step = "entering the new root";
    return -errno;
  }
  return 0;
}

int cr_mounts_pivot_child(const cr_mount_plan *plan, const char **step) {
  /* pivot_root(".", ".") stacks the old root on top of the new one; the
   * lazy unmount then drops the old root (the whole host tree) from this
   * namespace. */
  *step = "pivot_root";
  if (syscall(SYS_pivot_root, ".", ".") < 0)
    return -errno;
  *step = "detaching the host's root";
  if (umount2(".", MNT_DETACH) < 0)
    return -errno;
  if (chdir("/") < 0)
    return -errno;
  /* The root itself (synthetic /etc, mount points) is read-only; only /tmp
   * and /workspace are writable. (With mount_setattr this was done before
   * the pivot, together with the system binds.) */
  *step = "making / read-only";
  if (!plan->use_mount_setattr &&
      mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
    return -errno;
  return 0;
}

#include "exec/workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <unistd.h>

int cr_ws_list_add(cr_ws_list *l, const char *path, uint64_t size, struct timespec mtime) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    cr_ws_file *v = realloc(l->v, cap * sizeof *v);
    if (!v)
      return -1;
    l->v = v;
    l->cap = cap;
  }
  char *p = strdup(path);
  if (!p)
    return -1;
  l->v[l->n++] = (cr_ws_file){.path = p, .size = size, .mtime = mtime};
  return 0;
}

void cr_ws_list_free(cr_ws_list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i].path);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int scan_dir(int dfd, const char *prefix, int depth, dev_t dev, cr_ws_list *out) {
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return -errno;
  }
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
      continue;
    size_t pl = strlen(prefix), nl = strlen(e->d_name);
    char *path = malloc(pl + nl + 2);
    if (!path) {
      rc = -ENOMEM;
      break;
    }
    if (pl) {
      memcpy(path, prefix, pl);
      path[pl] = '/';
      memcpy(path + pl + 1, e->d_name, nl + 1);
    } else {
      memcpy(path, e->d_name, nl + 1);
    }
    if (S_ISREG(st.st_mode)) {
      if (out->n >= CR_WS_MAX_FILES) {
        out->truncated = true;
      } else if (cr_ws_list_add(out, path, (uint64_t)st.st_size, st.st_mtim) < 0) {
        rc = -ENOMEM;
      }
    } else if (S_ISDIR(st.st_mode) && depth < 32) {
      int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0)
        rc = scan_dir(sub, path, depth + 1, dev, out);
    }
    free(path);
    if (rc < 0)
      break;
  }
  closedir(d);
  return rc;
}

int cr_ws_scan(int ws_fd, cr_ws_list *out, cr_err *err) {
  struct stat st;
  if (fstat(ws_fd, &st) < 0)
    return cr_fail(err, errno, "scanning /workspace");
  int d = openat(ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0)
    return cr_fail(err, errno, "scanning /workspace");
  int rc = scan_dir(d, "", 0, st.st_dev, out);
  if (rc < 0)
    return cr_fail(err, -rc, "scanning /workspace");
  return 0;
}

static const cr_ws_file *find(const cr_ws_list *l, const char *path) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i].path, path) == 0)
      return &l->v[i];
  return NULL;
}

static int add_change(cr_result *res, const char *path, uint64_t size, cr_file_change c) {
  cr_file_entry *v = realloc(res->files, (res->nfiles + 1) * sizeof *v);
  if (!v)
    return -1;
  res->files = v;
  char *p = strdup(path);
  if (!p)
    return -1;
  v[res->nfiles++] = (cr_file_entry){.path = p, .size = size, .change = c};
  return 0;
}

int cr_ws_diff(const cr_ws_list *before, const cr_ws_list *after, cr_result *res) {
  for (size_t i = 0; i < after->n; i++) {
    const cr_ws_file *a = &after->v[i];
    const cr_ws_file *b = find(before, a->path);
    if (!b) {
      if (add_change(res, a->path, a->size, CR_FILE_CREATED) < 0)
        return -1;
    } else if (b->size != a->size || b->mtime.tv_sec != a->mtime.tv_sec ||
               b->mtime.tv_nsec != a->mtime.tv_nsec) {
      if (add_change(res, a->path, a->size, CR_FILE_MODIFIED) < 0)
        return -1;
    }
  }
  /* A truncated scan cannot say what was deleted. */
  if (!after->truncated)
    for (size_t i = 0; i < before->n; i++)
      if (!find(after, before->v[i].path) &&
          add_change(res, before->v[i].path, 0, CR_FILE_DELETED) < 0)
        return -1;
  res->files_truncated = after->truncated;
  return 0;
}

/* Opens path (relative, components separated by '/') under dir one
 * component at a time without following symlinks. For the output side
 * (create true) missing directories are made. Returns an fd of the parent
 * directory and sets *leaf to the last component. */
static int walk_parent_owned(int dir, const char *path, bool create, const char **leaf, uid_t uid,
                             gid_t gid);

static int walk_parent(int dir, const char *path, bool create, const char **leaf) {
  return walk_parent_owned(dir, path, create, leaf, (uid_t)-1, (gid_t)-1);
}

static int walk_parent_owned(int dir, const char *path, bool create, const char **leaf, uid_t uid,
                             gid_t gid) {
  int cur = dup(dir);
  if (cur < 0)
    return -errno;
  const char *s = path;
  for (;;) {
    const char *slash = strchr(s, '/');
    if (!slash) {
      *leaf = s;
      return cur;
    }
    char comp[256];
    size_t n = (size_t)(slash - s);
    if (n == 0 || n >= sizeof comp) {
      close(cur);
      return -EINVAL;
    }
    memcpy(comp, s, n);
    comp[n] = '\0';
    if (create) {
      if (mkdirat(cur, comp, 0755) == 0) {
        if (uid != (uid_t)-1)
          fchownat(cur, comp, uid, gid, AT_SYMLINK_NOFOLLOW);
      } else if (errno != EEXIST) {
        int e = errno;
        close(cur);
        return -e;
      }
    }
    int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(cur);
    if (next < 0)
      return -e;
    cur = next;
    s = slash + 1;
  }
}

static int copy_fd(int in, int out) {
  for (;;) {
    ssize_t n = sendfile(out, in, NULL, 1 << 20);
    if (n == 0)
      return 0;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
  }
}

/* Opens out_dir as the copy writes into it: the directory itself, never a
 * symlink to one (the program's files would land wherever the link points
 * at copy time), and only when it is empty: the program chooses the names,
 * and in a directory that holds anything (a project, a git checkout) it
 * could replace a build script or add a hook that runs on the host later.
 * Returns the directory fd, or -1 with err filled. */
static int open_out_dir(const char *out_dir, cr_err *err) {
  int od = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (od < 0) {
    int e = errno;
    struct stat lst;
    if ((e == ELOOP || e == ENOTDIR) && lstat(out_dir, &lst) == 0 && S_ISLNK(lst.st_mode))
      return cr_fail(err, 0, "the output directory %s is a symbolic link: give the directory "
                             "itself (links are never followed)",
                     out_dir);
    return cr_fail(err, e, "opening the output directory %s", out_dir);
  }
  int probe = dup(od);
  DIR *pd = probe >= 0 ? fdopendir(probe) : NULL;
  if (!pd) {
    int e = errno;
    if (probe >= 0)
      close(probe);
    close(od);
    return cr_fail(err, e, "reading the output directory %s", out_dir);
  }
  struct dirent *de;
  bool empty = true;
  while ((de = readdir(pd)) != NULL)
    if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
      empty = false;
      break;
    }
  closedir(pd);
  if (!empty) {
    close(od);
    return cr_fail(err, 0, "the output directory %s is not empty: files are copied only into a "
                           "new or empty directory, never over or beside files already there",
                   out_dir);
  }
  return od;
}

int cr_ws_out_dir_check(const char *out_dir, cr_err *err) {
  struct stat lst;
  if (lstat(out_dir, &lst) < 0 && errno == ENOENT)
    return 0; /* made by the copy */
  int od = open_out_dir(out_dir, err);
  if (od < 0)
    return -1;
  close(od);
  return 0;
}

int cr_ws_copy_out(int ws_fd, const cr_result *res, const char *out_dir, uint64_t max_bytes,
                   cr_err *err) {
  uint64_t copied = 0;
  if (mkdir(out_dir, 0755) < 0 && errno != EEXIST)
    return cr_fail(err, errno, "creating the output directory %s", out_dir);
  /* Checked again now: it was empty before the run, but something on the
   * host may have written into it (or replaced it) meanwhile. */
  int od = open_out_dir(out_dir, err);
  if (od < 0)
    return -1;
  struct stat wst;
  if (fstat(ws_fd, &wst) < 0) {
    close(od);
    return cr_fail(err, errno, "copying files out: /workspace");
  }
  int rc = 0;
  for (size_t i = 0; i < res->nfiles && rc == 0; i++) {
    const cr_file_entry *f = &res->files[i];
    if (f->change == CR_FILE_DELETED)
      continue;
    const char *leaf;
    int sd = walk_parent(ws_fd, f->path, false, &leaf);
    if (sd < 0)
      continue; /* gone or replaced by a symlink since the scan: skip */
    int in = openat(sd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(sd);
    if (in < 0)
      continue;
    struct stat st;
    if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != wst.st_dev) {
      close(in);
      continue;
    }
    /* Hard links and sparse files could make a small workspace a large
     * copy on the host: the whole copy is bounded by the workspace size. */
    if (copied + (uint64_t)st.st_size > max_bytes) {
      close(in);
      rc = cr_fail(err, 0, "copying files out stopped at %llu bytes, the workspace size "
                           "(hard links or sparse files would have made it larger)",
                   (unsigned long long)copied);
      break;
    }
    copied += (uint64_t)st.st_size;
    int dd = walk_parent(od, f->path, true, &leaf);
    if (dd < 0) {
      close(in);
      rc = cr_fail(err, -dd, "copying %s out to %s", f->path, out_dir);
      break;
    }
    /* O_EXCL: never an existing file (the directory was empty; something
     * else may have written into it since). */
    int out = openat(dd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int e = errno;
    close(dd);
    if (out < 0) {
      close(in);
      rc = cr_fail(err, e, "copying %s out to %s", f->path, out_dir);
      break;
    }
    int c = copy_fd(in, out);
    close(in);
    close(out);
    if (c < 0)
      rc = cr_fail(err, -c, "copying %s out to %s", f->path, out_dir);
  }
  close(od);
  return rc;
}

int cr_ws_open(int ws_fd, const char *path, int flags, mode_t mode, uid_t uid, gid_t gid) {
  const char *leaf;
  bool create = (flags & O_CREAT) != 0;
  /* New files and directories are made as the sandbox's user: the
   * workspace's filesystem belongs to the sandbox's user namespace, where
   * our own uid (root) is not mapped (the kernel refuses with EOVERFLOW),
   * and the program must own what it is given. setfsuid is per thread, and
   * moving away from 0 also drops the file capabilities for the duration:
   * the supervisor writes with exactly the sandbox user's rights. */
  uid_t old_uid = (uid_t)-1;
  gid_t old_gid = (gid_t)-1;
  if (create && uid != (uid_t)-1) {
    old_gid = (gid_t)syscall(SYS_setfsgid, gid);
    old_uid = (uid_t)syscall(SYS_setfsuid, uid);
  }
  int d = walk_parent_owned(ws_fd, path, create, &leaf, (uid_t)-1, (gid_t)-1);
  int fd = -1, e = 0;
  if (d >= 0) {
    /* O_NONBLOCK: a FIFO the program made must not block the supervisor;
     * anything but a regular file or a directory is refused. */
    fd = openat(d, leaf, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
    e = errno;
    close(d);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))) {
      close(fd);
      fd = -1;
      e = EINVAL;
    }
    if (fd >= 0)
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }
  if (old_uid != (uid_t)-1) {
    syscall(SYS_setfsuid, old_uid);
    syscall(SYS_setfsgid, old_gid);
  }
  if (d < 0)
    return d;
  return fd < 0 ? -e : fd;
}

int cr_ws_read(int ws_fd, const char *path, size_t max_bytes, char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  int fd = cr_ws_open(ws_fd, path, O_RDONLY, 0, (uid_t)-1, (gid_t)-1);
  if (fd < 0)
    return fd;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) < 0)
    rc = -errno;
  else if (!S_ISREG(st.st_mode))
    rc = -EISDIR;
  else if ((uint64_t)st.st_size > max_bytes)
    rc = -EFBIG;
  char *buf = rc == 0 ? malloc((size_t)st.st_size + 1) : NULL;
  if (rc == 0 && !buf)
    rc = -ENOMEM;
  size_t n = rc == 0 ? (size_t)st.st_size : 0, got = 0;
  /* At most the size it had: a file the program is still writing is read
   * as far as it was. */
  while (got < n) {
    ssize_t k = read(fd, buf + got, n - got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  close(fd);
  if (rc < 0)
    return rc;
  buf[got] = '\0';
  *data = buf;
  *len = got;
  return 0;
}

int cr_ws_remove(int ws_fd, const char *path) {
  const char *leaf;
  int d = walk_parent(ws_fd, path, false, &leaf);
  if (d < 0)
    return d;
  int rc = unlinkat(d, leaf, 0);
  if (rc < 0 && errno == EISDIR)
    rc = unlinkat(d, leaf, AT_REMOVEDIR);
  int e = errno;
  close(d);
  return rc < 0 ? -e : 0;
}

int cr_ws_list_dir(int ws_fd, const char *path, cr_ws_dirent **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int d = path && *path ? cr_ws_open(ws_fd, path, O_RDONLY | O_DIRECTORY, 0, (uid_t)-1, (gid_t)-1)
                        : openat(ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0)
    return path && *path ? d : -errno;
  DIR *dir = fdopendir(d);
  if (!dir) {
    int e = errno;
    close(d);
    return -e;
  }
  cr_ws_dirent *v = NULL;
  size_t k = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(dir)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    struct stat st;
    if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    cr_ws_dirent *nv = realloc(v, (k + 1) * sizeof *nv);
    char *name = strdup(e->d_name);
    if (!nv || !name) {
      free(name);
      if (nv)
        v = nv;
      rc = -ENOMEM;
      break;
    }
    v = nv;
    v[k++] = (cr_ws_dirent){.name = name, .mode = st.st_mode, .size = (uint64_t)st.st_size};
  }
  closedir(dir);
  if (rc < 0) {
    cr_ws_dirents_free(v, k);
    return rc;
  }
  *out = v;
  *n = k;
  return 0;
}

void cr_ws_dirents_free(cr_ws_dirent *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i].name);
  free(v);
}

/* What a run did to /workspace, seen from outside through the directory fd
 * the sandbox handed over: which files it created, changed or deleted, and
 * copying them out. Every open is one path component relative to a directory
 * fd, with O_NOFOLLOW, and every file must be a regular file on the
 * workspace's own filesystem: a symlink or a hard link the program made to a
 * host file (leak.txt -> /etc/shadow) yields nothing of the host. */
#ifndef CORRAL_EXEC_WORKSPACE_H
#define CORRAL_EXEC_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "exec/result.h"
#include "util/err.h"

#define CR_WS_MAX_FILES 1000

typedef struct cr_ws_file {
  char *path;
  uint64_t size;
  struct timespec mtime;
} cr_ws_file;

typedef struct cr_ws_list {
  cr_ws_file *v;
  size_t n, cap;
  bool truncated;    /* more than CR_WS_MAX_FILES regular files */
} cr_ws_list;

/* Every regular file under ws_fd (depth first, at most CR_WS_MAX_FILES). */
int cr_ws_scan(int ws_fd, cr_ws_list *out, cr_err *err);
/* Appends to a list (used to describe the state before a run). */
int cr_ws_list_add(cr_ws_list *l, const char *path, uint64_t size, struct timespec mtime);
void cr_ws_list_free(cr_ws_list *l);
/* Fills res->files with what changed from before to after (created,
 * modified: size or mtime differ, deleted). Paths listed in `ignore` that did
 * not change are left out. */
int cr_ws_diff(const cr_ws_list *before, const cr_ws_list *after, cr_result *res);
/* Copies res->files that were created or modified from ws_fd into out_dir
 * (created if missing), at most max_bytes in all. out_dir must pass
 * cr_ws_out_dir_check at the time of the copy too (something may have
 * written into it during the run). */
int cr_ws_copy_out(int ws_fd, const cr_result *res, const char *out_dir, uint64_t max_bytes,
                   cr_err *err);
/* Whether out_dir may receive a run's files: it does not exist yet, or it is
 * an empty directory that is not a symlink. The same test the copy makes,
 * so a caller can refuse before the run instead of losing its files after. */
int cr_ws_out_dir_check(const char *out_dir, cr_err *err);

/* Opens path (relative, already validated with cr_sb_path_ok) under ws_fd
 * one component at a time, never following a symlink. With O_CREAT in
 * flags, missing parent directories are made and new files and directories
 * get uid/gid (the sandbox's user, so the program can change them). Returns
 * an fd or -errno (-ELOOP / -ENOTDIR when a component is a symlink). */
int cr_ws_open(int ws_fd, const char *path, int flags, mode_t mode, uid_t uid, gid_t gid);
typedef struct cr_ws_dirent {
  char *name;
  mode_t mode;          /* of the entry itself (symlinks are not followed) */
  uint64_t size;
} cr_ws_dirent;

/* The entries of one directory of the workspace (path NULL or "" for the
 * top; otherwise validated with cr_sb_path_ok), never following a symlink.
 * Returns 0 with *out (caller frees with cr_ws_dirents_free), or -errno. */
int cr_ws_list_dir(int ws_fd, const char *path, cr_ws_dirent **out, size_t *n);
void cr_ws_dirents_free(cr_ws_dirent *v, size_t n);

/* Reads a whole regular file of the workspace (path validated with
 * cr_sb_path_ok; never through a symlink, never blocking on a FIFO).
 * Returns 0 with *data (malloc'd, NUL-terminated after *len bytes; the
 * caller frees it), or -errno: -ENOENT, -EISDIR (not a regular file),
 * -EFBIG (more than max_bytes), -ENOMEM, or what opening it failed with. */
int cr_ws_read(int ws_fd, const char *path, size_t max_bytes, char **data, size_t *len);

/* Removes a file or an empty directory at path; -errno on failure. */
int cr_ws_remove(int ws_fd, const char *path);

#endif

/* Stateful sessions: a long-lived sandbox (the same walls and limits as a
 * one-shot run) running a language driver, where variables, files and
 * imported modules persist between executions. The HTTP, MCP and agent
 * front ends are thin adapters over this API; so is `corral session`.
 *
 *   cr_session_opts o; cr_session_opts_init(&o); o.language = "python";
 *   cr_session *s; cr_session_open(&o, &s, &err);
 *   cr_session_execute(s, "x = 6*7", 7, 0, NULL, &res, &err);   -> cr_result
 *   cr_session_execute(s, "x", 1, 0, NULL, &res, &err);          -> results[0] text/plain "42"
 *   cr_session_close(s);                                         nothing left on the host
 *
 * Executions on one session run one at a time, in the order they were
 * called (a FIFO ticket lock): callers from several threads queue, they are
 * never refused. Different sessions run in parallel. cr_session_interrupt
 * may be called from any thread while an execution runs.
 *
 * The manager (cr_session_mgr) adds ids, a server-wide maximum, idle TTLs,
 * a lifetime cap and a reaper thread. */
#ifndef CORRAL_SESSION_H
#define CORRAL_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "exec/exec.h"
#include "exec/result.h"
#include "util/err.h"

typedef struct cr_session cr_session;

typedef struct cr_session_opts {
  const char *language;       /* "python" (default), "node", "bash" or an alias */
  double timeout_s;           /* per-execution wall clock, default 30 */
  double grace_s;             /* after an interrupt, how long the driver has to stop (default 2) */
  uint64_t memory_bytes;      /* whole sandbox, default 256 MiB */
  uint32_t pids;              /* default 128 */
  uint64_t disk_bytes;        /* /workspace and /tmp, each; default 256 MiB */
  uint64_t output_limit;      /* bytes kept per stream per execution, default 1 MiB */
  uint64_t output_max;        /* bytes a stream may write in one execution, default 64 MiB */
  size_t max_code_bytes;      /* default 1 MiB */
  /* Executions that may wait for their turn behind the running one,
   * default 32; one more is refused at once (-1, errnum EAGAIN): each
   * waiting caller holds a thread, and a session runs one cell at a time. */
  uint32_t max_waiting;
  const char *const *env;     /* "KEY=VALUE" added to the sandbox's environment */
} cr_session_opts;

void cr_session_opts_init(cr_session_opts *o);

/* Starts the sandbox and the driver and waits until the driver is ready.
 * Invalid options: -1 with a message, nothing started. */
int cr_session_open(const cr_session_opts *o, cr_session **out, cr_err *err);

/* Runs one cell. timeout_s 0 = the session's default (it may only be
 * lowered, never raised above the session's). Returns -1 only for bad input
 * (empty or oversized code, closed session): the message says what to do.
 * Everything else is a result: ok, error (with the traceback classified),
 * timeout (the cell was interrupted and the state kept, or, when the driver
 * did not stop within the grace period, the driver was restarted and the
 * hint says the variables are gone), memory_limit (the driver was killed and
 * restarted: state lost, files kept), output_limit, interrupted. */
int cr_session_execute(cr_session *s, const char *code, size_t len, double timeout_s,
                       const cr_sink *sink, cr_result *res, cr_err *err);

/* What one caller may add to an execution (all optional). */
typedef struct cr_exec_extras {
  /* The caller's withdrawal flag, for cr_session_cancel: an execution whose
   * flag is set before its turn comes does not run (-1, errnum ECANCELED);
   * one that is running is interrupted. Never touches another caller's
   * execution. */
  atomic_bool *cancel;
  /* Hidden cells run in the same turn right before and after the code
   * (E2B's per-execution env_vars: set, run, restore), so no other caller's
   * execution can run in between. Their output is discarded; `after` runs
   * even when the code failed or was interrupted. */
  const char *before, *after;
  /* Called when the execution's turn has come, before anything of it runs
   * (a server takes its execution slot here, so that requests queued on a
   * busy session hold none); a negative return: it does not run (-1,
   * errnum EAGAIN, with the message the callback put in err). */
  int (*on_turn)(void *ctx, cr_err *err);
  /* Called when on_turn succeeded, at the end of the turn, before the next
   * execution's turn can start (the server gives its slot back here: given
   * back after the turn, the next cell of the same session would find it
   * still held and could be refused). */
  void (*on_turn_end)(void *ctx);
  void *turn_ctx;
} cr_exec_extras;

int cr_session_execute_ex(cr_session *s, const char *code, size_t len, double timeout_s,
                          const cr_sink *sink, const cr_exec_extras *x, cr_result *res,
                          cr_err *err);

/* Withdraws the execution that was given this flag (sets it; interrupts the
 * execution if it is the one running). Any thread. */
void cr_session_cancel(cr_session *s, atomic_bool *cancel);

/* Interrupts the running execution, if any (its result: status
 * interrupted, state kept). Returns true when there was one. */
bool cr_session_interrupt(cr_session *s);

/* The session is being closed: the running execution is interrupted and
 * every execution still waiting for its turn returns -1 without running
 * (err->errnum ESHUTDOWN, "closed before this code ran"), as does any later
 * one. */
void cr_session_shut(cr_session *s);

/* A fresh interpreter; files in /workspace are kept. Interrupts the running
 * execution, if any, and takes its turn after it (executions queued before
 * the restart still run first, in the old interpreter). */
int cr_session_restart(cr_session *s, cr_err *err);

/* Ends everything: driver, sandbox, cgroups, fds. NULL is fine. Must not be
 * called while another thread uses the session (the manager guarantees it). */
void cr_session_close(cr_session *s);

const char *cr_session_language(const cr_session *s);
/* How many times the driver was (re)started; 1 after open. */
unsigned cr_session_generation(const cr_session *s);
/* The /workspace directory fd of the session (file APIs use it with
 * one-component, O_NOFOLLOW opens; see exec/workspace.h). */
int cr_session_workspace_fd(const cr_session *s);
/* The sandbox user's ids as the host sees them (owner of uploaded files). */
void cr_session_ids(const cr_session *s, uid_t *uid, gid_t *gid);

/* ---- the manager ------------------------------------------------------ */

typedef struct cr_session_mgr cr_session_mgr;

typedef struct cr_mgr_opts {
  size_t max_sessions;        /* default 64 */
  double default_ttl_s;       /* idle time before a session is closed, default 600 */
  double max_lifetime_s;      /* absolute cap, default 86400 */
  double reap_interval_s;     /* how often the reaper looks, default 1 */
} cr_mgr_opts;

void cr_mgr_opts_init(cr_mgr_opts *o);
int cr_mgr_new(const cr_mgr_opts *o, cr_session_mgr **out, cr_err *err);
/* Closes every session and stops the reaper. */
void cr_mgr_free(cr_session_mgr *m);

/* ttl_s 0 = the manager's default. id receives a printable id ("s-...").
 * owner (may be NULL) is who may see the session: a get, list or close
 * with another owner behaves as if the session did not exist. At the
 * maximum: -1 with errnum EUSERS. */
int cr_mgr_open(cr_session_mgr *m, const cr_session_opts *o, double ttl_s, const char *owner,
                char id[40], cr_err *err);
/* Borrows a session: it stays open until cr_mgr_release, even if it expires
 * or is closed meanwhile (it is closed at release). NULL with a message for
 * an unknown, closed or foreign id. */
cr_session *cr_mgr_get(cr_session_mgr *m, const char *id, const char *owner, cr_err *err);
void cr_mgr_release(cr_session_mgr *m, cr_session *s);
/* Closes a session (now, or when its last borrower releases it). */
int cr_mgr_close(cr_session_mgr *m, const char *id, const char *owner, cr_err *err);

typedef struct cr_session_info {
  char id[40];
  const char *language;
  double created_at, expires_at, last_activity;   /* Unix time, seconds */
  bool busy;                                      /* borrowed now */
  unsigned long executions;
} cr_session_info;

/* The sessions of owner (all when owner is NULL); caller frees *out. */
int cr_mgr_list(cr_session_mgr *m, const char *owner, cr_session_info **out, size_t *n);
/* One session's info; -1 (not found) like cr_mgr_get. */
int cr_mgr_info(cr_session_mgr *m, const char *id, const char *owner, cr_session_info *out,
                cr_err *err);
/* Shuts every session (a draining server at the end of its grace period):
 * running executions are interrupted, queued ones do not run. */
void cr_mgr_shut_all(cr_session_mgr *m);
/* Counts an execution (for info). */
void cr_mgr_touch(cr_session_mgr *m, cr_session *s);
size_t cr_mgr_count(cr_session_mgr *m);
/* A place under the maximum for a session held outside the manager (an MCP
 * connection's toolbox): counted by cr_mgr_count and against every open,
 * in one check under the manager's lock. -1 when full (errnum EUSERS, as
 * for cr_mgr_open). Give it back with cr_mgr_unreserve. */
int cr_mgr_reserve(cr_session_mgr *m, cr_err *err);
void cr_mgr_unreserve(cr_session_mgr *m);
/* Closes expired sessions now (the reaper calls it); returns how many. */
size_t cr_mgr_reap(cr_session_mgr *m);

#endif

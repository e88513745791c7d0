/* One session: a persistent sandbox, its driver, and the execution loop.
 * The driver protocol is docs/session-protocol.md. */
#include "session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/exec.h"
#include "exec/outcap.h"
#include "exec/workspace.h"
#include "runtime/env.h"
#include "runtime/inventory.h"
#include "runtime/runtime.h"
#include "sandbox/sandbox.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/clock.h"

#define READY_TIMEOUT_S 20.0
#define MAX_FRAME (64u << 20)

struct cr_session {
  const cr_runtime *rt;
  cr_session_opts o;
  char **env;                 /* owned copy of the sandbox environment */
  char *argv[6];
  cr_sb sb;
  bool sb_started;
  int out_r, err_r;           /* the driver's stdout and stderr (nonblocking) */
  int req_w, ev_r;            /* requests to the driver; its events (nonblocking) */
  cr_buf evbuf;               /* partial event frames */
  unsigned generation;
  uint64_t next_id;
  bool driver_alive;
  bool broken;                /* the sandbox itself is gone: only close helps */
  bool shut;                  /* being closed: nothing more runs (under lock) */
  /* FIFO order of executions */
  pthread_mutex_t lock;
  pthread_cond_t cv;
  unsigned long ticket_next, ticket_serving;
  bool busy;
  int wake_fd;                /* eventfd: an interrupt request from another thread */
  int timer_fd;               /* the per-cell timer, reused */
  int stat_fd;                /* /proc/<driver>/stat, kept open for the driver's life */
  atomic_bool interrupt_req;
  atomic_bool *cur_cancel;    /* the running execution's withdrawal flag (under lock) */
  bool died_between;          /* the driver exited after its last cell: tell the next one */
};

void cr_session_opts_init(cr_session_opts *o) {
  memset(o, 0, sizeof *o);
  o->language = "python";
  o->timeout_s = CR_DEFAULT_TIMEOUT_S;
  o->grace_s = 2;
  o->memory_bytes = CR_DEFAULT_MEMORY_BYTES;
  o->pids = CR_DEFAULT_PIDS;
  o->disk_bytes = CR_DEFAULT_DISK_BYTES;
  o->output_limit = CR_DEFAULT_OUTPUT_LIMIT;
  o->output_max = CR_DEFAULT_OUTPUT_MAX;
  o->max_code_bytes = 1u << 20;
  o->max_waiting = 32;
}


static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

static void arm(int tfd, double secs) {
  struct itimerspec its = {0};
  if (secs < 1e-6)
    secs = 1e-6;
  its.it_value.tv_sec = (time_t)secs;
  its.it_value.tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9);
  timerfd_settime(tfd, 0, &its, NULL);
}

/* ---- frames ------------------------------------------------------------ */

/* Writes everything, but gives up after `secs`: a driver that stopped
 * reading its requests (the program faked the end of a cell and hangs)
 * must not hang the supervisor. */
static int write_all(int fd, const char *p, size_t n, double secs) {
  double deadline = cr_now_s() + secs;
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN) {
        double left = deadline - cr_now_s();
        if (left <= 0)
          return -ETIMEDOUT;
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        poll(&pf, 1, (int)(left * 1000) + 1);
        continue;
      }
      return -errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int send_request(cr_session *s, const char *type, uint64_t id, const char *code,
                        size_t len, double secs) {
  cr_buf body = {0};
  int rc = cr_buf_appendf(&body, "{\"type\":\"%s\",\"id\":%llu", type, (unsigned long long)id);
  if (rc == 0 && code) {
    char *enc = cr_b64_encode(code, len);
    rc = enc ? cr_buf_appendf(&body, ",\"code_b64\":\"%s\"", enc) : -1;
    free(enc);
  }
  if (rc == 0)
    rc = cr_buf_append(&body, "}", 1);
  cr_buf frame = {0};
  if (rc == 0)
    rc = cr_buf_appendf(&frame, "%zu\n", body.len);
  if (rc == 0)
    rc = cr_buf_append(&frame, body.data, body.len);
  if (rc == 0)
    rc = write_all(s->req_w, frame.data, frame.len, secs);
  else
    rc = -ENOMEM;
  cr_buf_free(&body);
  cr_buf_free(&frame);
  return rc;
}

/* Reads what the driver wrote and hands out complete frames, one per call.
 * Returns 1 with *ev set (caller decrefs), 0 when no complete frame is
 * buffered, -1 at EOF or on a malformed frame. */
static int next_event(cr_session *s, json_t **ev, bool *eof) {
  /* Read a bounded amount per call, and never buffer more than one frame's
   * worth: the driver runs the program's code, which can write anything to
   * this pipe as fast as it likes. */
  char tmp[65536];
  for (int i = 0; i < 16 && s->evbuf.len <= MAX_FRAME + 32; i++) {
    ssize_t n = read(s->ev_r, tmp, sizeof tmp);
    if (n > 0) {
      if (cr_buf_append(&s->evbuf, tmp, (size_t)n) < 0)
        return -1;
      continue;
    }
    if (n == 0)
      *eof = true;
    break;
  }
  char *nl = s->evbuf.len ? memchr(s->evbuf.data, '\n', s->evbuf.len < 24 ? s->evbuf.len : 24)
                          : NULL;
  if (!nl)
    return s->evbuf.len >= 24 ? -1 : 0;
  char *end;
  unsigned long long blen = strtoull(s->evbuf.data, &end, 10);
  if (end != nl || blen > MAX_FRAME)
    return -1;
  size_t hdr = (size_t)(nl - s->evbuf.data) + 1;
  if (s->evbuf.len < hdr + blen)
    return 0;
  json_error_t je;
  *ev = json_loadb(s->evbuf.data + hdr, (size_t)blen, 0, &je);
  memmove(s->evbuf.data, s->evbuf.data + hdr + blen, s->evbuf.len - hdr - (size_t)blen);
  s->evbuf.len -= hdr + (size_t)blen;
  s->evbuf.data[s->evbuf.len] = '\0';
  return *ev && json_is_object(*ev) ? 1 : -1;
}

/* ---- starting the driver ----------------------------------------------- */

/* Kills the driver and waits for its exit (PID 1 reports it), so that the
 * next start finds PID 1 free. At most 5 s; a sandbox that ends meanwhile
 * is marked broken. */
static void kill_driver(cr_session *s) {
  cr_err e2;
  cr_sb_signal(&s->sb, SIGKILL, &e2);
  double deadline = cr_now_s() + 5;
  while (cr_now_s() < deadline) {
    struct pollfd pf = {.fd = s->sb.ctl_fd, .events = POLLIN};
    if (poll(&pf, 1, 100) <= 0)
      continue;
    cr_ctl_msg m;
    int r = cr_sb_read_ctl(&s->sb, &m, &e2);
    if (r == 1 && m.type == CR_CTL_EXIT)
      break;
    if (r == 0) {
      s->broken = true;
      break;
    }
  }
  s->driver_alive = false;
}

static bool shut_now(cr_session *s);

/* Makes an interpreter ready: the one place that starts a driver, first in
 * a new sandbox, later (restart, crash, OOM) in the same sandbox. A warm,
 * pre-imported parent that forks the driver would replace the body of this
 * function and nothing else. */
static int driver_start(cr_session *s, cr_err *err) {
  int outp[2] = {-1, -1}, errp[2] = {-1, -1}, reqp[2] = {-1, -1}, evp[2] = {-1, -1};
  int rc = -1;
  /* The request channel is a socket so that writes can say MSG_NOSIGNAL: a
   * dead driver must not raise SIGPIPE in a library caller that did not
   * ignore it. The driver reads it like a pipe. */
  if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, reqp) < 0 || pipe2(evp, O_CLOEXEC) < 0) {
    cr_fail(err, errno, "creating the driver's pipes");
    goto out;
  }
  close_fd(&s->out_r);
  close_fd(&s->err_r);
  close_fd(&s->req_w);
  close_fd(&s->ev_r);
  close_fd(&s->stat_fd);
  cr_buf_reset(&s->evbuf);
  s->out_r = outp[0];
  s->err_r = errp[0];
  s->req_w = reqp[1];
  s->ev_r = evp[0];
  outp[0] = errp[0] = reqp[1] = evp[0] = -1;
  fcntl(s->out_r, F_SETFL, O_NONBLOCK);
  fcntl(s->err_r, F_SETFL, O_NONBLOCK);
  fcntl(s->ev_r, F_SETFL, O_NONBLOCK);
  fcntl(s->req_w, F_SETFL, O_NONBLOCK);

  int extra[2] = {reqp[0], evp[1]};
  bool first = !s->sb_started;
  if (!s->sb_started) {
    const cr_driver *d = cr_runtime_driver(s->rt);
    cr_sb_file rf[4];
    size_t nrf = d->nfiles < 4 ? d->nfiles : 4;
    for (size_t i = 0; i < nrf; i++)
      rf[i] = (cr_sb_file){.path = d->files[i].path, .fd = -1, .data = d->files[i].data,
                           .len = d->files[i].len, .mode = 0644};
    cr_sb_config cfg = {
        .argv = (const char *const *)s->argv,
        .envp = (const char *const *)s->env,
        .stdin_fd = -1,
        .stdout_fd = outp[1],
        .stderr_fd = errp[1],
        .extra_fds = {extra[0], extra[1]},
        .nextra = 2,
        .root_files = rf,
        .nroot_files = nrf,
        /* No RLIMIT_CPU: a driver lives for many cells and the limit
         * would add them up; each cell has a wall-clock timeout instead. */
        .limits = {.memory_bytes = s->o.memory_bytes,
                   .pids = s->o.pids,
                   .fsize_bytes = s->o.disk_bytes,
                   .nofile = 1024,
                   .tmp_bytes = s->o.disk_bytes,
                   .workspace_bytes = s->o.disk_bytes},
        .persistent = true,
    };
    if (cr_sb_start(&cfg, &s->sb, err) < 0)
      goto out;
    s->sb_started = true;
  } else if (cr_sb_respawn(&s->sb, outp[1], errp[1], extra, 2, err) < 0) {
    s->broken = true;
    goto out;
  }
  close_fd(&outp[1]);
  close_fd(&errp[1]);
  close_fd(&reqp[0]);
  close_fd(&evp[1]);
  s->generation++;

  /* Wait for the sandbox (first time) and the driver's "ready". */
  bool spawned = first;
  double deadline = cr_now_s() + READY_TIMEOUT_S;
  bool ready = false, ev_eof = false, exited = false, wake_seen = false;
  cr_buf early_err = {0};
  while (!ready) {
    double left = deadline - cr_now_s();
    if (left <= 0) {
      cr_fail(err, 0, "the %s driver did not start within %g s", s->rt->name, READY_TIMEOUT_S);
      break;
    }
    /* A close must not wait for a driver that hangs at start (up to the
     * ready timeout and the kill after it): the wake eventfd says a close
     * or an interrupt came. An interrupt is left pending for the cell (it
     * is not drained); the close is then looked for every 100 ms. */
    if (shut_now(s)) {
      cr_fail(err, 0, "the session was closed while its %s driver was starting", s->rt->name);
      err->errnum = ESHUTDOWN;
      break;
    }
    if (wake_seen && left > 0.1)
      left = 0.1;
    struct pollfd pf[4] = {{.fd = s->ev_r, .events = POLLIN},
                           {.fd = s->sb.ctl_fd, .events = POLLIN},
                           {.fd = s->err_r, .events = POLLIN},
                           {.fd = wake_seen ? -1 : s->wake_fd, .events = POLLIN}};
    int n = poll(pf, 4, (int)(left * 1000) + 1);
    if (n < 0 && errno != EINTR) {
      cr_fail(err, errno, "waiting for the driver");
      break;
    }
    if (pf[3].revents)
      wake_seen = true;
    if (pf[2].revents) {
      char tmp[4096];
      ssize_t r;
      while ((r = read(s->err_r, tmp, sizeof tmp)) > 0)
        if (early_err.len < 4096)
          cr_buf_append(&early_err, tmp, (size_t)r);
    }
    if (pf[1].revents) {
      cr_ctl_msg m;
      cr_err e2;
      int r = cr_sb_read_ctl(&s->sb, &m, &e2);
      if (r == 0) {
        s->broken = true;
        cr_fail(err, 0, "the session's sandbox ended while starting");
        break;
      }
      if (r == 1 && m.type == CR_CTL_FAIL) {
        cr_fail(err, m.err, "sandbox setup failed while %s", m.text);
        break;
      }
      if (r == 1 && m.type == CR_CTL_SPAWNED)
        spawned = true;
      /* An exit before SPAWNED is the previous driver's, reported late. */
      if (r == 1 && m.type == CR_CTL_EXIT && spawned) {
        exited = true;
        cr_fail(err, 0, "the %s driver exited before it was ready (wait status %d)%s%.*s",
                s->rt->name, m.status, early_err.len ? ": " : "", (int)early_err.len,
                early_err.data ? early_err.data : "");
        break;
      }
    }
    if (pf[0].revents) {
      json_t *ev = NULL;
      int r;
      while ((r = next_event(s, &ev, &ev_eof)) == 1) {
        const char *t = json_string_value(json_object_get(ev, "type"));
        if (t && strcmp(t, "ready") == 0)
          ready = true;
        json_decref(ev);
      }
      if (r < 0 || (ev_eof && !ready)) {
        /* The driver died or spoke nonsense: its exit arrives on ctl. */
        if (r < 0) {
          cr_fail(err, 0, "the %s driver sent a malformed frame while starting", s->rt->name);
          break;
        }
        close_fd(&s->ev_r);
        s->ev_r = -1;
        cr_fail(err, 0, "the %s driver closed its event pipe before it was ready%s%.*s",
                s->rt->name, early_err.len ? ": " : "", (int)early_err.len,
                early_err.data ? early_err.data : "");
        break;
      }
    }
  }
  cr_buf_free(&early_err);
  if (ready) {
    s->driver_alive = true;
    rc = 0;
  } else if (spawned && !exited && !s->broken) {
    /* A driver that hangs or misbehaves while starting (a cell can plant a
     * usercustomize.py that never returns) must not stay: PID 1 would
     * refuse every later start as busy, and the session would be stuck
     * for good. */
    kill_driver(s);
  }
out:
  close_fd(&outp[0]);
  close_fd(&outp[1]);
  close_fd(&errp[0]);
  close_fd(&errp[1]);
  close_fd(&reqp[0]);
  close_fd(&reqp[1]);
  close_fd(&evp[0]);
  close_fd(&evp[1]);
  return rc;
}

/* ---- open / close ------------------------------------------------------ */

int cr_session_open(const cr_session_opts *o, cr_session **out, cr_err *err) {
  *out = NULL;
  const cr_runtime *rt = cr_runtime_find(o->language ? o->language : "python");
  if (!rt)
    return cr_fail(err, 0, "unknown language '%s': use one of %s", o->language,
                   cr_runtime_list());
  const char *interp = cr_runtime_interpreter(rt);
  if (!interp)
    return cr_fail(err, 0, "%s is not installed on this host", rt->name);
  if (!(o->timeout_s > 0) || o->timeout_s > CR_MAX_TIMEOUT_S)
    return cr_fail(err, 0, "timeout %.3g s is out of range: give a value above 0 and at most %g",
                   o->timeout_s, CR_MAX_TIMEOUT_S);
  if (o->memory_bytes < (32ull << 20) || o->memory_bytes > CR_MAX_MEMORY_BYTES)
    return cr_fail(err, 0, "memory limit %llu MiB is out of range: give 32 MiB or more",
                   (unsigned long long)(o->memory_bytes >> 20));
  if (o->pids < 4 || o->output_limit < 64 || o->output_max < o->output_limit ||
      o->disk_bytes < (1ull << 20) || o->max_code_bytes == 0)
    return cr_fail(err, 0, "session limits out of range (pids >= 4, output limit >= 64 bytes, "
                           "disk >= 1 MiB)");
  for (const char *const *e = o->env; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || eq == *e)
      return cr_fail(err, 0, "environment entry '%.60s' is not KEY=VALUE", *e);
  }

  cr_session *s = calloc(1, sizeof *s);
  if (!s)
    return cr_fail(err, ENOMEM, "opening a session");
  s->rt = rt;
  s->o = *o;
  s->o.env = NULL;
  s->o.language = rt->name;
  if (s->o.grace_s <= 0)
    s->o.grace_s = 2;
  s->out_r = s->err_r = s->req_w = s->ev_r = s->stat_fd = -1;
  s->sb.ctl_fd = s->sb.ws_fd = -1;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  s->env = cr_env_build(o->env, true);
  const cr_driver *d = cr_runtime_driver(rt);
  s->argv[0] = strdup(interp);
  size_t k = 1;
  for (size_t i = 0; d->args[i] && k < 5; i++)
    s->argv[k++] = strdup(d->args[i]);
  s->argv[k] = NULL;
  bool oom = !s->env || s->wake_fd < 0 || s->timer_fd < 0;
  for (size_t i = 0; i < k; i++)
    oom |= s->argv[i] == NULL;
  if (oom) {
    cr_session_close(s);
    return cr_fail(err, ENOMEM, "opening a session");
  }
  if (driver_start(s, err) < 0) {
    cr_wrap(err, "starting a %s session", rt->name);
    cr_session_close(s);
    return -1;
  }
  *out = s;
  return 0;
}

void cr_session_close(cr_session *s) {
  if (!s)
    return;
  if (s->sb_started)
    cr_sb_release(&s->sb);
  close_fd(&s->out_r);
  close_fd(&s->err_r);
  close_fd(&s->req_w);
  close_fd(&s->ev_r);
  close_fd(&s->wake_fd);
  close_fd(&s->timer_fd);
  close_fd(&s->stat_fd);
  cr_buf_free(&s->evbuf);
  cr_env_free(s->env);
  for (size_t i = 0; i < 6 && s->argv[i]; i++)
    free(s->argv[i]);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cv);
  free(s);
}

const char *cr_session_language(const cr_session *s) { return s->rt->name; }
unsigned cr_session_generation(const cr_session *s) { return s->generation; }
int cr_session_workspace_fd(const cr_session *s) { return s->sb.ws_fd; }
void cr_session_ids(const cr_session *s, uid_t *uid, gid_t *gid) {
  *uid = s->sb.out_uid;
  *gid = s->sb.out_gid;
}

/* ---- FIFO turn-taking ------------------------------------------------- */

/* With s->lock held: a ticket, then the wait for it to be served. */
static void wait_turn_locked(cr_session *s) {
  unsigned long t = s->ticket_next++;
  while (t != s->ticket_serving)
    pthread_cond_wait(&s->cv, &s->lock);
  s->busy = true;
}

static void take_turn(cr_session *s) {
  pthread_mutex_lock(&s->lock);
  wait_turn_locked(s);
  pthread_mutex_unlock(&s->lock);
}

/* take_turn for an execution: refused (-1) when max_waiting executions
 * already wait behind the running one. */
static int take_turn_bounded(cr_session *s, cr_err *err) {
  pthread_mutex_lock(&s->lock);
  unsigned long queued = s->ticket_next - s->ticket_serving; /* the running one too */
  if (queued > s->o.max_waiting) {
    pthread_mutex_unlock(&s->lock);
    cr_fail(err, 0, "%u executions already wait for this session's turn, its maximum: wait for "
                    "them to finish, or use another session",
            s->o.max_waiting);
    err->errnum = EAGAIN; /* for callers to tell: refused for now, like a full queue */
    return -1;
  }
  wait_turn_locked(s);
  pthread_mutex_unlock(&s->lock);
  return 0;
}

static void end_turn(cr_session *s) {
  pthread_mutex_lock(&s->lock);
  s->busy = false;
  s->ticket_serving++;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
}

void cr_session_shut(cr_session *s) {
  pthread_mutex_lock(&s->lock);
  s->shut = true;
  pthread_mutex_unlock(&s->lock);
  cr_session_interrupt(s);
}

/* After take_turn: true when the session was shut while we waited. */
static bool shut_now(cr_session *s) {
  pthread_mutex_lock(&s->lock);
  bool shut = s->shut;
  pthread_mutex_unlock(&s->lock);
  return shut;
}


/* An execution that must not run: the session was shut. */
static int closed_before_run(cr_err *err) {
  cr_fail(err, 0, "the session was closed before this code ran: none of it ran");
  err->errnum = ESHUTDOWN; /* for callers to tell; not part of the message */
  return -1;
}

/* An execution its caller withdrew before it ran (a client that went away
 * while waiting for its turn). */
static int withdrawn_before_run(cr_err *err) {
  cr_fail(err, 0, "the execution was withdrawn before its code ran: none of it ran");
  err->errnum = ECANCELED;
  return -1;
}

/* Raises the interrupt for the execution holding the turn. Called with
 * s->lock held: the execution that was seen to hold the turn cannot end
 * and hand its turn on before the request is raised, so a late interrupt
 * is always stale by the time the next execution clears stale ones
 * (prepare_cell), never a stop of someone else's cell. */
static void raise_interrupt_locked(cr_session *s) {
  atomic_store(&s->interrupt_req, true);
  uint64_t one = 1;
  ssize_t w = write(s->wake_fd, &one, sizeof one);
  (void)w;
}

void cr_session_cancel(cr_session *s, atomic_bool *cancel) {
  if (!cancel)
    return;
  /* The flag first: an execution that takes its turn after this sees it
   * before it runs; one that already runs is found under the lock. */
  atomic_store(cancel, true);
  pthread_mutex_lock(&s->lock);
  if (s->busy && s->cur_cancel == cancel)
    raise_interrupt_locked(s);
  pthread_mutex_unlock(&s->lock);
}

bool cr_session_interrupt(cr_session *s) {
  pthread_mutex_lock(&s->lock);
  bool busy = s->busy;
  if (busy)
    raise_interrupt_locked(s);
  pthread_mutex_unlock(&s->lock);
  return busy;
}

/* ---- one execution ----------------------------------------------------- */

/* CPU of the driver and the children it waited for, from /proc, as the
 * supervisor sees it. Which process the driver is comes from PID 1 (a
 * pidfd), not from PID 1's list of children: processes a cell left behind
 * are re-parented to PID 1 and would be taken for the driver. The stat
 * file stays open for the driver's life: a cell reads it twice. */
static double driver_cpu_ms(cr_session *s) {
  if (s->sb.init_pid <= 0)
    return 0;
  char p[96], buf[512];
  if (s->stat_fd < 0) {
    pid_t pid = cr_sb_program_pid(&s->sb);
    if (pid <= 0 && s->sb.payload_pidfd < 0) {
      /* No pidfd (kernels before 5.3): PID 1's first child, which is the
       * driver unless a cell left processes behind. */
      snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)s->sb.init_pid,
               (int)s->sb.init_pid);
      int fd = open(p, O_RDONLY | O_CLOEXEC);
      ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
      if (fd >= 0)
        close(fd);
      buf[n > 0 ? n : 0] = '\0';
      pid = (pid_t)atoi(buf);
    }
    if (pid <= 0)
      return 0;
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    s->stat_fd = open(p, O_RDONLY | O_CLOEXEC);
    if (s->stat_fd < 0)
      return 0;
  }
  ssize_t n = pread(s->stat_fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *rp = strrchr(buf, ')');
  if (!rp)
    return 0;
  /* fields after ") ": state(3) ... utime(14) stime(15) cutime(16) cstime(17) */
  unsigned long long v[4] = {0};
  char *q = rp + 2;
  int field = 3;
  while (*q && field < 18) {
    if (field >= 14 && field <= 17)
      v[field - 14] = strtoull(q, NULL, 10);
    q = strchr(q, ' ');
    if (!q)
      break;
    q++;
    field++;
  }
  long hz = sysconf(_SC_CLK_TCK);
  return (double)(v[0] + v[1] + v[2] + v[3]) * 1000.0 / (double)(hz > 0 ? hz : 100);
}

/* Reads what is in a stream's pipe; *eof is set when the writer is gone
 * (the driver died), so the caller stops polling a pipe that would report
 * POLLHUP forever. */
static void drain_stream(int fd, cr_outcap *cap, int which, const cr_sink *sink, bool *over,
                         uint64_t max, bool *eof) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0 && eof)
      *eof = true;
    if (n <= 0)
      return;
    long head = cr_outcap_feed(cap, buf, (size_t)n);
    if (head > 0 && sink && sink->on_output)
      sink->on_output(sink->ctx, which, buf, (size_t)head);
    if (cap->total > max)
      *over = true;
  }
}

static int add_rich(cr_result *res, json_t *mime, bool main) {
  if (!json_is_object(mime))
    return 0;
  cr_rich *v = realloc(res->results, (res->nresults + 1) * sizeof *v);
  if (!v)
    return -1;
  res->results = v;
  json_incref(mime);
  v[res->nresults++] = (cr_rich){.mime = mime, .main = main};
  return 0;
}

static void set_limit_error(cr_result *res, cr_category cat, const char *detail,
                            const char *extra_hint) {
  cr_error_info_free(&res->error);
  if (cr_error_for_limit(cat, detail, &res->error) == 0) {
    res->has_error = true;
    if (extra_hint && res->error.hint) {
      char *h = NULL;
      if (asprintf(&h, "%s %s", extra_hint, res->error.hint) > 0) {
        free(res->error.hint);
        res->error.hint = h;
      }
    }
  }
}

/* With the turn held, before a cell: the sandbox is usable, a driver is
 * up, stale interrupts are cleared (when `clear`: the first cell of a turn;
 * the user's cell after a hidden `before` cell keeps what came in the
 * turn). -1 (err set) when the cell must not run; `cancel` (may be NULL)
 * is the caller's withdrawal flag. */
static int prepare_cell(cr_session *s, atomic_bool *cancel, bool clear, cr_err *err) {
  if (shut_now(s))
    return closed_before_run(err);
  if (s->broken)
    return cr_fail(err, 0, "the session's sandbox is gone: close it and open a new one");
  /* The driver may have died between cells (a timer in the program calling
   * os._exit): its exit message is waiting. Start a fresh one first. */
  for (;;) {
    struct pollfd cp = {.fd = s->sb.ctl_fd, .events = POLLIN};
    if (s->sb.ctl_fd < 0 || poll(&cp, 1, 0) <= 0)
      break;
    cr_ctl_msg m;
    cr_err e0;
    int r = cr_sb_read_ctl(&s->sb, &m, &e0);
    if (r == 0) {
      s->broken = true;
      break;
    }
    if (r == 1 && m.type == CR_CTL_EXIT && s->driver_alive) {
      /* Between cells (a timer of the program's calling os._exit, a thread
       * crashing): the next cell runs in a fresh interpreter, and its
       * result says so. */
      s->driver_alive = false;
      s->died_between = true;
    }
    if (r < 0)
      break;
  }
  if (s->broken)
    return cr_fail(err, 0, "the session's sandbox is gone: close it and open a new one");
  if (!s->driver_alive && driver_start(s, err) < 0)
    return -1;
  if (clear) {
    atomic_store(&s->interrupt_req, false);
    uint64_t drop;
    while (read(s->wake_fd, &drop, sizeof drop) > 0)
      ;
  }
  /* A close or a withdrawal that came while the driver (re)started: its
   * interrupt was just cleared, so it is honoured here, before anything
   * runs. */
  if (shut_now(s))
    return closed_before_run(err);
  if (cancel && atomic_load(cancel))
    return withdrawn_before_run(err);
  return 0;
}

/* Runs one cell; the turn is held and prepare_cell succeeded. Everything is
 * a result from here on. A `hidden` cell (an execution's `before`/`after`)
 * is not stopped by interrupts, only by a close: they belong to the user's
 * cell, and an interrupted restore would leave E2B's env_vars set for
 * every later cell. It leaves them pending for the user's cell and does
 * not take the "interpreter exited" note meant for that cell. */
static void run_cell(cr_session *s, const char *code, size_t len, double limit,
                     const cr_sink *sink, cr_result *res, bool hidden) {
  uint64_t drop;
  res->language = strdup(s->rt->name);
  res->timeout_s = limit;
  res->cpu_s = 0;
  res->memory_bytes = s->o.memory_bytes;
  res->output_bytes = s->o.output_limit;
  res->disk_bytes = s->o.disk_bytes;
  res->pids = s->o.pids;
  res->enforced_by = s->sb.enforced_by;
  res->landlock_abi = s->sb.landlock_abi;

  cr_outcap out, errc;
  cr_outcap_init(&out, (size_t)s->o.output_limit);
  cr_outcap_init(&errc, (size_t)s->o.output_limit);
  cr_ws_list before = {0};
  cr_err e2 = {0};
  if (s->sb.ws_fd >= 0)
    cr_ws_scan(s->sb.ws_fd, &before, &e2);
  cr_sb_stats st0;
  cr_sb_sample(&s->sb, &st0, true);
  double cpu0 = driver_cpu_ms(s);
  double t0 = cr_now_s();
  int tfd = s->timer_fd;
  uint64_t stale;
  while (read(tfd, &stale, sizeof stale) > 0)
    ;
  arm(tfd, limit);

  uint64_t id = ++s->next_id;
  json_t *error_ev = NULL;
  const char *done_status = NULL;
  int bash_exit = -1;
  bool done = false, died = false, timed_out = false, interrupted = false, flooded = false,
       sent_int = false, killed = false, ev_eof = false, out_eof = false, err_eof = false,
       malformed = false, more_events = false, wake_deferred = false;
  size_t rich_bytes = 0;
  int died_status = 0;

  if (!hidden && atomic_exchange(&s->interrupt_req, false)) {
    /* Interrupted before it was sent (during its hidden `before` cell, or
     * just now): it does not run at all. Sent, it would reach a driver not
     * yet running it, which ignores a SIGINT between cells; the grace
     * period would then end in a kill and the session's state. */
    while (read(s->wake_fd, &drop, sizeof drop) > 0)
      ;
    interrupted = done = true;
    done_status = "interrupted";
  } else if (send_request(s, "execute", id, code, len, limit) < 0) {
    died = true; /* the driver's request pipe is closed: it is gone */
  }
  while (!done && !died) {
    struct pollfd pf[6] = {
        {.fd = out_eof ? -1 : s->out_r, .events = POLLIN},
        {.fd = err_eof ? -1 : s->err_r, .events = POLLIN},
        {.fd = ev_eof ? -1 : s->ev_r, .events = POLLIN}, {.fd = s->sb.ctl_fd, .events = POLLIN},
        {.fd = tfd, .events = POLLIN},
        {.fd = wake_deferred ? -1 : s->wake_fd, .events = POLLIN},
    };
    /* Frames already read but not handled (the budget below ran out) make
     * no pipe readable: look again at once instead of sleeping on them. */
    if (poll(pf, 6, more_events ? 0 : -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    bool over = false;
    if (pf[0].revents)
      drain_stream(s->out_r, &out, 1, sink, &over, s->o.output_max, &out_eof);
    if (pf[1].revents)
      drain_stream(s->err_r, &errc, 2, sink, &over, s->o.output_max, &err_eof);
    if (pf[2].revents || more_events) {
      json_t *ev = NULL;
      int r, budget = 256; /* then back to poll: the timers must keep running */
      while (budget-- > 0 && (r = next_event(s, &ev, &ev_eof)) == 1) {
        const char *t = json_string_value(json_object_get(ev, "type"));
        json_int_t eid = json_integer_value(json_object_get(ev, "id"));
        if (t && (uint64_t)eid == id) {
          if (strcmp(t, "display") == 0 || strcmp(t, "result") == 0) {
            bool is_main = strcmp(t, "result") == 0;
            /* Rich outputs count against the cell's output maximum, and at
             * most 256 are kept: the supervisor's memory is outside every
             * cgroup. */
            char *dump = json_dumps(json_object_get(ev, "mime"), JSON_COMPACT);
            rich_bytes += dump ? strlen(dump) : 0;
            free(dump);
            if (rich_bytes > s->o.output_max || res->nresults >= 256) {
              over = true;
              json_decref(ev);
              continue;
            }
            add_rich(res, json_object_get(ev, "mime"), is_main);
            if (sink && sink->on_display && json_is_object(json_object_get(ev, "mime")))
              sink->on_display(sink->ctx, json_object_get(ev, "mime"), is_main);
          } else if (strcmp(t, "error") == 0) {
            json_decref(error_ev);
            json_incref(ev);
            error_ev = ev;
          } else if (strcmp(t, "done") == 0) {
            const char *st = json_string_value(json_object_get(ev, "status"));
            done_status = st && strcmp(st, "ok") == 0            ? "ok"
                          : st && strcmp(st, "interrupted") == 0 ? "interrupted"
                                                                  : "error";
            json_t *ec = json_object_get(ev, "exit_code");
            if (json_is_integer(ec))
              bash_exit = (int)json_integer_value(ec);
            /* After a SIGKILL the driver is gone whatever it wrote before:
             * wait for its exit (state lost), not for this. */
            if (!killed)
              done = true;
          }
        }
        json_decref(ev);
      }
      more_events = budget < 0;
      if (budget >= 0 && r < 0 && !killed) {
        /* A malformed frame: the driver cannot be trusted to go on. Its
         * exit is waited for as after any kill: 5 s, then the sandbox is
         * given up (the cell's own timer must not turn this into a
         * timeout). */
        cr_sb_signal(&s->sb, SIGKILL, &e2);
        killed = malformed = true;
        arm(tfd, 5);
      }
    }
    if (pf[3].revents) {
      cr_ctl_msg m;
      int r = cr_sb_read_ctl(&s->sb, &m, &e2);
      if (r == 1 && m.type == CR_CTL_EXIT) {
        died = true;
        died_status = m.status;
      } else if (r == 0) {
        died = true;
        s->broken = true;
      }
    }
    if (over && !flooded && !done) {
      flooded = true;
      if (!sent_int) {
        cr_sb_signal(&s->sb, SIGINT, &e2);
        sent_int = true;
        arm(tfd, s->o.grace_s);
      }
    }
    /* A cell that is done is past its limits: a timer or an interrupt in
     * the same wakeup must not signal the driver between cells. */
    if (hidden && pf[5].revents && !shut_now(s)) {
      /* Not for a hidden cell: left pending for the user's cell. */
      wake_deferred = true;
    } else if (!done && pf[5].revents && atomic_exchange(&s->interrupt_req, false)) {
      while (read(s->wake_fd, &drop, sizeof drop) > 0)
        ;
      interrupted = true;
      if (!sent_int) {
        cr_sb_signal(&s->sb, SIGINT, &e2);
        sent_int = true;
        arm(tfd, s->o.grace_s);
      }
    }
    if (!done && pf[4].revents) {
      uint64_t x;
      while (read(tfd, &x, sizeof x) > 0)
        ;
      if (!sent_int) {
        /* The cell's time is up: interrupt it, and give the driver a grace
         * period to stop and keep its state. */
        timed_out = true;
        cr_sb_signal(&s->sb, SIGINT, &e2);
        sent_int = true;
        arm(tfd, s->o.grace_s);
      } else if (!killed) {
        /* It did not stop (a C extension ignoring KeyboardInterrupt, a
         * blocked syscall): kill it; a fresh driver replaces it. */
        cr_sb_signal(&s->sb, SIGKILL, &e2);
        killed = true;
        arm(tfd, 5);
      } else {
        /* Not even SIGKILL produced an exit: the sandbox is unusable. */
        died = true;
        s->broken = true;
      }
    }
  }
  /* Everything the cell printed before "done" is in the pipes now. */
  bool over = false;
  drain_stream(s->out_r, &out, 1, sink, &over, UINT64_MAX, NULL);
  drain_stream(s->err_r, &errc, 2, sink, &over, UINT64_MAX, NULL);

  res->duration_ms = (cr_now_s() - t0) * 1000;
  cr_sb_stats st1;
  cr_sb_sample(&s->sb, &st1, false);
  res->memory_peak_bytes = st1.memory_peak_bytes;
  /* The OOM counter only grows: this cell's kills are the difference. */
  bool oom = st1.oom_kills > st0.oom_kills;
  double cpu1 = died ? cpu0 : driver_cpu_ms(s);
  res->cpu_ms = cpu1 > cpu0 ? cpu1 - cpu0 : 0;

  res->out = cr_outcap_render(&out, &res->out_len);
  res->err = cr_outcap_render(&errc, &res->err_len);
  res->out_truncated = cr_outcap_truncated(&out);
  res->err_truncated = cr_outcap_truncated(&errc);
  res->out_dropped = cr_outcap_dropped(&out);
  res->err_dropped = cr_outcap_dropped(&errc);

  char detail[256];
  if (died) {
    s->driver_alive = false;
    if (WIFSIGNALED(died_status))
      res->signal = WTERMSIG(died_status);
    else if (WIFEXITED(died_status)) {
      res->exited = true;
      res->exit_code = WEXITSTATUS(died_status);
    }
    const char *lost = "The interpreter was restarted: variables and imports are gone, files in "
                       "/workspace are kept.";
    if (s->broken) {
      res->status = CR_ST_SANDBOX;
      set_limit_error(res, CR_CAT_SANDBOX, "the session's sandbox ended", NULL);
    } else if (oom) {
      res->status = CR_ST_MEMORY;
      snprintf(detail, sizeof detail, "the session used more than its memory limit of %llu MiB",
               (unsigned long long)(s->o.memory_bytes >> 20));
      set_limit_error(res, CR_CAT_MEMORY, detail, lost);
    } else if (malformed) {
      res->status = CR_ST_ERROR;
      cr_error_info_free(&res->error);
      res->error = (cr_error_info){
          .category = CR_CAT_RUNTIME,
          .name = strdup("ProtocolError"),
          .message = strdup("the program wrote into the session driver's event channel (fd 4)"),
          .retryable = true,
          .hint = strdup(lost),
      };
      res->has_error = true;
    } else if (timed_out || killed) {
      res->status = timed_out ? CR_ST_TIMEOUT : flooded ? CR_ST_OUTPUT : CR_ST_INTERRUPTED;
      snprintf(detail, sizeof detail,
               "the cell ran past its time limit of %g s and did not stop when interrupted",
               limit);
      if (timed_out)
        set_limit_error(res, CR_CAT_TIMEOUT, detail, lost);
      else if (flooded)
        set_limit_error(res, CR_CAT_OUTPUT, "the cell's output exceeded the maximum", lost);
    } else {
      res->status = CR_ST_ERROR;
      cr_error_info_free(&res->error);
      res->error = (cr_error_info){
          .category = CR_CAT_RUNTIME,
          .name = strdup("InterpreterExited"),
          .message = strdup(res->exited ? "the interpreter exited during the cell"
                                        : "the interpreter was killed by a signal"),
          .retryable = true,
          .hint = strdup(lost),
      };
      res->has_error = true;
    }
    /* A fresh driver for the next cell, now, so that the session stays
     * usable; if that fails the next execute tries again. Make sure the
     * old one is gone first (a failed request write does not prove it). */
    if (!s->broken) {
      cr_err e3;
      cr_sb_signal(&s->sb, SIGKILL, &e3);
      driver_start(s, &e3);
    }
  } else if (timed_out) {
    res->status = CR_ST_TIMEOUT;
    snprintf(detail, sizeof detail, "the cell ran longer than its time limit of %g s", limit);
    set_limit_error(res, CR_CAT_TIMEOUT, detail,
                    "The cell was interrupted; the session and its variables are kept.");
  } else if (flooded) {
    res->status = CR_ST_OUTPUT;
    set_limit_error(res, CR_CAT_OUTPUT, "the cell's output exceeded the maximum; it was stopped",
                    NULL);
  } else if (interrupted && done_status && strcmp(done_status, "ok") != 0) {
    res->status = CR_ST_INTERRUPTED;
  } else if (done_status && strcmp(done_status, "ok") == 0) {
    res->status = CR_ST_OK;
    res->exited = true;
    res->exit_code = 0;
  } else {
    res->status = CR_ST_ERROR;
    res->exited = true;
    res->exit_code = bash_exit >= 0 ? bash_exit : 1;
    /* Classify from the traceback the driver sent, else from stderr. */
    cr_buf tb = {0};
    if (error_ev) {
      const char *t = json_string_value(json_object_get(error_ev, "traceback"));
      const char *name = json_string_value(json_object_get(error_ev, "name"));
      const char *value = json_string_value(json_object_get(error_ev, "value"));
      if (t && *t)
        cr_buf_append(&tb, t, strlen(t));
      else if (name)
        cr_buf_appendf(&tb, "%s%s%s\n", name, value && *value ? ": " : "", value ? value : "");
    }
    char *tail = NULL;
    size_t tl = 0;
    if (!tb.len)
      tail = cr_outcap_tail(&errc, &tl);
    char *inv = cr_inventory_packages(s->rt->name);
    cr_classify_input in = {.language = s->rt->name,
                            .err_text = tb.len ? tb.data : tail,
                            .err_len = tb.len ? tb.len : tl,
                            .exit_code = res->exit_code,
                            .installed = inv};
    if (cr_classify(&in, &res->error) == 0) {
      res->has_error = true;
      if (res->error.category == CR_CAT_MEMORY)
        res->status = CR_ST_MEMORY;
    }
    free(inv);
    free(tail);
    cr_buf_free(&tb);
  }

  if (s->sb.ws_fd >= 0) {
    cr_ws_list after = {0};
    if (cr_ws_scan(s->sb.ws_fd, &after, &e2) == 0)
      cr_ws_diff(&before, &after, res);
    cr_ws_list_free(&after);
  }
  json_decref(error_ev);
  cr_ws_list_free(&before);
  cr_outcap_free(&out);
  cr_outcap_free(&errc);
  struct itimerspec off = {0};
  timerfd_settime(tfd, 0, &off, NULL);
  if (!res->out)
    res->out = calloc(1, 1);
  if (!res->err)
    res->err = calloc(1, 1);
  if (s->died_between && !hidden && res->err) {
    /* First in stderr, where a model reads why its variables are gone. */
    static const char note[] =
        "[corral: the interpreter exited after the previous cell and was restarted for this "
        "one: variables and imports are gone, files in /workspace are kept]\n";
    char *e = malloc(sizeof note - 1 + res->err_len + 1);
    if (e) {
      memcpy(e, note, sizeof note - 1);
      memcpy(e + sizeof note - 1, res->err, res->err_len + 1);
      free(res->err);
      res->err = e;
      res->err_len += sizeof note - 1;
    }
    char *h = NULL;
    if (res->has_error && res->error.hint &&
        asprintf(&h, "The interpreter had exited after the previous cell and was restarted: "
                     "variables and imports from earlier cells are gone. %s",
                 res->error.hint) > 0) {
      free(res->error.hint);
      res->error.hint = h;
    }
    s->died_between = false;
  }
}

/* A hidden cell of an execution's turn: output and result discarded. */
static void hidden_cell(cr_session *s, const char *code, bool clear) {
  cr_err e;
  cr_result r;
  cr_result_init(&r);
  if (prepare_cell(s, NULL, clear, &e) == 0)
    run_cell(s, code, strlen(code), 10, NULL, &r, true);
  cr_result_free(&r);
}

int cr_session_execute(cr_session *s, const char *code, size_t len, double timeout_s,
                       const cr_sink *sink, cr_result *res, cr_err *err) {
  return cr_session_execute_ex(s, code, len, timeout_s, sink, NULL, res, err);
}

int cr_session_execute_ex(cr_session *s, const char *code, size_t len, double timeout_s,
                          const cr_sink *sink, const cr_exec_extras *x, cr_result *res,
                          cr_err *err) {
  cr_result_init(res);
  if (!code || len == 0)
    return cr_fail(err, 0, "empty code: send the code to run");
  if (len > s->o.max_code_bytes)
    return cr_fail(err, 0, "the code is %zu bytes; this session accepts at most %zu", len,
                   s->o.max_code_bytes);
  if (timeout_s < 0 || timeout_s > CR_MAX_TIMEOUT_S)
    return cr_fail(err, 0, "timeout %.3g s is out of range", timeout_s);
  double limit = timeout_s > 0 && timeout_s < s->o.timeout_s ? timeout_s : s->o.timeout_s;
  atomic_bool *cancel = x ? x->cancel : NULL;

  if (take_turn_bounded(s, err) < 0)
    return -1;
  pthread_mutex_lock(&s->lock);
  s->cur_cancel = cancel;
  pthread_mutex_unlock(&s->lock);
  int rc = 0;
  bool turned = false;
  /* Closed or withdrawn while waiting: nothing of it runs, not even its
   * hidden cells, and it takes no server slot. Checked again once the
   * slot is had: waiting for it can take long. */
  if (shut_now(s)) {
    rc = closed_before_run(err);
  } else if (cancel && atomic_load(cancel)) {
    rc = withdrawn_before_run(err);
  } else if (x && x->on_turn && x->on_turn(x->turn_ctx, err) < 0) {
    err->errnum = EAGAIN;
    rc = -1;
  } else if ((turned = x && x->on_turn) && shut_now(s)) {
    rc = closed_before_run(err);
  } else if (cancel && atomic_load(cancel)) {
    rc = withdrawn_before_run(err);
  } else {
    bool before = x && x->before && !shut_now(s);
    if (before)
      hidden_cell(s, x->before, true);
    rc = prepare_cell(s, cancel, !before, err);
    if (rc == 0)
      run_cell(s, code, len, limit, sink, res, false);
    /* The restore must not be interrupted by a late withdrawal. */
    pthread_mutex_lock(&s->lock);
    s->cur_cancel = NULL;
    pthread_mutex_unlock(&s->lock);
    if (x && x->after && !shut_now(s))
      hidden_cell(s, x->after, false);
  }
  pthread_mutex_lock(&s->lock);
  s->cur_cancel = NULL;
  pthread_mutex_unlock(&s->lock);
  if (turned && x->on_turn_end)
    x->on_turn_end(x->turn_ctx);
  end_turn(s);
  return rc;
}

int cr_session_restart(cr_session *s, cr_err *err) {
  /* A restart is asked for to get out of a stuck or unwanted cell: stop the
   * one running instead of waiting for its time limit. */
  cr_session_interrupt(s);
  take_turn(s);
  int rc = 0;
  if (shut_now(s)) {
    rc = cr_fail(err, 0, "the session was closed before the restart");
    err->errnum = ESHUTDOWN;
  } else if (s->broken) {
    rc = cr_fail(err, 0, "the session's sandbox is gone: close it and open a new one");
  } else {
    if (s->driver_alive)
      kill_driver(s);
    if (s->broken)
      rc = cr_fail(err, 0, "the session's sandbox ended during the restart");
    else
      rc = driver_start(s, err);
    /* Asked for: the next cell needs no note that the interpreter exited. */
    if (rc == 0)
      s->died_between = false;
  }
  end_turn(s);
  return rc;
}

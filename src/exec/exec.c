/* One execution: validate the spec, start the sandbox, drain both streams
 * while the timers run, then say honestly what happened. */
#include "exec/exec.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/expect.h"
#include "exec/outcap.h"
#include "exec/workspace.h"
#include "runtime/env.h"
#include "runtime/inventory.h"
#include "runtime/runtime.h"
#include "sandbox/sandbox.h"

void cr_exec_spec_init(cr_exec_spec *s) {
  memset(s, 0, sizeof *s);
  s->language = "python";
  s->timeout_s = CR_DEFAULT_TIMEOUT_S;
  s->memory_bytes = CR_DEFAULT_MEMORY_BYTES;
  s->pids = CR_DEFAULT_PIDS;
  s->disk_bytes = CR_DEFAULT_DISK_BYTES;
  s->output_limit = CR_DEFAULT_OUTPUT_LIMIT;
  s->output_max = CR_DEFAULT_OUTPUT_MAX;
  s->cancel_fd = -1;
}

static bool env_key_ok(const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv)
    return false;
  if (!(isalpha((unsigned char)kv[0]) || kv[0] == '_'))
    return false;
  for (const char *p = kv; p < eq; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return false;
  return true;
}


/* p lies below dir ("a/b" below "a"): dir would have to be a directory. */
static bool path_is_under(const char *p, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(p, dir, n) == 0 && p[n] == '/';
}

static int validate(const cr_exec_spec *s, const cr_runtime **rt, cr_err *err) {
  *rt = cr_runtime_find(s->language ? s->language : "python");
  if (!*rt)
    return cr_fail(err, 0, "unknown language '%s': use one of %s", s->language,
                   cr_runtime_list());
  if (!s->code)
    return cr_fail(err, 0, "no code to run: pass the program text");
  if (s->code_len > CR_MAX_CODE_BYTES)
    return cr_fail(err, 0, "the code is %zu bytes; the limit is %u bytes", s->code_len,
                   CR_MAX_CODE_BYTES);
  if (!(s->timeout_s > 0) || s->timeout_s > CR_MAX_TIMEOUT_S)
    return cr_fail(err, 0, "timeout %.3g s is out of range: give a value above 0 and at most %g",
                   s->timeout_s, CR_MAX_TIMEOUT_S);
  if (s->cpu_s < 0 || s->cpu_s > CR_MAX_TIMEOUT_S)
    return cr_fail(err, 0, "CPU limit %.3g s is out of range: give 0 (same as the timeout) to %g",
                   s->cpu_s, CR_MAX_TIMEOUT_S);
  if (s->memory_bytes < (16ull << 20) || s->memory_bytes > CR_MAX_MEMORY_BYTES)
    return cr_fail(err, 0, "memory limit %llu MiB is out of range: give 16 MiB to %llu MiB",
                   (unsigned long long)(s->memory_bytes >> 20),
                   (unsigned long long)(CR_MAX_MEMORY_BYTES >> 20));
  if (s->pids < 1 || s->pids > 65536)
    return cr_fail(err, 0, "process limit %u is out of range: give 1 to 65536", s->pids);
  if (s->disk_bytes < (1ull << 20) || s->disk_bytes > (1ull << 40))
    return cr_fail(err, 0, "disk size %llu bytes is out of range: give 1 MiB to 1 TiB",
                   (unsigned long long)s->disk_bytes);
  if (s->output_limit < 64 || s->output_limit > (1ull << 30))
    return cr_fail(err, 0, "output limit %llu is out of range: give 64 bytes to 1 GiB",
                   (unsigned long long)s->output_limit);
  if (s->output_max < s->output_limit)
    return cr_fail(err, 0, "output maximum %llu is below the output limit %llu: it must be at "
                           "least as large",
                   (unsigned long long)s->output_max, (unsigned long long)s->output_limit);
  /* the program's own file: an input of the same name would replace it */
  const char *code_name = s->code_name ? s->code_name
                                       : cr_runtime_code_name(*rt, s->code, s->code_len);
  if (s->code_name && (!cr_sb_path_ok(s->code_name) || strchr(s->code_name, '/')))
    return cr_fail(err, 0, "program file name '%s' is not a plain file name", s->code_name);
  for (size_t i = 0; i < s->nfiles; i++) {
    const char *p = s->files[i].path;
    if (!cr_sb_path_ok(p))
      return cr_fail(err, 0,
                     "file name '%s' is not allowed: give a relative path inside /workspace "
                     "without '..', '.' or empty components",
                     p ? p : "(null)");
    if (s->files[i].fd < 0 && !s->files[i].data && s->files[i].len)
      return cr_fail(err, 0, "file '%s' has neither content nor an fd", p);
    for (size_t j = 0; j < i; j++) {
      const char *q = s->files[j].path;
      if (strcmp(q, p) == 0)
        return cr_fail(err, 0, "file '%s' is given twice", p);
      const char *dir = path_is_under(p, q) ? q : path_is_under(q, p) ? p : NULL;
      if (dir)
        return cr_fail(err, 0,
                       "files '%s' and '%s' clash: '%s' cannot be both a file and a "
                       "directory; rename one of them",
                       q, p, dir);
    }
    if (strcmp(p, code_name) == 0)
      return cr_fail(err, 0, "file '%s' would overwrite the program itself: rename it", p);
    if (path_is_under(p, code_name))
      return cr_fail(err, 0, "file '%s' would need a directory named like the program '%s': "
                             "rename it",
                     p, code_name);
  }
  for (const char *const *e = s->env; e && *e; e++)
    if (!env_key_ok(*e))
      return cr_fail(err, 0,
                     "environment entry '%.60s' is not KEY=VALUE with KEY made of letters, "
                     "digits and '_'",
                     *e);
  return 0;
}

int cr_exec_validate(const cr_exec_spec *spec, cr_err *err) {
  const cr_runtime *rt;
  return validate(spec, &rt, err);
}

static double ms_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static void set_limit_error(cr_result *res, cr_category cat, const char *detail) {
  cr_error_info_free(&res->error);
  if (cr_error_for_limit(cat, detail, &res->error) == 0)
    res->has_error = true;
}

static void sandbox_failed(cr_result *res, const char *msg) {
  res->status = CR_ST_SANDBOX;
  set_limit_error(res, CR_CAT_SANDBOX, msg);
}

static const char *fmt_bytes(char *buf, size_t size, uint64_t b) {
  if (b >= (1ull << 20) && b % (1ull << 20) == 0)
    snprintf(buf, size, "%llu MiB", (unsigned long long)(b >> 20));
  else
    snprintf(buf, size, "%llu bytes", (unsigned long long)b);
  return buf;
}

typedef struct stream {
  int fd;
  cr_outcap cap;
  bool eof;
} stream;

/* Reads what is there. Returns true when the stream went over output_max. */
static bool drain(stream *s, int which, const cr_exec_spec *spec, const cr_sink *sink,
                  cr_expect_stream *ex) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n == 0) {
      s->eof = true;
      return false;
    }
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN)
        s->eof = true;
      return false;
    }
    /* The whole stream is compared, not the head and tail kept of it. */
    if (ex)
      cr_expect_stream_feed(ex, buf, (size_t)n);
    long head = cr_outcap_feed(&s->cap, buf, (size_t)n);
    if (head > 0 && sink && sink->on_output)
      sink->on_output(sink->ctx, which, buf, (size_t)head);
    if (s->cap.total > spec->output_max)
      return true;
  }
}

int cr_execute(const cr_exec_spec *spec, const cr_sink *sink, cr_result *res, cr_err *err) {
  cr_result_init(res);
  const cr_runtime *rt;
  if (validate(spec, &rt, err) < 0)
    return -1;
  const char *interp = cr_runtime_interpreter(rt);
  if (!interp)
    return cr_fail(err, 0, "%s is not installed on this host (looked for %s): install it "
                           "(`make deps`) or use another language",
                   rt->name, rt->interpreters[0]);

  res->language = strdup(rt->name);
  res->timeout_s = spec->timeout_s;
  /* RLIMIT_CPU counts whole seconds: the limit enforced is rounded up,
   * and that is the one reported. */
  res->cpu_s = ceil(spec->cpu_s > 0 ? spec->cpu_s : spec->timeout_s);
  res->memory_bytes = spec->memory_bytes;
  res->output_bytes = spec->output_limit;
  res->disk_bytes = spec->disk_bytes;
  res->pids = spec->pids;

  const char *code_name =
      spec->code_name ? spec->code_name : cr_runtime_code_name(rt, spec->code, spec->code_len);
  char code_path[4200];
  snprintf(code_path, sizeof code_path, "%s/%s", CR_SB_WORKSPACE, code_name);
  const char *argv[] = {interp, code_path, NULL};

  /* The state of /workspace before the program runs, to tell afterwards
   * what it created, changed and deleted. Every input gets the same mtime. */
  struct timespec t0;
  clock_gettime(CLOCK_REALTIME, &t0);
  cr_ws_list before = {0};
  cr_sb_file *files = calloc(spec->nfiles + 1, sizeof *files);
  char **env = cr_env_build(spec->env, false);
  stream out = {.fd = -1}, errs = {.fd = -1};
  int outp[2] = {-1, -1}, errp[2] = {-1, -1};
  int stdin_fd = -1, timer = -1;
  cr_sb sb = {.ctl_fd = -1, .ws_fd = -1, .uid_slot = -1, .payload_pidfd = -1};
  bool started = false;
  cr_err e2 = {0};

  if (!files || !env || !res->language ||
      cr_outcap_init(&out.cap, (size_t)spec->output_limit) < 0 ||
      cr_outcap_init(&errs.cap, (size_t)spec->output_limit) < 0) {
    sandbox_failed(res, "out of memory preparing the run");
    goto done;
  }
  files[0] = (cr_sb_file){.path = code_name, .fd = -1, .data = spec->code,
                          .len = spec->code_len, .mode = 0644, .mtime = t0};
  if (cr_ws_list_add(&before, code_name, spec->code_len, t0) < 0) {
    sandbox_failed(res, "out of memory preparing the run");
    goto done;
  }
  for (size_t i = 0; i < spec->nfiles; i++) {
    const cr_exec_file *f = &spec->files[i];
    uint64_t size = f->len;
    if (f->fd >= 0) {
      struct stat st;
      if (fstat(f->fd, &st) < 0) {
        sandbox_failed(res, "an input file could not be read (fstat failed)");
        goto done;
      }
      size = (uint64_t)st.st_size;
    }
    files[i + 1] = (cr_sb_file){.path = f->path, .fd = f->fd, .data = f->data, .len = f->len,
                                .mode = 0644, .mtime = t0};
    if (cr_ws_list_add(&before, f->path, size, t0) < 0) {
      sandbox_failed(res, "out of memory preparing the run");
      goto done;
    }
  }

  if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
    cr_fail(&e2, errno, "creating the output pipes");
    sandbox_failed(res, e2.msg);
    goto done;
  }
  fcntl(outp[0], F_SETFL, O_NONBLOCK);
  fcntl(errp[0], F_SETFL, O_NONBLOCK);
  out.fd = outp[0];
  errs.fd = errp[0];

  if (spec->stdin_data && spec->stdin_len) {
    /* A sealed memfd: the program reads its input like a file and cannot
     * change it, and no writer has to be kept running beside it. */
    stdin_fd = memfd_create("stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    const char *p = spec->stdin_data;
    size_t left = spec->stdin_len;
    while (stdin_fd >= 0 && left) {
      ssize_t w = write(stdin_fd, p, left);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        close(stdin_fd);
        stdin_fd = -1;
        break;
      }
      p += w;
      left -= (size_t)w;
    }
    if (stdin_fd < 0 || lseek(stdin_fd, 0, SEEK_SET) < 0 ||
        fcntl(stdin_fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
      sandbox_failed(res, "preparing standard input (memfd) failed");
      goto done;
    }
  }

  timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (timer < 0) {
    cr_fail(&e2, errno, "creating the wall-clock timer");
    sandbox_failed(res, e2.msg);
    goto done;
  }

  cr_sb_config cfg = {
      .argv = argv,
      .envp = (const char *const *)env,
      .stdin_fd = stdin_fd,
      .stdout_fd = outp[1],
      .stderr_fd = errp[1],
      .files = files,
      .nfiles = spec->nfiles + 1,
      .limits = {.memory_bytes = spec->memory_bytes,
                 .pids = spec->pids,
                 .cpu_ms = (uint64_t)ceil(res->cpu_s * 1000),
                 .fsize_bytes = spec->disk_bytes,
                 .nofile = 1024,
                 .tmp_bytes = spec->disk_bytes,
                 .workspace_bytes = spec->disk_bytes},
  };
  if (cr_sb_start(&cfg, &sb, &e2) < 0) {
    char msg[CR_ERR_MSG_MAX + 32];
    snprintf(msg, sizeof msg, "starting the sandbox: %s", e2.msg);
    sandbox_failed(res, msg);
    goto done;
  }
  started = true;
  res->enforced_by = sb.enforced_by;
  res->landlock_abi = sb.landlock_abi;
  close(outp[1]);
  close(errp[1]);
  outp[1] = errp[1] = -1;
  if (stdin_fd >= 0) {
    close(stdin_fd);
    stdin_fd = -1;
  }

  struct itimerspec its = {0};
  double secs = spec->timeout_s;
  its.it_value.tv_sec = (time_t)secs;
  its.it_value.tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9);
  if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
    its.it_value.tv_nsec = 1;
  timerfd_settime(timer, 0, &its, NULL);

  cr_expect_stream expect;
  if (spec->expected)
    cr_expect_stream_init(&expect, spec->expected, spec->expected_len);
  bool got_exit = false, setup_failed = false, timed_out = false, flooded = false,
       cancelled = false, killed = false, stop_armed = false, hard_killed = false;
  /* The timer is the wall clock until the run is stopped or the program's
   * exit is reported; from then on it is the teardown's deadline. */
  int pstatus = 0;
  int32_t own_cpu_ms = -1;   /* the program's own process (EXIT), -1: unknown */
  char fail_text[CR_ERR_MSG_MAX] = "";
  int flood_stream = 0;

  while (!(out.eof && errs.eof && sb.ctl_fd < 0)) {
    struct pollfd pf[5];
    int n = 0, i_out = -1, i_err = -1, i_ctl = -1, i_tim = -1, i_can = -1;
    bool tim_teardown = false;
    if (!out.eof)
      pf[i_out = n++] = (struct pollfd){.fd = out.fd, .events = POLLIN};
    if (!errs.eof)
      pf[i_err = n++] = (struct pollfd){.fd = errs.fd, .events = POLLIN};
    if (sb.ctl_fd >= 0)
      pf[i_ctl = n++] = (struct pollfd){.fd = sb.ctl_fd, .events = POLLIN};
    /* Once the program's exit is known the run is over: only its output
     * is still draining, and no limit can fire any more (a leftover
     * child's slow teardown must not turn an exit in time into a
     * timeout). */
    if (!killed && !got_exit) {
      pf[i_tim = n++] = (struct pollfd){.fd = timer, .events = POLLIN};
      if (spec->cancel_fd >= 0)
        pf[i_can = n++] = (struct pollfd){.fd = spec->cancel_fd, .events = POLLIN};
    } else if (!hard_killed) {
      /* Stopped, or the program's exit reported: either way PID 1 is
       * killing and reaping everything, which closes the streams and the
       * control socket. If it has not within a second, the hard way: a
       * teardown that stalls must not hold the run (and this thread)
       * forever, whether or not a limit fired. */
      if (!stop_armed) {
        struct itimerspec one = {.it_value = {.tv_sec = 1}};
        timerfd_settime(timer, 0, &one, NULL);
        stop_armed = true;
      }
      pf[i_tim = n++] = (struct pollfd){.fd = timer, .events = POLLIN};
      tim_teardown = true;
    }
    if (poll(pf, (nfds_t)n, -1) < 0) {
      if (errno == EINTR)
        continue;
      cr_fail(&e2, errno, "waiting for the program (poll)");
      cr_sb_stop(&sb);
      killed = true;
      setup_failed = true;
      snprintf(fail_text, sizeof fail_text, "%s", e2.msg);
      break;
    }
    if (i_out >= 0 && pf[i_out].revents &&
        drain(&out, 1, spec, sink, spec->expected ? &expect : NULL) && !killed) {
      flooded = killed = true;
      flood_stream = 1;
      cr_sb_stop(&sb);
    }
    if (i_err >= 0 && pf[i_err].revents && drain(&errs, 2, spec, sink, NULL) && !killed) {
      flooded = killed = true;
      flood_stream = 2;
      cr_sb_stop(&sb);
    }
    /* Every message waiting, not one: an EXIT queued behind another must
     * be seen in this round, before the timer and the cancel below are
     * judged. */
    while (i_ctl >= 0 && pf[i_ctl].revents && sb.ctl_fd >= 0) {
      cr_ctl_msg m;
      int r = cr_sb_read_ctl(&sb, &m, &e2);
      if (r == 1 && m.type == CR_CTL_EXIT) {
        got_exit = true;
        pstatus = m.status;
        own_cpu_ms = m.own_cpu_ms;
        /* cr_sb_reap gives PID 1 the same second as after a stop. */
        cr_sb_ending(&sb);
      } else if (r == 1 && m.type == CR_CTL_FAIL && !setup_failed) {
        setup_failed = true;
        snprintf(fail_text, sizeof fail_text, "sandbox setup failed while %s%s%s", m.text,
                 m.err ? ": " : "", m.err ? strerror(m.err) : "");
      } else if (r < 0 && e2.errnum != EAGAIN) {
        close(sb.ctl_fd);
        sb.ctl_fd = -1;
      }
      if (r <= 0)
        break; /* nothing more now, or the end (ctl_fd is closed then) */
    }
    /* An exit seen in the same round as the timer's expiry or a cancel
     * wins: the program ended by itself, and an exit in time is not a
     * timeout (nor an interruption). */
    if (i_tim >= 0 && pf[i_tim].revents && tim_teardown) {
      hard_killed = true;
      cr_sb_kill(&sb);
    } else if (i_tim >= 0 && pf[i_tim].revents && !killed && !got_exit) {
      timed_out = killed = true;
      cr_sb_stop(&sb);
    }
    if (i_can >= 0 && pf[i_can].revents && !killed && !got_exit) {
      cancelled = killed = true;
      cr_sb_stop(&sb);
    }
  }

  cr_sb_stats st;
  if (cr_sb_reap(&sb, &st, &e2) < 0) {
    sandbox_failed(res, e2.msg);
    goto done;
  }
  res->duration_ms = ms_since(&sb.started);
  res->cpu_ms = (double)(st.rusage.ru_utime.tv_sec + st.rusage.ru_stime.tv_sec) * 1e3 +
                (double)(st.rusage.ru_utime.tv_usec + st.rusage.ru_stime.tv_usec) / 1e3;
  res->memory_peak_bytes = st.memory_peak_bytes;

  res->out = cr_outcap_render(&out.cap, &res->out_len);
  res->err = cr_outcap_render(&errs.cap, &res->err_len);
  res->out_truncated = cr_outcap_truncated(&out.cap);
  res->err_truncated = cr_outcap_truncated(&errs.cap);
  res->out_dropped = cr_outcap_dropped(&out.cap);
  res->err_dropped = cr_outcap_dropped(&errs.cap);

  if (got_exit) {
    if (WIFEXITED(pstatus)) {
      res->exited = true;
      res->exit_code = WEXITSTATUS(pstatus);
    } else if (WIFSIGNALED(pstatus)) {
      res->signal = WTERMSIG(pstatus);
    }
  }

  char detail[256], b1[64];
  if (setup_failed) {
    sandbox_failed(res, fail_text);
  } else if (cancelled) {
    res->status = CR_ST_INTERRUPTED;
  } else if (timed_out) {
    res->status = CR_ST_TIMEOUT;
    snprintf(detail, sizeof detail, "the program ran longer than its wall-clock limit of %g s",
             spec->timeout_s);
    set_limit_error(res, CR_CAT_TIMEOUT, detail);
  } else if (flooded) {
    res->status = CR_ST_OUTPUT;
    snprintf(detail, sizeof detail, "%s exceeded %s in all; the run was stopped",
             flood_stream == 1 ? "stdout" : "stderr", fmt_bytes(b1, sizeof b1, spec->output_max));
    set_limit_error(res, CR_CAT_OUTPUT, detail);
  } else if (st.oom_killed && !(res->exited && res->exit_code == 0)) {
    res->status = CR_ST_MEMORY;
    snprintf(detail, sizeof detail, "the program used more than its memory limit of %s",
             fmt_bytes(b1, sizeof b1, spec->memory_bytes));
    set_limit_error(res, CR_CAT_MEMORY, detail);
  } else if (!got_exit) {
    sandbox_failed(res, "the sandbox's init ended before reporting the program's exit");
  } else if (res->signal == SIGXCPU ||
             (res->signal == SIGKILL &&
              /* RLIMIT_CPU is per process: the program's own time decides
               * (its workers may well have used more between them); only
               * where that is unknown, the whole tree's. */
              (own_cpu_ms >= 0 ? own_cpu_ms : res->cpu_ms) >= res->cpu_s * 1000)) {
    res->status = CR_ST_TIMEOUT;
    snprintf(detail, sizeof detail, "a process used more than its CPU-time limit of %g s",
             res->cpu_s);
    set_limit_error(res, CR_CAT_TIMEOUT, detail);
  } else if (res->exited && res->exit_code == 0) {
    res->status = CR_ST_OK;
  } else {
    res->status = CR_ST_ERROR;
    size_t tl;
    char *tail = cr_outcap_tail(&errs.cap, &tl);
    char *inv = cr_inventory_packages(rt->name);
    cr_classify_input in = {.language = rt->name, .err_text = tail, .err_len = tail ? tl : 0,
                            .exit_code = res->exit_code, .signal = res->signal,
                            .installed = inv};
    if (cr_classify(&in, &res->error) == 0) {
      res->has_error = true;
      if (res->error.category == CR_CAT_MEMORY)
        res->status = CR_ST_MEMORY;
      if (st.pids_limited && res->error.hint) {
        char *h = NULL;
        if (asprintf(&h, "%s (The program also hit the limit of %u processes.)", res->error.hint,
                     spec->pids) > 0) {
          free(res->error.hint);
          res->error.hint = h;
        }
      }
    }
    free(tail);
    free(inv);
  }

  if (res->status == CR_ST_OK && spec->expected) {
    cr_expect_diff d;
    if (!cr_expect_stream_end(&expect, &d)) {
      res->status = CR_ST_WRONG;
      cr_error_info_free(&res->error);
      char *msg = NULL;
      int r;
      if (d.actual_eof)
        r = asprintf(&msg, "line %zu: expected \"%s\", but the output ended", d.line, d.expected);
      else if (d.expected_eof)
        r = asprintf(&msg, "line %zu: expected the output to end, got \"%s\"", d.line, d.actual);
      else
        r = asprintf(&msg, "line %zu: expected \"%s\", got \"%s\"", d.line, d.expected, d.actual);
      res->error = (cr_error_info){
          .category = CR_CAT_RUNTIME,
          .name = strdup("WrongAnswer"),
          .message = r > 0 ? msg : NULL,
          .retryable = true,
          .hint = strdup("The program ran but its output differs from the expected output; "
                         "compare the first differing line and fix the logic or the format."),
      };
      res->has_error = true;
    }
  }

  /* Files: what the program did to /workspace, seen through the fd the
   * sandbox handed over (the sandbox itself is gone by now). */
  if (sb.ws_fd >= 0 && res->status != CR_ST_SANDBOX) {
    cr_ws_list after = {0};
    int wrc = cr_ws_scan(sb.ws_fd, &after, &e2);
    if (wrc == 0 && (wrc = cr_ws_diff(&before, &after, res)) < 0)
      cr_fail(&e2, ENOMEM, "listing the files the program changed");
    /* The run itself is reported as it was; files that were asked for and
     * not (all) copied are said separately, so that no caller takes an
     * empty or partial directory for the program's output. */
    if (spec->out_dir && (wrc < 0 || cr_ws_copy_out(sb.ws_fd, res, spec->out_dir,
                                                    spec->disk_bytes, &e2) < 0))
      res->files_copy_error = strdup(e2.msg);
    cr_ws_list_free(&after);
  }

done:
  if (started)
    cr_sb_release(&sb);
  if (outp[0] >= 0)
    close(outp[0]);
  if (outp[1] >= 0)
    close(outp[1]);
  if (errp[0] >= 0)
    close(errp[0]);
  if (errp[1] >= 0)
    close(errp[1]);
  if (stdin_fd >= 0)
    close(stdin_fd);
  if (timer >= 0)
    close(timer);
  cr_outcap_free(&out.cap);
  cr_outcap_free(&errs.cap);
  cr_ws_list_free(&before);
  free(files);
  cr_env_free(env);
  if (!res->out)
    res->out = calloc(1, 1);
  if (!res->err)
    res->err = calloc(1, 1);
  return 0;
}

/* Routes of the HTTP API (docs/api.md): each one parses and validates the
 * request, calls the core or the session manager, and translates the
 * result. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/mcp.h"
#include "api/routes.h"
#include "exec/exec.h"
#include "exec/workspace.h"
#include "openapi_embedded.h"
#include "runtime/inventory.h"
#include "runtime/runtime.h"
#include "sandbox/sandbox.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/utf8.h"

typedef struct stream stream;

typedef struct req {
  char method[8];
  char path[160];       /* for the log line */
  cr_buf body;
  size_t held;          /* body bytes counted in cr_api.body_bytes */
  bool too_big;
  bool overloaded;      /* refused: the server holds too many bodies at once */
  double t0;
  const char *caller;   /* key name, "" without keys */
  int status;           /* for the log line */
  stream *st;           /* a streaming response in progress */
} req;

/* ---- responses ----------------------------------------------------------- */

static enum MHD_Result respond(cr_api *a, struct MHD_Connection *c, req *r, unsigned status,
                               const char *ctype, char *body, size_t len) {
  struct MHD_Response *resp =
      a->mhd->create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(body);
    return MHD_NO;
  }
  a->mhd->add_response_header(resp, "Content-Type", ctype);
  if (status == 429 || status == 503)
    a->mhd->add_response_header(resp, "Retry-After", "1");
  r->status = (int)status;
  enum MHD_Result ret = a->mhd->queue_response(c, status, resp);
  a->mhd->destroy_response(resp);
  return ret;
}

static enum MHD_Result respond_json(cr_api *a, struct MHD_Connection *c, req *r, unsigned status,
                                    json_t *j) {
  char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
  json_decref(j);
  if (!s)
    s = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
  return respond(a, c, r, status, "application/json", s, strlen(s));
}

static enum MHD_Result respond_error(cr_api *a, struct MHD_Connection *c, req *r, unsigned status,
                                     const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static enum MHD_Result respond_error(cr_api *a, struct MHD_Connection *c, req *r, unsigned status,
                                     const char *code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *j = json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg);
  return respond_json(a, c, r, status, j);
}

/* ---- request parsing ------------------------------------------------------ */

/* Decodes %XX in a path or query value; NULL for a NUL byte (%00) or a
 * malformed escape. Caller frees. */
static char *pct_decode(const char *s, size_t n) {
  char *out = malloc(n + 1);
  if (!out)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%') {
      if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2])) {
        free(out);
        return NULL;
      }
      char hex[3] = {s[i + 1], s[i + 2], 0};
      int v = (int)strtol(hex, NULL, 16);
      if (v == 0) {
        free(out);
        return NULL;
      }
      out[k++] = (char)v;
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  out[k] = '\0';
  return out;
}

static json_t *parse_body(cr_api *a, struct MHD_Connection *c, req *r, enum MHD_Result *ret) {
  if (r->body.len == 0) {
    *ret = respond_error(a, c, r, 400, "invalid_json", "the request needs a JSON object body");
    return NULL;
  }
  json_error_t je;
  json_t *j = json_loadb(r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    *ret = respond_error(a, c, r, 400, "invalid_json", "malformed JSON at line %d column %d: %s",
                         je.line, je.column, je.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    *ret = respond_error(a, c, r, 400, "invalid_json", "the body must be a JSON object");
    return NULL;
  }
  return j;
}

/* Unknown fields are named, so a client learns of a typo at once. */
static bool check_fields(json_t *j, const char *const *allowed, char *bad, size_t size) {
  const char *key;
  json_t *v;
  json_object_foreach(j, key, v) {
    bool ok = false;
    for (const char *const *f = allowed; *f; f++)
      if (strcmp(*f, key) == 0)
        ok = true;
    if (!ok) {
      snprintf(bad, size, "%s", key);
      return false;
    }
  }
  return true;
}

typedef struct limits_in {
  double timeout_s;
  uint64_t memory_bytes;
} limits_in;

/* timeout_s and memory_mb of a request, defaults applied, against the
 * server's maxima. */
static bool read_limits(cr_api *a, json_t *j, limits_in *l, char *msg, size_t size) {
  l->timeout_s = a->o.default_timeout_s;
  l->memory_bytes = a->o.default_memory_bytes;
  json_t *t = json_object_get(j, "timeout_s");
  if (t && !json_is_null(t)) {
    if (!json_is_number(t) || !(json_number_value(t) > 0)) {
      snprintf(msg, size, "timeout_s must be a number above 0");
      return false;
    }
    if (json_number_value(t) > a->o.max_timeout_s) {
      snprintf(msg, size, "timeout_s %g exceeds the server's maximum of %g", json_number_value(t),
               a->o.max_timeout_s);
      return false;
    }
    l->timeout_s = json_number_value(t);
  }
  json_t *m = json_object_get(j, "memory_mb");
  if (m && !json_is_null(m)) {
    if (!json_is_integer(m) || json_integer_value(m) < 16) {
      snprintf(msg, size, "memory_mb must be an integer of at least 16");
      return false;
    }
    uint64_t b = (uint64_t)json_integer_value(m) << 20;
    if (b > a->o.max_memory_bytes) {
      snprintf(msg, size, "memory_mb %lld exceeds the server's maximum of %llu",
               (long long)json_integer_value(m),
               (unsigned long long)(a->o.max_memory_bytes >> 20));
      return false;
    }
    l->memory_bytes = b;
  }
  return true;
}

static bool want_stream(cr_api *a, struct MHD_Connection *c) {
  const char *acc = a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
  return acc && strstr(acc, "application/x-ndjson");
}

/* ---- streaming ------------------------------------------------------------- */

/* A streamed execution runs in a worker thread; its events become NDJSON
 * lines in `pending`, which MHD's reader callback (the connection's thread)
 * sends as they come. */
struct stream {
  cr_api *a;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  cr_buf pending;
  size_t sent;
  bool finished;
  bool client_gone;
  int cancel_fd;          /* one-shot: cancels the run */
  cr_session *sess;       /* session: released by the worker */
  atomic_bool withdrawn;  /* session: set on disconnect (cr_session_cancel) */
  int conn_fd;            /* the client's socket, watched for hangup */
  pthread_t worker;
  bool worker_started;
  /* the job */
  cr_exec_spec spec;
  json_t *req_json;       /* keeps the spec's strings alive */
  unsigned char **blobs;  /* decoded input files */
  size_t nblobs;
  cr_exec_file *files;
  const char **env;
  char *code;
  size_t code_len;
  double timeout_s;
  char caller[64];
  bool e2b;               /* lines in E2B's code-interpreter format */
  char **env_set;         /* E2B env_vars: set before the cell, restored after */
  long exec_count;
};

static void stream_line(stream *st, json_t *j) {
  /* E2B's SDK decodes every network chunk on its own: ASCII lines only. */
  char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10) | (st->e2b ? JSON_ENSURE_ASCII : 0));
  json_decref(j);
  if (!s)
    return;
  pthread_mutex_lock(&st->lock);
  /* one line per write: the object and its newline together */
  cr_buf_append(&st->pending, s, strlen(s));
  cr_buf_append(&st->pending, "\n", 1);
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->lock);
  free(s);
}

static json_t *text_json(const char *p, size_t n);

static json_t *iso_time(double t);

static double wall_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sink_output(void *ctx, int which, const char *data, size_t len) {
  stream *st = ctx;
  json_t *j = json_pack("{s:s, s:o}", "type", which == 1 ? "stdout" : "stderr", "text",
                        text_json(data, len));
  if (st->e2b)
    json_object_set_new(j, "timestamp", iso_time(wall_now()));
  stream_line(st, j);
}

/* A MIME bundle as an E2B result line: the known types under their short
 * names, everything else in extra. */
static json_t *e2b_result(json_t *mime, bool main) {
  static const struct {
    const char *mime, *key;
  } map[] = {{"text/plain", "text"},       {"text/html", "html"},
             {"text/markdown", "markdown"}, {"image/svg+xml", "svg"},
             {"image/png", "png"},          {"image/jpeg", "jpeg"},
             {"application/pdf", "pdf"},    {"text/latex", "latex"},
             {"application/json", "json"},  {"application/javascript", "javascript"}};
  json_t *r = json_pack("{s:s}", "type", "result");
  json_t *extra = json_object();
  const char *k;
  json_t *v;
  json_object_foreach(mime, k, v) {
    bool known = false;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
      if (strcmp(k, map[i].mime) == 0) {
        json_object_set(r, map[i].key, v);
        known = true;
      }
    if (!known)
      json_object_set(extra, k, v);
  }
  json_object_set_new(r, "extra", extra);
  json_object_set_new(r, "is_main_result", json_boolean(main));
  return r;
}

static void sink_display(void *ctx, json_t *mime, bool main) {
  stream *st = ctx;
  if (st->e2b) {
    stream_line(st, e2b_result(mime, main));
    return;
  }
  stream_line(st, json_pack("{s:s, s:O, s:b}", "type", "display", "mime", mime, "main", main));
}

static json_t *text_json(const char *p, size_t n) {
  if (cr_utf8_valid(p, n))
    return json_stringn(p, n);
  size_t l;
  char *c = cr_utf8_sanitize(p, n, &l);
  json_t *j = c ? json_stringn(c, l) : json_string("");
  free(c);
  return j;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  stream *st = cls;
  (void)pos;
  pthread_mutex_lock(&st->lock);
  double last = cr_now_s();
  while (st->sent == st->pending.len && !st->finished) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 250000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&st->cv, &st->lock, &ts);
    /* A client that went away interrupts its run (we would otherwise only
     * notice at the next write). */
    if (st->conn_fd >= 0) {
      struct pollfd pf = {.fd = st->conn_fd, .events = POLLRDHUP};
      if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        st->client_gone = true;
        pthread_mutex_unlock(&st->lock);
        return MHD_CONTENT_READER_END_WITH_ERROR;
      }
    }
    if (st->sent == st->pending.len && !st->finished && cr_now_s() - last >= 5.0) {
      const char *ka = "{\"type\":\"keepalive\"}\n";
      cr_buf_append(&st->pending, ka, strlen(ka));
    }
  }
  size_t avail = st->pending.len - st->sent;
  if (avail == 0 && st->finished) {
    pthread_mutex_unlock(&st->lock);
    return MHD_CONTENT_READER_END_OF_STREAM;
  }
  size_t n = avail < max ? avail : max;
  memcpy(buf, st->pending.data + st->sent, n);
  st->sent += n;
  pthread_mutex_unlock(&st->lock);
  return (ssize_t)n;
}

static void job_free(stream *st) {
  if (st->env_set) {
    free(st->env_set[0]);
    free(st->env_set[1]);
    free(st->env_set);
  }
  json_decref(st->req_json);
  for (size_t i = 0; i < st->nblobs; i++)
    free(st->blobs[i]);
  free(st->blobs);
  free(st->files);
  free(st->env);
  free(st->code);
}

static void stream_free(void *cls) {
  stream *st = cls;
  /* Under st->lock: the worker sets `finished` under it before it gives
   * the session back (cr_mgr_release can free a closed session), so the
   * session is still ours while we cancel on it. */
  pthread_mutex_lock(&st->lock);
  if (!st->finished) {
    /* The response went away before the result: the client disconnected. */
    if (st->cancel_fd >= 0) {
      uint64_t one = 1;
      ssize_t w = write(st->cancel_fd, &one, sizeof one);
      (void)w;
    }
    /* Only this request's own cell: one still waiting for its turn does
     * not run, one running is interrupted; another client's is left alone. */
    if (st->sess)
      cr_session_cancel(st->sess, &st->withdrawn);
  }
  pthread_mutex_unlock(&st->lock);
  if (st->worker_started)
    pthread_join(st->worker, NULL);
  if (st->cancel_fd >= 0) {
    cr_api_track_cancel(st->a, st->cancel_fd, false);
    close(st->cancel_fd);
  }
  pthread_mutex_lock(&st->a->lock);
  st->a->active_streams--;
  pthread_mutex_unlock(&st->a->lock);
  job_free(st);
  cr_buf_free(&st->pending);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->cv);
  free(st);
}

static void finish_result(cr_api *a, stream *st, cr_result *res, double t0, const char *what) {
  cr_api_count(a, res, cr_now_s() - t0);
  cr_api_log(a, "exec", "id=%llu %s caller=%s language=%s status=%s duration_ms=%.1f",
             (unsigned long long)atomic_fetch_add(&a->m_exec_ids, 1) + 1, what,
             st->caller[0] ? st->caller : "-", res->language ? res->language : "-",
             cr_status_name(res->status), res->duration_ms);
  if (st->e2b) {
    /* E2B's lines: the error (if any), then end_of_execution, always last. */
    if (res->status != CR_ST_OK) {
      const char *name = res->has_error && res->error.name ? res->error.name
                         : res->status == CR_ST_INTERRUPTED ? "ExecutionAborted"
                                                            : cr_status_name(res->status);
      const char *value = res->has_error && res->error.message ? res->error.message
                          : res->status == CR_ST_INTERRUPTED ? "Execution was aborted"
                                                             : "";
      stream_line(st, json_pack("{s:s, s:s, s:s, s:o}", "type", "error", "name", name, "value",
                                value, "traceback", text_json(res->err, res->err_len)));
    }
    stream_line(st, json_pack("{s:s}", "type", "end_of_execution"));
  } else {
    json_t *j = cr_result_to_json(res);
    /* what the run did to /workspace, then the result */
    json_t *files = json_object_get(j, "files");
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
      json_t *ev = json_pack("{s:s}", "type", "file");
      json_object_update(ev, f);
      stream_line(st, ev);
    }
    stream_line(st, json_pack("{s:s, s:o}", "type", "result", "result", j ? j : json_null()));
  }
  pthread_mutex_lock(&st->lock);
  st->finished = true;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->lock);
}

static void *oneshot_worker(void *arg) {
  stream *st = arg;
  cr_api *a = st->a;
  double t0 = cr_now_s();
  cr_sink sink = {.ctx = st, .on_output = sink_output, .on_display = sink_display};
  cr_result res;
  cr_err err = {0};
  if (cr_execute(&st->spec, &sink, &res, &err) < 0) {
    cr_result_init(&res);
    res.status = CR_ST_SANDBOX;
    res.has_error = cr_error_for_limit(CR_CAT_SANDBOX, err.msg, &res.error) == 0;
  }
  atomic_fetch_add(&a->m_sandboxes, 1);
  cr_api_release(a);
  finish_result(a, st, &res, t0, "oneshot");
  cr_result_free(&res);
  return NULL;
}

/* A session execution holds a server slot for its turn on the session
 * only (cr_exec_extras.on_turn, on_turn_end): requests queued behind a busy
 * session hold none, and the slot is back before the next cell's turn. */
static int take_slot_on_turn(void *ctx, cr_err *err) {
  if (cr_api_acquire(ctx) < 0)
    return cr_fail(err, 0, "%s",
                   cr_api_draining(ctx) ? "the server is shutting down: this code did not run"
                                        : "too many executions running and waiting: retry later");
  return 0;
}

static void give_slot_on_turn_end(void *ctx) { cr_api_release(ctx); }

static void *session_worker(void *arg) {
  stream *st = arg;
  cr_api *a = st->a;
  double t0 = cr_now_s();
  cr_sink sink = {.ctx = st, .on_output = sink_output, .on_display = sink_display};
  cr_result res;
  cr_err err = {0};
  if (st->e2b)
    stream_line(st, json_pack("{s:s, s:I}", "type", "number_of_executions", "execution_count",
                              (json_int_t)st->exec_count));
  /* E2B's env_vars are set and restored in the cell's own turn: no other
   * request's cell sees them. */
  cr_exec_extras x = {.cancel = &st->withdrawn,
                      .before = st->env_set ? st->env_set[0] : NULL,
                      .after = st->env_set ? st->env_set[1] : NULL,
                      .on_turn = take_slot_on_turn,
                      .on_turn_end = give_slot_on_turn_end,
                      .turn_ctx = a};
  int erc = cr_session_execute_ex(st->sess, st->code, st->code_len, st->timeout_s, &sink, &x,
                                  &res, &err);
  if (erc < 0) {
    cr_result_init(&res);
    res.status = CR_ST_SANDBOX;
    res.has_error = cr_error_for_limit(CR_CAT_SANDBOX, err.msg, &res.error) == 0;
  }
  cr_mgr_touch(a->mgr, st->sess);
  finish_result(a, st, &res, t0, "session");
  cr_result_free(&res);
  cr_mgr_release(a->mgr, st->sess);
  return NULL;
}

static stream *stream_new(cr_api *a, struct MHD_Connection *c, const char *caller) {
  stream *st = calloc(1, sizeof *st);
  if (!st)
    return NULL;
  st->a = a;
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->cv, NULL);
  st->cancel_fd = -1;
  st->conn_fd = -1;
  const union MHD_ConnectionInfo *ci =
      a->mhd->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (ci)
    st->conn_fd = ci->connect_fd;
  snprintf(st->caller, sizeof st->caller, "%s", caller);
  pthread_mutex_lock(&a->lock);
  a->active_streams++;
  pthread_mutex_unlock(&a->lock);
  return st;
}

static enum MHD_Result start_stream(cr_api *a, struct MHD_Connection *c, req *r, stream *st,
                                    void *(*worker)(void *)) {
  if (pthread_create(&st->worker, NULL, worker, st) != 0) {
    /* What the worker would have given back: the session's reference, or
     * the one-shot's slot. */
    if (st->sess)
      cr_mgr_release(a->mgr, st->sess);
    else
      cr_api_release(a);
    st->sess = NULL;
    st->finished = true;
    stream_free(st);
    return respond_error(a, c, r, 500, "internal", "cannot start the execution thread");
  }
  st->worker_started = true;
  struct MHD_Response *resp =
      a->mhd->create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader, st,
                                            stream_free);
  if (!resp) {
    stream_free(st);
    return MHD_NO;
  }
  a->mhd->add_response_header(resp, "Content-Type", "application/x-ndjson");
  a->mhd->add_response_header(resp, "Cache-Control", "no-store");
  r->status = 200;
  enum MHD_Result ret = a->mhd->queue_response(c, 200, resp);
  a->mhd->destroy_response(resp);
  return ret;
}

/* ---- POST /v1/execute --------------------------------------------------- */

static const char *const execute_fields[] = {"language", "code", "timeout_s", "memory_mb", "stdin",
                                             "files", "env", "expected_output", NULL};

/* Fills st's job from the request body; on error answers and returns false. */
static bool build_oneshot(cr_api *a, struct MHD_Connection *c, req *r, json_t *j, stream *st,
                          enum MHD_Result *ret) {
  char msg[512];
  if (!check_fields(j, execute_fields, msg, sizeof msg)) {
    *ret = respond_error(a, c, r, 400, "invalid_request",
                         "unknown field '%s': allowed are language, code, timeout_s, memory_mb, "
                         "stdin, files, env, expected_output",
                         msg);
    return false;
  }
  json_t *code = json_object_get(j, "code");
  json_t *lang = json_object_get(j, "language");
  json_t *in = json_object_get(j, "stdin");
  json_t *exp = json_object_get(j, "expected_output");
  json_t *files = json_object_get(j, "files");
  json_t *env = json_object_get(j, "env");
  if (!json_is_string(code)) {
    *ret = respond_error(a, c, r, 400, "invalid_request", "code must be a string (the program)");
    return false;
  }
  if (lang && !json_is_null(lang) && !json_is_string(lang)) {
    *ret = respond_error(a, c, r, 400, "invalid_request", "language must be a string");
    return false;
  }
  if ((in && !json_is_null(in) && !json_is_string(in)) ||
      (exp && !json_is_null(exp) && !json_is_string(exp))) {
    *ret = respond_error(a, c, r, 400, "invalid_request",
                         "stdin and expected_output must be strings");
    return false;
  }
  if ((files && !json_is_null(files) && !json_is_object(files)) ||
      (env && !json_is_null(env) && !json_is_object(env))) {
    *ret = respond_error(a, c, r, 400, "invalid_request",
                         "files must be an object {path: base64} and env an object {KEY: VALUE}");
    return false;
  }
  limits_in l;
  if (!read_limits(a, j, &l, msg, sizeof msg)) {
    *ret = respond_error(a, c, r, 400, "invalid_request", "%s", msg);
    return false;
  }
  const char *lname = json_is_string(lang) ? json_string_value(lang) : "python";
  if (!cr_runtime_find(lname)) {
    *ret = respond_error(a, c, r, 400, "invalid_request", "unknown language '%s': use one of %s",
                         lname, cr_runtime_list());
    return false;
  }
  json_incref(j);
  st->req_json = j;
  cr_exec_spec *s = &st->spec;
  cr_exec_spec_init(s);
  s->language = lname;
  s->code = json_string_value(code);
  s->code_len = json_string_length(code);
  s->timeout_s = l.timeout_s;
  s->memory_bytes = l.memory_bytes;
  s->output_limit = a->o.output_limit;
  if (s->output_max < s->output_limit)
    s->output_max = s->output_limit;
  if (json_is_string(in)) {
    s->stdin_data = json_string_value(in);
    s->stdin_len = json_string_length(in);
  }
  if (json_is_string(exp)) {
    s->expected = json_string_value(exp);
    s->expected_len = json_string_length(exp);
  }
  size_t nf = json_is_object(files) ? json_object_size(files) : 0;
  if (nf) {
    st->files = calloc(nf, sizeof *st->files);
    st->blobs = calloc(nf, sizeof *st->blobs);
    const char *path;
    json_t *v;
    json_object_foreach(files, path, v) {
      size_t len = 0;
      unsigned char *data = json_is_string(v) ? cr_b64_decode(json_string_value(v), &len) : NULL;
      if (!data || !cr_sb_path_ok(path)) {
        free(data);
        *ret = respond_error(a, c, r, 400, "invalid_request",
                             !data ? "files['%s'] must be base64 content"
                                   : "files: '%s' is not a relative path inside /workspace",
                             path);
        return false;
      }
      st->blobs[st->nblobs++] = data;
      st->files[s->nfiles++] = (cr_exec_file){.path = path, .fd = -1, .data = data, .len = len};
    }
    s->files = st->files;
  }
  size_t ne = json_is_object(env) ? json_object_size(env) : 0;
  if (ne) {
    st->env = calloc(ne + 1, sizeof *st->env);
    char **owned = calloc(ne, sizeof *owned);
    size_t k = 0;
    const char *key;
    json_t *v;
    bool bad = !st->env || !owned;
    json_object_foreach(env, key, v) {
      if (bad)
        break;
      if (!json_is_string(v)) {
        *ret = respond_error(a, c, r, 400, "invalid_request", "env['%s'] must be a string", key);
        bad = true;
        break;
      }
      char *kv = NULL;
      if (asprintf(&kv, "%s=%s", key, json_string_value(v)) < 0) {
        *ret = respond_error(a, c, r, 500, "internal", "out of memory");
        bad = true;
        break;
      }
      owned[k] = kv;
      st->env[k++] = kv;
    }
    /* the strings are freed with the blobs */
    unsigned char **nb = bad ? NULL : realloc(st->blobs, (st->nblobs + k) * sizeof *st->blobs);
    if (!nb) {
      for (size_t i = 0; i < k; i++)
        free(owned ? owned[i] : NULL);
      free(owned);
      if (!bad)
        *ret = respond_error(a, c, r, 500, "internal", "out of memory");
      return false;
    }
    st->blobs = nb;
    for (size_t i = 0; i < k; i++)
      st->blobs[st->nblobs++] = (unsigned char *)owned[i];
    free(owned);
    s->env = st->env;
  }
  return true;
}

static enum MHD_Result route_execute(cr_api *a, struct MHD_Connection *c, req *r) {
  enum MHD_Result ret = MHD_YES;
  json_t *j = parse_body(a, c, r, &ret);
  if (!j)
    return ret;
  stream *st = stream_new(a, c, r->caller);
  if (!st) {
    json_decref(j);
    return respond_error(a, c, r, 500, "internal", "out of memory");
  }
  if (!build_oneshot(a, c, r, j, st, &ret)) {
    json_decref(j);
    stream_free(st);
    return ret;
  }
  json_decref(j);
  /* Validate the spec fully before taking a slot or starting a stream: bad
   * input is a 400 (also when streaming was asked for); what fails after
   * this is the server's (500). */
  cr_err err = {0};
  if (cr_exec_validate(&st->spec, &err) < 0) {
    stream_free(st);
    return respond_error(a, c, r, 400, "invalid_request", "%s", err.msg);
  }
  if (cr_api_acquire(a) < 0) {
    stream_free(st);
    if (cr_api_draining(a))
      return respond_error(a, c, r, 503, "shutting_down",
                           "the server is shutting down: this code did not run; retry elsewhere");
    return respond_error(a, c, r, 429, "too_many_requests",
                         "%zu executions are running and %zu waiting, the server's maximum: "
                         "retry later",
                         a->o.max_concurrent, a->o.queue);
  }
  st->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  st->spec.cancel_fd = st->cancel_fd;
  if (st->cancel_fd >= 0)
    cr_api_track_cancel(a, st->cancel_fd, true);
  if (want_stream(a, c))
    return start_stream(a, c, r, st, oneshot_worker);

  double t0 = cr_now_s();
  cr_result res;
  int rc = cr_execute(&st->spec, NULL, &res, &err);
  cr_api_release(a);
  if (rc < 0) {
    stream_free(st);
    cr_result_free(&res);
    return respond_error(a, c, r, 500, "internal", "%s", err.msg);
  }
  atomic_fetch_add(&a->m_sandboxes, 1);
  cr_api_count(a, &res, cr_now_s() - t0);
  cr_api_log(a, "exec", "id=%llu oneshot caller=%s language=%s status=%s duration_ms=%.1f",
             (unsigned long long)atomic_fetch_add(&a->m_exec_ids, 1) + 1, r->caller[0] ? r->caller : "-", res.language ? res.language : "-",
             cr_status_name(res.status), res.duration_ms);
  json_t *out = cr_result_to_json(&res);
  cr_result_free(&res);
  pthread_mutex_lock(&st->lock);
  st->finished = true;
  pthread_mutex_unlock(&st->lock);
  stream_free(st);
  return respond_json(a, c, r, 200, out);
}

/* ---- POST /v1/grade ------------------------------------------------------- */

typedef struct grade_job {
  cr_api *a;
  cr_exec_spec spec;
  cr_result res;
  bool ran;
  char err[256];
} grade_job;

/* The tests of one /v1/grade request, taken in turn by a few workers: at
 * most as many as the server runs at once, so a request with 100 tests
 * queues for slots like 100 requests would, instead of asking for them all
 * at once and having those past the queue refused. */
typedef struct grade_pool {
  grade_job *jobs;
  size_t n;
  atomic_size_t next;
} grade_pool;

static void *grade_job_run(grade_job *g);

static void *grade_pool_worker(void *arg) {
  grade_pool *p = arg;
  for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
    grade_job_run(&p->jobs[i]);
  return NULL;
}

static void *grade_job_run(grade_job *g) {
  cr_err err = {0};
  if (cr_api_acquire(g->a) < 0) {
    snprintf(g->err, sizeof g->err, "%s",
             cr_api_draining(g->a) ? "the server is shutting down" : "too many executions running");
    return NULL;
  }
  double t0 = cr_now_s();
  if (cr_execute(&g->spec, NULL, &g->res, &err) == 0) {
    g->ran = true;
    atomic_fetch_add(&g->a->m_sandboxes, 1);
    cr_api_count(g->a, &g->res, cr_now_s() - t0);
  } else {
    snprintf(g->err, sizeof g->err, "%s", err.msg);
  }
  cr_api_release(g->a);
  return NULL;
}

static const char *verdict_of(const cr_result *r) {
  switch (r->status) {
  case CR_ST_OK: return "accepted";
  case CR_ST_WRONG: return "wrong_answer";
  case CR_ST_TIMEOUT: return "timeout";
  case CR_ST_MEMORY: return "memory_limit";
  default: return "error";
  }
}

static enum MHD_Result route_grade(cr_api *a, struct MHD_Connection *c, req *r) {
  enum MHD_Result ret = MHD_YES;
  json_t *j = parse_body(a, c, r, &ret);
  if (!j)
    return ret;
  static const char *const fields[] = {"language", "code", "tests", "timeout_s", "memory_mb",
                                       NULL};
  char msg[512];
  json_t *tests = json_object_get(j, "tests");
  json_t *code = json_object_get(j, "code");
  json_t *lang = json_object_get(j, "language");
  limits_in l;
  if (!check_fields(j, fields, msg, sizeof msg)) {
    ret = respond_error(a, c, r, 400, "invalid_request",
                        "unknown field '%s': allowed are language, code, tests, timeout_s, "
                        "memory_mb",
                        msg);
  } else if (!json_is_string(code)) {
    ret = respond_error(a, c, r, 400, "invalid_request", "code must be a string");
  } else if (!json_is_array(tests) || json_array_size(tests) == 0 ||
             json_array_size(tests) > 100) {
    ret = respond_error(a, c, r, 400, "invalid_request",
                        "tests must be an array of 1 to 100 {stdin, expected_output} objects");
  } else if (lang && !json_is_null(lang) &&
             (!json_is_string(lang) || !cr_runtime_find(json_string_value(lang)))) {
    ret = respond_error(a, c, r, 400, "invalid_request", "language must be one of %s",
                        cr_runtime_list());
  } else if (!read_limits(a, j, &l, msg, sizeof msg)) {
    ret = respond_error(a, c, r, 400, "invalid_request", "%s", msg);
  } else {
    size_t n = json_array_size(tests);
    for (size_t i = 0; i < n; i++) {
      json_t *t = json_array_get(tests, i);
      static const char *const tf[] = {"stdin", "expected_output", NULL};
      json_t *ti = json_object_get(t, "stdin"), *te = json_object_get(t, "expected_output");
      if (json_is_object(t) && !check_fields(t, tf, msg, sizeof msg)) {
        ret = respond_error(a, c, r, 400, "invalid_request",
                            "tests[%zu]: unknown field '%s': allowed are stdin, expected_output", i,
                            msg);
        json_decref(j);
        return ret;
      }
      if (!json_is_object(t) || (ti && !json_is_null(ti) && !json_is_string(ti)) ||
          !json_is_string(te)) {
        ret = respond_error(a, c, r, 400, "invalid_request",
                            "tests[%zu] must be {stdin: string, expected_output: string}", i);
        json_decref(j);
        return ret;
      }
    }
    grade_job *jobs = calloc(n, sizeof *jobs);
    size_t nw = n < a->o.max_concurrent ? n : a->o.max_concurrent;
    if (nw == 0)
      nw = 1;
    pthread_t *th = calloc(nw, sizeof *th);
    bool *started = calloc(nw, sizeof *started);
    if (!jobs || !th || !started) {
      free(jobs);
      free(th);
      free(started);
      json_decref(j);
      return respond_error(a, c, r, 500, "internal", "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
      json_t *t = json_array_get(tests, i);
      grade_job *g = &jobs[i];
      g->a = a;
      cr_exec_spec_init(&g->spec);
      g->spec.language = json_is_string(lang) ? json_string_value(lang) : "python";
      g->spec.code = json_string_value(code);
      g->spec.code_len = json_string_length(code);
      g->spec.timeout_s = l.timeout_s;
      g->spec.memory_bytes = l.memory_bytes;
      g->spec.output_limit = a->o.output_limit;
      json_t *ti = json_object_get(t, "stdin");
      if (json_is_string(ti)) {
        g->spec.stdin_data = json_string_value(ti);
        g->spec.stdin_len = json_string_length(ti);
      }
      g->spec.expected = json_string_value(json_object_get(t, "expected_output"));
      g->spec.expected_len = json_string_length(json_object_get(t, "expected_output"));
    }
    /* In parallel, each in a fresh sandbox, within the server's slots. */
    grade_pool pool = {.jobs = jobs, .n = n};
    atomic_init(&pool.next, 0);
    /* nw workers in all: this thread is one of them (and the only one if
     * no thread could be started). */
    for (size_t i = 0; i + 1 < nw; i++)
      started[i] = pthread_create(&th[i], NULL, grade_pool_worker, &pool) == 0;
    grade_pool_worker(&pool);
    for (size_t i = 0; i < nw; i++)
      if (started[i])
        pthread_join(th[i], NULL);
    free(started);
    json_t *out = json_array();
    size_t passed = 0;
    const char *verdict = "accepted";
    for (size_t i = 0; i < n; i++) {
      grade_job *g = &jobs[i];
      json_t *t;
      if (g->ran) {
        const char *v = verdict_of(&g->res);
        if (strcmp(v, "accepted") == 0)
          passed++;
        else if (strcmp(verdict, "accepted") == 0)
          verdict = v;
        json_t *full = cr_result_to_json(&g->res);
        t = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O}", "verdict", v, "status",
                      json_object_get(full, "status"), "stdout", json_object_get(full, "stdout"),
                      "stderr", json_object_get(full, "stderr"), "duration_ms",
                      json_object_get(full, "duration_ms"), "error",
                      json_object_get(full, "error"));
        json_decref(full);
        cr_result_free(&g->res);
      } else {
        if (strcmp(verdict, "accepted") == 0)
          verdict = "error";
        t = json_pack("{s:s, s:s, s:s, s:s, s:n, s:{s:s, s:s}}", "verdict", "error", "status",
                      "sandbox_error", "stdout", "", "stderr", "", "duration_ms", "error",
                      "category", "sandbox_error", "message", g->err);
      }
      json_array_append_new(out, t);
    }
    free(jobs);
    free(th);
    ret = respond_json(a, c, r, 200,
                       json_pack("{s:s, s:i, s:i, s:o}", "verdict", verdict, "passed",
                                 (json_int_t)passed, "total", (json_int_t)n, "tests", out));
  }
  json_decref(j);
  return ret;
}

/* ---- sessions --------------------------------------------------------- */

static json_t *iso_time(double t) {
  time_t s = (time_t)t;
  struct tm tm;
  gmtime_r(&s, &tm);
  char buf[48];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)((t - (double)s) * 1000));
  return json_string(buf);
}

static json_t *info_json(const cr_session_info *i, bool full) {
  json_t *j = json_pack("{s:s, s:s, s:o, s:o}", "id", i->id, "language", i->language,
                        "created_at", iso_time(i->created_at), "expires_at",
                        iso_time(i->expires_at));
  if (full) {
    json_object_set_new(j, "last_activity", iso_time(i->last_activity));
    json_object_set_new(j, "status", json_string(i->busy ? "busy" : "idle"));
    json_object_set_new(j, "executions", json_integer((json_int_t)i->executions));
  }
  return j;
}

static enum MHD_Result route_session_open(cr_api *a, struct MHD_Connection *c, req *r) {
  enum MHD_Result ret = MHD_YES;
  json_t *j = parse_body(a, c, r, &ret);
  if (!j)
    return ret;
  static const char *const fields[] = {"language", "ttl_s", "memory_mb", "timeout_s", "env", NULL};
  char msg[512];
  json_t *lang = json_object_get(j, "language"), *ttl = json_object_get(j, "ttl_s"),
         *env = json_object_get(j, "env");
  limits_in l;
  const char **envv = NULL;
  char **owned = NULL;
  size_t ne = 0;
  if (!check_fields(j, fields, msg, sizeof msg)) {
    ret = respond_error(a, c, r, 400, "invalid_request",
                        "unknown field '%s': allowed are language, ttl_s, memory_mb, timeout_s, env",
                        msg);
    goto out;
  }
  if (lang && !json_is_null(lang) &&
      (!json_is_string(lang) || !cr_runtime_find(json_string_value(lang)))) {
    ret = respond_error(a, c, r, 400, "invalid_request", "language must be one of %s",
                        cr_runtime_list());
    goto out;
  }
  if (ttl && !json_is_null(ttl) && (!json_is_number(ttl) || json_number_value(ttl) < 0)) {
    ret = respond_error(a, c, r, 400, "invalid_request", "ttl_s must be a number >= 0");
    goto out;
  }
  if (env && !json_is_null(env) && !json_is_object(env)) {
    ret = respond_error(a, c, r, 400, "invalid_request", "env must be an object {KEY: VALUE}");
    goto out;
  }
  if (!read_limits(a, j, &l, msg, sizeof msg)) {
    ret = respond_error(a, c, r, 400, "invalid_request", "%s", msg);
    goto out;
  }
  if (json_is_object(env) && (ne = json_object_size(env)) > 0) {
    envv = calloc(ne + 1, sizeof *envv);
    owned = calloc(ne, sizeof *owned);
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(env, key, v) {
      if (!json_is_string(v) || asprintf(&owned[k], "%s=%s", key, json_string_value(v)) < 0) {
        ret = respond_error(a, c, r, 400, "invalid_request", "env['%s'] must be a string", key);
        goto out;
      }
      envv[k] = owned[k];
      k++;
    }
  }
  cr_session_opts o;
  cr_session_opts_init(&o);
  o.language = json_is_string(lang) ? json_string_value(lang) : "python";
  o.timeout_s = l.timeout_s;
  o.memory_bytes = l.memory_bytes;
  o.output_limit = a->o.output_limit;
  o.env = envv;
  char id[40];
  cr_err err = {0};
  if (cr_mgr_open(a->mgr, &o, json_is_number(ttl) ? json_number_value(ttl) : 0, r->caller, id,
                  &err) < 0) {
    /* The server's maximum, a bad value, or the sandbox itself failing to
     * start (a server problem, not the request's). */
    bool full = err.errnum == EUSERS;
    bool bad = strstr(err.msg, "out of range") != NULL;
    ret = respond_error(a, c, r, full ? 429 : bad ? 400 : 500,
                        full ? "too_many_sessions" : bad ? "invalid_request" : "internal", "%s",
                        err.msg);
    goto out;
  }
  atomic_fetch_add(&a->m_sandboxes, 1);
  cr_session_info info;
  if (cr_mgr_info(a->mgr, id, r->caller, &info, &err) < 0) {
    /* Closed or expired in the moment since it opened (a ttl_s of almost
     * nothing): say so rather than describe it. */
    ret = respond_error(a, c, r, 409, "session_closed", "the session %s ended as it opened: %s",
                        id, err.msg);
    goto out;
  }
  cr_api_log(a, "session", "open id=%s caller=%s language=%s", id, r->caller[0] ? r->caller : "-",
             info.language);
  ret = respond_json(a, c, r, 201, info_json(&info, false));
out:
  for (size_t i = 0; owned && i < ne; i++)
    free(owned[i]);
  free(owned);
  free(envv);
  json_decref(j);
  return ret;
}

static enum MHD_Result route_session_execute(cr_api *a, struct MHD_Connection *c, req *r,
                                             const char *id) {
  enum MHD_Result ret = MHD_YES;
  json_t *j = parse_body(a, c, r, &ret);
  if (!j)
    return ret;
  static const char *const fields[] = {"code", "timeout_s", NULL};
  char msg[512];
  json_t *code = json_object_get(j, "code"), *t = json_object_get(j, "timeout_s");
  if (!check_fields(j, fields, msg, sizeof msg)) {
    ret = respond_error(a, c, r, 400, "invalid_request",
                        "unknown field '%s': allowed are code, timeout_s", msg);
  } else if (!json_is_string(code)) {
    ret = respond_error(a, c, r, 400, "invalid_request", "code must be a string");
  } else if (t && !json_is_null(t) && (!json_is_number(t) || !(json_number_value(t) > 0))) {
    ret = respond_error(a, c, r, 400, "invalid_request", "timeout_s must be a number above 0");
  } else if (json_is_number(t) && json_number_value(t) > a->o.max_timeout_s) {
    ret = respond_error(a, c, r, 400, "invalid_request",
                        "timeout_s %g exceeds the server's maximum of %g", json_number_value(t),
                        a->o.max_timeout_s);
  } else if (json_string_length(code) == 0) {
    ret = respond_error(a, c, r, 400, "invalid_request", "empty code: send the code to run");
  } else {
    cr_err err = {0};
    cr_session *s = cr_mgr_get(a->mgr, id, r->caller, &err);
    if (!s) {
      ret = respond_error(a, c, r, 404, "not_found", "%s", err.msg);
    } else if (want_stream(a, c)) {
      stream *st = stream_new(a, c, r->caller);
      if (!st) {
        cr_mgr_release(a->mgr, s);
        json_decref(j);
        return respond_error(a, c, r, 500, "internal", "out of memory");
      }
      st->sess = s;
      st->code = strdup(json_string_value(code));
      st->code_len = json_string_length(code);
      st->timeout_s = json_is_number(t) ? json_number_value(t) : 0;
      ret = start_stream(a, c, r, st, session_worker);
    } else {
      double t0 = cr_now_s();
      cr_result res;
      cr_exec_extras x = {
          .on_turn = take_slot_on_turn, .on_turn_end = give_slot_on_turn_end, .turn_ctx = a};
      int rc = cr_session_execute_ex(s, json_string_value(code), json_string_length(code),
                                     json_is_number(t) ? json_number_value(t) : 0, NULL, &x, &res,
                                     &err);
      cr_mgr_touch(a->mgr, s);
      cr_mgr_release(a->mgr, s);
      if (rc < 0 && err.errnum == EAGAIN && cr_api_draining(a)) {
        cr_result_free(&res);
        ret = respond_error(a, c, r, 503, "shutting_down", "%s", err.msg);
      } else if (rc < 0 && err.errnum == EAGAIN) {
        cr_result_free(&res);
        ret = respond_error(a, c, r, 429, "too_many_requests", "%s", err.msg);
      } else if (rc < 0 && err.errnum == ESHUTDOWN) {
        cr_result_free(&res);
        ret = respond_error(a, c, r, 409, "session_closed", "%s", err.msg);
      } else if (rc < 0) {
        cr_result_free(&res);
        ret = respond_error(a, c, r, 400, "invalid_request", "%s", err.msg);
      } else {
        cr_api_count(a, &res, cr_now_s() - t0);
        cr_api_log(a, "exec", "id=%llu session=%s caller=%s language=%s status=%s duration_ms=%.1f",
                   (unsigned long long)atomic_fetch_add(&a->m_exec_ids, 1) + 1, id,
                   r->caller[0] ? r->caller : "-", res.language ? res.language : "-",
                   cr_status_name(res.status), res.duration_ms);
        json_t *out = cr_result_to_json(&res);
        cr_result_free(&res);
        ret = respond_json(a, c, r, 200, out);
      }
    }
  }
  json_decref(j);
  return ret;
}

/* ---- files of a session ----------------------------------------------- */

static const char *type_name(mode_t m) {
  return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

static enum MHD_Result route_files(cr_api *a, struct MHD_Connection *c, req *r, const char *id,
                                   const char *method, const char *raw_path) {
  cr_err err = {0};
  char *path = NULL;
  if (raw_path) {
    path = pct_decode(raw_path, strlen(raw_path));
    if (!path || !cr_sb_path_ok(path)) {
      free(path);
      return respond_error(a, c, r, 400, "invalid_request",
                           "the file path must be relative to /workspace, without '..', '.', "
                           "empty components or NUL bytes");
    }
  }
  cr_session *s = cr_mgr_get(a->mgr, id, r->caller, &err);
  if (!s) {
    free(path);
    return respond_error(a, c, r, 404, "not_found", "%s", err.msg);
  }
  int ws = cr_session_workspace_fd(s);
  uid_t uid;
  gid_t gid;
  cr_session_ids(s, &uid, &gid);
  enum MHD_Result ret;
  if (!path && strcmp(method, "GET") == 0) {
    /* a listing; ?path=dir, default the workspace itself */
    const char *q = a->mhd->lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
    char *dir = NULL;
    if (q && *q && strcmp(q, ".") != 0) {
      dir = pct_decode(q, strlen(q));
      if (!dir || !cr_sb_path_ok(dir)) {
        free(dir);
        cr_mgr_release(a->mgr, s);
        return respond_error(a, c, r, 400, "invalid_request",
                             "path must be a relative directory inside /workspace");
      }
    }
    cr_ws_dirent *ents;
    size_t nents;
    int lrc = cr_ws_list_dir(ws, dir, &ents, &nents);
    if (lrc < 0) {
      ret = lrc == -ENOENT ? respond_error(a, c, r, 404, "not_found", "no directory '%s'", dir)
                           : respond_error(a, c, r, 400, "invalid_request",
                                           "'%s' is not a directory inside /workspace (%s)",
                                           dir ? dir : ".", strerror(-lrc));
    } else {
      json_t *entries = json_array();
      for (size_t i = 0; i < nents; i++) {
        char *p = NULL;
        if (asprintf(&p, "%s%s%s", dir ? dir : "", dir ? "/" : "", ents[i].name) < 0)
          continue;
        json_array_append_new(entries, json_pack("{s:o, s:s, s:s, s:I}", "name",
                                                 text_json(ents[i].name, strlen(ents[i].name)),
                                                 "path", p, "type", type_name(ents[i].mode),
                                                 "size", (json_int_t)ents[i].size));
        free(p);
      }
      cr_ws_dirents_free(ents, nents);
      ret = respond_json(a, c, r, 200,
                         json_pack("{s:s, s:o}", "path", dir ? dir : ".", "entries", entries));
    }
    free(dir);
  } else if (!path) {
    ret = respond_error(a, c, r, 405, "method_not_allowed",
                        "use GET for a listing; PUT/DELETE need a file path");
  } else if (strcmp(method, "GET") == 0) {
    char *buf;
    size_t got;
    int rrc = cr_ws_read(ws, path, a->o.max_body_bytes, &buf, &got);
    if (rrc == -ENOENT)
      ret = respond_error(a, c, r, 404, "not_found", "no file '%s'", path);
    else if (rrc == -EISDIR)
      ret = respond_error(a, c, r, 400, "invalid_request", "'%s' is not a regular file", path);
    else if (rrc == -EFBIG)
      ret = respond_error(a, c, r, 413, "body_too_large", "'%s' is larger than %zu bytes", path,
                          a->o.max_body_bytes);
    else if (rrc == -ENOMEM)
      ret = respond_error(a, c, r, 500, "internal", "out of memory");
    else if (rrc < 0)
      ret = respond_error(a, c, r, 400, "invalid_request",
                          "'%s' cannot be read: %s (symlinks are never followed)", path,
                          strerror(-rrc));
    else
      ret = respond(a, c, r, 200, "application/octet-stream", buf, got);
  } else if (strcmp(method, "PUT") == 0) {
    int fd = cr_ws_open(ws, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, uid, gid);
    if (fd < 0) {
      ret = respond_error(a, c, r, 400, "invalid_request", "cannot write '%s': %s", path,
                          strerror(-fd));
    } else {
      size_t off = 0;
      int e = 0;
      while (off < r->body.len) {
        ssize_t k = write(fd, r->body.data + off, r->body.len - off);
        if (k < 0) {
          e = errno;
          break;
        }
        off += (size_t)k;
      }
      close(fd);
      if (e == ENOSPC || e == EFBIG)
        ret = respond_error(a, c, r, 413, "body_too_large",
                            "the session's /workspace is full writing '%s'", path);
      else if (e)
        ret = respond_error(a, c, r, 500, "internal", "writing '%s': %s", path, strerror(e));
      else
        ret = respond_json(a, c, r, 201,
                           json_pack("{s:s, s:I}", "path", path, "size", (json_int_t)off));
    }
  } else if (strcmp(method, "DELETE") == 0) {
    int rc = cr_ws_remove(ws, path);
    ret = rc == 0          ? respond_json(a, c, r, 200,
                                          json_pack("{s:s, s:b}", "path", path, "deleted", 1))
          : rc == -ENOENT ? respond_error(a, c, r, 404, "not_found", "no file '%s'", path)
                          : respond_error(a, c, r, 400, "invalid_request", "cannot delete '%s': %s",
                                          path, strerror(-rc));
  } else {
    ret = respond_error(a, c, r, 405, "method_not_allowed", "files take GET, PUT or DELETE");
  }
  cr_mgr_release(a->mgr, s);
  free(path);
  return ret;
}

static enum MHD_Result route_sessions(cr_api *a, struct MHD_Connection *c, req *r,
                                      const char *method, const char *rest) {
  cr_err err = {0};
  if (!*rest) {
    if (strcmp(method, "POST") == 0)
      return route_session_open(a, c, r);
    if (strcmp(method, "GET") == 0) {
      cr_session_info *v;
      size_t n;
      if (cr_mgr_list(a->mgr, r->caller, &v, &n) < 0)
        return respond_error(a, c, r, 500, "internal", "out of memory");
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, info_json(&v[i], true));
      free(v);
      return respond_json(a, c, r, 200, json_pack("{s:o}", "sessions", arr));
    }
    return respond_error(a, c, r, 405, "method_not_allowed", "/v1/sessions takes GET or POST");
  }
  char id[64];
  const char *slash = strchr(rest, '/');
  size_t idl = slash ? (size_t)(slash - rest) : strlen(rest);
  if (idl == 0 || idl >= sizeof id)
    return respond_error(a, c, r, 404, "not_found", "no such session");
  memcpy(id, rest, idl);
  id[idl] = '\0';
  const char *sub = slash ? slash + 1 : "";
  if (!*sub) {
    if (strcmp(method, "GET") == 0) {
      cr_session_info info;
      if (cr_mgr_info(a->mgr, id, r->caller, &info, &err) < 0)
        return respond_error(a, c, r, 404, "not_found", "%s", err.msg);
      return respond_json(a, c, r, 200, info_json(&info, true));
    }
    if (strcmp(method, "DELETE") == 0) {
      if (cr_mgr_close(a->mgr, id, r->caller, &err) < 0)
        return respond_error(a, c, r, 404, "not_found", "%s", err.msg);
      cr_api_log(a, "session", "close id=%s caller=%s", id, r->caller[0] ? r->caller : "-");
      return respond_json(a, c, r, 200, json_pack("{s:s, s:b}", "id", id, "closed", 1));
    }
    return respond_error(a, c, r, 405, "method_not_allowed", "a session takes GET or DELETE");
  }
  if (strcmp(sub, "execute") == 0 || strcmp(sub, "interrupt") == 0 ||
      strcmp(sub, "restart") == 0) {
    if (strcmp(method, "POST") != 0)
      return respond_error(a, c, r, 405, "method_not_allowed", "%s takes POST", sub);
    if (strcmp(sub, "execute") == 0)
      return route_session_execute(a, c, r, id);
    cr_session *s = cr_mgr_get(a->mgr, id, r->caller, &err);
    if (!s)
      return respond_error(a, c, r, 404, "not_found", "%s", err.msg);
    enum MHD_Result ret;
    if (strcmp(sub, "interrupt") == 0) {
      bool was = cr_session_interrupt(s);
      ret = respond_json(a, c, r, 200, json_pack("{s:b}", "interrupted", was));
    } else if (cr_session_restart(s, &err) < 0) {
      ret = err.errnum == ESHUTDOWN ? respond_error(a, c, r, 409, "session_closed", "%s", err.msg)
                                    : respond_error(a, c, r, 500, "internal", "%s", err.msg);
    } else {
      ret = respond_json(a, c, r, 200, json_pack("{s:s, s:b}", "id", id, "restarted", 1));
    }
    cr_mgr_release(a->mgr, s);
    return ret;
  }
  if (strcmp(sub, "files") == 0)
    return route_files(a, c, r, id, method, NULL);
  if (strncmp(sub, "files/", 6) == 0)
    return route_files(a, c, r, id, method, sub + 6);
  return respond_error(a, c, r, 404, "not_found", "no route %s under a session", sub);
}

/* ---- runtimes ----------------------------------------------------------- */

static char *first_line_of(const char *const argv[]) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return NULL;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  char buf[256] = "";
  ssize_t n = pid > 0 ? read(p[0], buf, sizeof buf - 1) : -1;
  close(p[0]);
  if (pid > 0)
    waitpid(pid, NULL, 0);
  if (n <= 0)
    return NULL;
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  return strdup(buf);
}

void cr_api_runtimes_init(cr_api *a) {
  json_t *arr = json_array();
  static const char *names[] = {"python", "node", "bash"};
  for (size_t i = 0; i < 3; i++) {
    const cr_runtime *rt = cr_runtime_find(names[i]);
    const char *interp = cr_runtime_interpreter(rt);
    if (!interp)
      continue;
    const char *argv[] = {interp, "--version", NULL};
    char *ver = first_line_of(argv);
    char *pk = cr_inventory_packages(names[i]);
    json_t *pkgs = json_array();
    for (char *t = pk ? strtok(pk, ",") : NULL; t; t = strtok(NULL, ",")) {
      while (*t == ' ')
        t++;
      if (*t && strncmp(t, "and ", 4) != 0)
        json_array_append_new(pkgs, json_string(t));
    }
    json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:o}", "language", names[i], "version",
                                         ver ? ver : "", "interpreter", interp, "packages",
                                         pkgs));
    free(ver);
    free(pk);
  }
  a->runtimes = json_pack("{s:o}", "runtimes", arr);
}

void cr_api_runtimes_free(cr_api *a) {
  json_decref(a->runtimes);
  a->runtimes = NULL;
}


/* ---- MCP over Streamable HTTP (/mcp) ----------------------------------- */

static bool origin_ok(const char *origin) {
  /* DNS rebinding: a browser page from elsewhere must not reach a local
   * server (the MCP specification asks servers to check Origin). */
  if (!origin)
    return true;
  static const char *const ok_hosts[] = {"http://localhost", "http://127.0.0.1", "http://[::1]",
                                         "https://localhost", "https://127.0.0.1",
                                         "https://[::1]"};
  for (size_t i = 0; i < sizeof ok_hosts / sizeof *ok_hosts; i++) {
    size_t n = strlen(ok_hosts[i]);
    if (strncmp(origin, ok_hosts[i], n) == 0 && (origin[n] == '\0' || origin[n] == ':'))
      return true;
  }
  return false;
}

static enum MHD_Result mcp_json(cr_api *a, struct MHD_Connection *c, req *r, unsigned status,
                                json_t *j, const char *session_id) {
  char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
  json_decref(j);
  if (!s)
    return MHD_NO;
  struct MHD_Response *resp =
      a->mhd->create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(s);
    return MHD_NO;
  }
  a->mhd->add_response_header(resp, "Content-Type", "application/json");
  if (session_id)
    a->mhd->add_response_header(resp, "Mcp-Session-Id", session_id);
  r->status = (int)status;
  enum MHD_Result ret = a->mhd->queue_response(c, status, resp);
  a->mhd->destroy_response(resp);
  return ret;
}

static enum MHD_Result mcp_empty(cr_api *a, struct MHD_Connection *c, req *r, unsigned status) {
  return respond(a, c, r, status, "application/json", strdup(""), 0);
}

static json_t *rpc_error(int code, const char *msg) {
  return json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code", code,
                   "message", msg);
}

/* Borrows an MCP session by id for owner (refs++); false if there is none. */
/* An MCP connection ends: its sandboxes close and its place under
 * --max-sessions is given back. */
static void mcp_conn_free(cr_api *a, struct cr_mcp *m) {
  cr_mcp_free(m);
  cr_mgr_unreserve(a->mgr);
}

static bool mcp_get(cr_api *a, const char *id, const char *owner) {
  bool found = false;
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->nmcps; i++)
    if (!a->mcps[i].closing && strcmp(a->mcps[i].id, id) == 0 &&
        strcmp(a->mcps[i].owner, owner) == 0) {
      a->mcps[i].refs++;
      a->mcps[i].last = cr_now_s();
      found = true;
      break;
    }
  pthread_mutex_unlock(&a->lock);
  return found;
}

static struct cr_mcp *mcp_of(cr_api *a, const char *id) {
  struct cr_mcp *m = NULL;
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->nmcps; i++)
    if (strcmp(a->mcps[i].id, id) == 0)
      m = a->mcps[i].m;
  pthread_mutex_unlock(&a->lock);
  return m;
}

static void mcp_put(cr_api *a, const char *id) {
  struct cr_mcp *victim = NULL;
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->nmcps; i++)
    if (strcmp(a->mcps[i].id, id) == 0) {
      a->mcps[i].refs--;
      a->mcps[i].last = cr_now_s(); /* idle from the end of a request, not its start */
      if (a->mcps[i].refs == 0 && a->mcps[i].closing) {
        victim = a->mcps[i].m;
        a->mcps[i] = a->mcps[--a->nmcps];
      }
      break;
    }
  pthread_mutex_unlock(&a->lock);
  if (victim)
    mcp_conn_free(a, victim); /* closes its sandboxes */
}


void cr_mcp_http_sweep(cr_api *a, double idle_s) {
  double now = cr_now_s();
  for (;;) {
    struct cr_mcp *victim = NULL;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->nmcps; i++)
      if (a->mcps[i].refs == 0 && now - a->mcps[i].last > idle_s) {
        victim = a->mcps[i].m;
        a->mcps[i] = a->mcps[--a->nmcps];
        break;
      }
    pthread_mutex_unlock(&a->lock);
    if (!victim)
      return;
    cr_api_log(a, "mcp", "closing an MCP session idle for more than %g s", idle_s);
    mcp_conn_free(a, victim); /* closes its sandboxes */
  }
}

void cr_mcp_http_shut_all(cr_api *a) {
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->nmcps; i++) {
    a->mcps[i].closing = true;
    cr_mcp_shut(a->mcps[i].m);
  }
  pthread_mutex_unlock(&a->lock);
}

void cr_mcp_http_free_all(cr_api *a) {
  for (size_t i = 0; i < a->nmcps; i++)
    mcp_conn_free(a, a->mcps[i].m);
  free(a->mcps);
  a->mcps = NULL;
  a->nmcps = 0;
}

static enum MHD_Result route_mcp(cr_api *a, struct MHD_Connection *c, req *r,
                                 const char *method) {
  if (!origin_ok(a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Origin")))
    return mcp_json(a, c, r, 403, rpc_error(-32600, "Forbidden: Origin is not a loopback origin"),
                    NULL);
  const char *who =
      cr_api_auth(a, a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"));
  if (!who)
    return mcp_json(a, c, r, 401,
                    rpc_error(-32600, "Unauthorized: send Authorization: Bearer KEY"), NULL);
  r->caller = who;
  const char *sid = a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
  if (strcmp(method, "GET") == 0)
    return mcp_json(a, c, r, 405,
                    rpc_error(-32000, "Method Not Allowed: this server sends no server-initiated "
                                      "messages; use POST"),
                    NULL);
  if (strcmp(method, "DELETE") == 0) {
    if (!sid)
      return mcp_json(a, c, r, 400, rpc_error(-32000, "Bad Request: Mcp-Session-Id is missing"),
                      NULL);
    if (!mcp_get(a, sid, who))
      return mcp_json(a, c, r, 404, rpc_error(-32001, "Session not found"), NULL);
    /* A call running now is stopped, not waited for: the client ended the
     * session. Its sandboxes go when the last request lets go of it. */
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->nmcps; i++)
      if (strcmp(a->mcps[i].id, sid) == 0) {
        a->mcps[i].closing = true;
        cr_mcp_shut(a->mcps[i].m);
      }
    pthread_mutex_unlock(&a->lock);
    char id[40];
    snprintf(id, sizeof id, "%s", sid);
    mcp_put(a, id);
    return mcp_empty(a, c, r, 200);
  }
  if (strcmp(method, "POST") != 0)
    return mcp_json(a, c, r, 405, rpc_error(-32000, "Method Not Allowed"), NULL);
  json_error_t je;
  json_t *msg = r->body.len ? json_loadb(r->body.data, r->body.len, 0, &je) : NULL;
  if (!msg)
    return mcp_json(a, c, r, 400, cr_mcp_parse_error(r->body.len ? je.text : "empty body"), NULL);
  cr_mcp_http_sweep(a, CR_MCP_IDLE_S);
  if (cr_mcp_is(msg, "initialize")) {
    if (!json_object_get(msg, "id")) {
      json_decref(msg);
      return mcp_json(a, c, r, 400,
                      rpc_error(-32600, "initialize must be a request (with an id), not a "
                                        "notification"),
                      NULL);
    }
    /* An MCP session holds sandboxes (one per language it uses): it
     * counts against --max-sessions with the API's sessions, reserved in
     * the manager for its life (mcp_conn_free gives it back). */
    cr_err rerr = {0};
    if (cr_mgr_reserve(a->mgr, &rerr) < 0) {
      json_decref(msg);
      atomic_fetch_add(&a->m_rejected, 1);
      return mcp_json(a, c, r, 429,
                      rpc_error(-32000, "Too many sessions: the server has --max-sessions open; "
                                        "end one (DELETE) or wait for one to expire"),
                      NULL);
    }
    cr_toolbox_opts to;
    cr_toolbox_opts_init(&to);
    to.timeout_s = a->o.default_timeout_s;
    to.memory_bytes = a->o.default_memory_bytes;
    struct cr_mcp *m = cr_mcp_new(&to);
    /* Runs take an execution slot like every other execution of the
     * server, for their turn on the session only. */
    if (m)
      cr_mcp_set_slots(m, take_slot_on_turn, give_slot_on_turn_end, a);
    json_t *resp = m ? cr_mcp_handle(m, msg) : NULL;
    json_decref(msg);
    if (!resp || json_object_get(resp, "error")) {
      mcp_conn_free(a, m);
      return mcp_json(a, c, r, resp ? 400 : 500, resp ? resp : rpc_error(-32603, "out of memory"),
                      NULL);
    }
    cr_mcp_conn conn = {.m = m, .last = cr_now_s()};
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
      for (size_t i = 0; i < sizeof rnd; i++)
        rnd[i] = (unsigned char)(rand() & 0xff);
    for (size_t i = 0; i < sizeof rnd; i++)
      sprintf(conn.id + 2 * i, "%02x", rnd[i]);
    snprintf(conn.owner, sizeof conn.owner, "%s", who);
    pthread_mutex_lock(&a->lock);
    cr_mcp_conn *v = realloc(a->mcps, (a->nmcps + 1) * sizeof *v);
    if (v) {
      a->mcps = v;
      v[a->nmcps++] = conn;
    }
    pthread_mutex_unlock(&a->lock);
    if (!v) {
      mcp_conn_free(a, m);
      json_decref(resp);
      return mcp_json(a, c, r, 500, rpc_error(-32603, "out of memory"), NULL);
    }
    return mcp_json(a, c, r, 200, resp, conn.id);
  }
  if (!sid) {
    json_decref(msg);
    return mcp_json(a, c, r, 400,
                    rpc_error(-32000, "Bad Request: Mcp-Session-Id is missing (initialize first)"),
                    NULL);
  }
  char id[40];
  snprintf(id, sizeof id, "%s", sid);
  if (!mcp_get(a, id, who)) {
    json_decref(msg);
    return mcp_json(a, c, r, 404, rpc_error(-32001, "Session not found"), NULL);
  }
  /* A run refused an execution slot (past the queue) is a busy error. */
  bool busy = false;
  json_t *resp = cr_mcp_handle_ex(mcp_of(a, id), msg, &busy);
  json_decref(msg);
  mcp_put(a, id);
  if (!resp)
    return mcp_empty(a, c, r, 202); /* a notification or a response */
  return mcp_json(a, c, r, !busy ? 200 : cr_api_draining(a) ? 503 : 429, resp, NULL);
}

/* ---- dispatch ------------------------------------------------------------- */

/* Request bodies held in memory by all connections together, at most: the
 * per-request maximum alone would let a few hundred connections hold
 * gigabytes before any of them is answered. */
static size_t body_budget(const cr_api *a) {
  size_t four = a->o.max_body_bytes * 4;
  return four > (256u << 20) ? four : 256u << 20;
}

static void body_release(cr_api *a, req *r) {
  if (r->held) {
    atomic_fetch_sub(&a->body_bytes, r->held);
    r->held = 0;
  }
  cr_buf_free(&r->body);
}

/* Host names a local client uses for a loopback server. */
static bool host_ok(const char *host) {
  size_t n = strlen(host);
  if (host[0] == '[') {
    const char *e = strchr(host, ']');
    if (!e)
      return false;
    n = (size_t)(e - host) + 1;
    if (e[1] && e[1] != ':')
      return false;
    return n == 5 && strncmp(host, "[::1]", 5) == 0;
  }
  const char *colon = strchr(host, ':');
  if (colon)
    n = (size_t)(colon - host);
  if (n == 9 && strncasecmp(host, "localhost", 9) == 0)
    return true;
  /* 127.0.0.0/8, written as a dotted quad */
  unsigned b[4];
  char tail;
  char buf[64];
  if (n >= sizeof buf)
    return false;
  memcpy(buf, host, n);
  buf[n] = '\0';
  return sscanf(buf, "%u.%u.%u.%u%c", &b[0], &b[1], &b[2], &b[3], &tail) == 4 && b[0] == 127 &&
         b[1] < 256 && b[2] < 256 && b[3] < 256;
}

/* Without API keys the server runs the code of whoever reaches its loopback
 * address, and a web page in the user's browser reaches it too: a
 * cross-origin POST needs no preflight when it says text/plain, and DNS
 * rebinding lets the page read the answers. Browsers always say where such
 * a request comes from (Origin) and which name they resolved (Host). With
 * keys, the page cannot know one. */
static bool from_foreign_page(cr_api *a, struct MHD_Connection *c) {
  if (a->nkeys)
    return false;
  const char *origin = a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
  const char *host = a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  return (origin && !origin_ok(origin)) || (host && !host_ok(host));
}

static enum MHD_Result dispatch(cr_api *a, struct MHD_Connection *c, req *r, const char *url,
                                const char *method) {
  if (r->overloaded)
    return respond_error(a, c, r, 503, "busy",
                         "the server is holding too many request bodies at once; retry shortly");
  if (r->too_big)
    return respond_error(a, c, r, 413, "body_too_large",
                         "the request body is larger than the server's maximum of %zu bytes",
                         a->o.max_body_bytes);
  /* the path without the query */
  char path[2048];
  size_t pl = strcspn(url, "?");
  if (pl >= sizeof path)
    return respond_error(a, c, r, 400, "invalid_request", "the URL is too long");
  memcpy(path, url, pl);
  path[pl] = '\0';
  bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  if (!get && (strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0 ||
               strcmp(path, "/openapi.json") == 0))
    return respond_error(a, c, r, 405, "method_not_allowed", "%s takes GET", path);
  if (strcmp(path, "/healthz") == 0) {
    pthread_mutex_lock(&a->lock);
    size_t running = a->running;
    pthread_mutex_unlock(&a->lock);
    return respond_json(a, c, r, 200,
                        json_pack("{s:s, s:I, s:I}", "status", "ok", "sessions",
                                  (json_int_t)cr_mgr_count(a->mgr), "running",
                                  (json_int_t)running));
  }
  if (strcmp(path, "/metrics") == 0) {
    char *m = cr_api_metrics(a);
    return respond(a, c, r, 200, "text/plain; version=0.0.4", m, strlen(m));
  }
  if (strcmp(path, "/openapi.json") == 0) {
    char *doc = malloc(cr_embed_openapi_json_len);
    if (!doc)
      return respond_error(a, c, r, 500, "internal", "out of memory");
    memcpy(doc, cr_embed_openapi_json, cr_embed_openapi_json_len);
    return respond(a, c, r, 200, "application/json", doc, cr_embed_openapi_json_len);
  }
  if (strcmp(path, "/mcp") == 0)
    return route_mcp(a, c, r, method);
  if (strncmp(path, "/v1/", 4) != 0)
    return respond_error(a, c, r, 404, "not_found", "no route %s %s (see /openapi.json)", method,
                         path);
  const char *who =
      cr_api_auth(a, a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"));
  if (!who)
    return respond_error(a, c, r, 401, "unauthorized",
                         "send the header 'Authorization: Bearer KEY' with a valid API key");
  r->caller = who;
  const char *p = path + 4;
  if (strcmp(p, "execute") == 0)
    return strcmp(method, "POST") == 0
               ? route_execute(a, c, r)
               : respond_error(a, c, r, 405, "method_not_allowed", "/v1/execute takes POST");
  if (strcmp(p, "grade") == 0)
    return strcmp(method, "POST") == 0
               ? route_grade(a, c, r)
               : respond_error(a, c, r, 405, "method_not_allowed", "/v1/grade takes POST");
  if (strcmp(p, "runtimes") == 0) {
    if (!get)
      return respond_error(a, c, r, 405, "method_not_allowed", "/v1/runtimes takes GET");
    json_incref(a->runtimes);
    return respond_json(a, c, r, 200, a->runtimes);
  }
  if (strcmp(p, "sessions") == 0)
    return route_sessions(a, c, r, method, "");
  if (strncmp(p, "sessions/", 9) == 0)
    return route_sessions(a, c, r, method, p + 9);
  return respond_error(a, c, r, 404, "not_found", "no route %s %s (see /openapi.json)", method,
                       path);
}

/* The headers are in, the body is not: what can be refused without reading
 * it is refused here (a foreign web page, a missing or wrong key, a
 * declared body over the maximum), so that no unauthenticated client makes
 * the server hold its body. `e2b`: the E2B port (its own token header). */
static enum MHD_Result first_call(cr_api *a, struct MHD_Connection *c, const char *url,
                                  const char *method, void **con_cls, bool e2b) {
  req *r = calloc(1, sizeof *r);
  if (!r)
    return MHD_NO;
  r->t0 = cr_now_s();
  r->caller = "";
  pthread_mutex_lock(&a->lock);
  a->open_requests++;
  pthread_mutex_unlock(&a->lock);
  snprintf(r->method, sizeof r->method, "%s", method);
  snprintf(r->path, sizeof r->path, "%.*s", (int)strcspn(url, "?"), url);
  *con_cls = r;
  if (from_foreign_page(a, c))
    return respond_error(a, c, r, 403, "forbidden",
                         "requests from web pages of other origins or host names are refused "
                         "(this server has no API keys and trusts only local clients)");
  bool open = e2b ? strcmp(r->path, "/health") == 0
                  : strncmp(r->path, "/v1/", 4) != 0 && strcmp(r->path, "/mcp") != 0;
  if (!open && a->nkeys) {
    const char *who;
    if (e2b) {
      const char *tok = a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
      char bearer[600];
      snprintf(bearer, sizeof bearer, "Bearer %s", tok ? tok : "");
      who = tok ? cr_api_auth(a, bearer) : NULL;
    } else {
      who = cr_api_auth(a, a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"));
    }
    if (!who) {
      if (e2b)
        return respond(a, c, r, 401, "text/plain", strdup("Unauthorized"), 12);
      if (strcmp(r->path, "/mcp") == 0)
        return mcp_json(a, c, r, 401,
                        rpc_error(-32600, "Unauthorized: send Authorization: Bearer KEY"), NULL);
      return respond_error(a, c, r, 401, "unauthorized",
                           "send the header 'Authorization: Bearer KEY' with a valid API key");
    }
  }
  /* A declared body over the maximum is refused before it is read. */
  const char *cl = a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  if (cl && strtoull(cl, NULL, 10) > a->o.max_body_bytes) {
    r->too_big = true;
    return respond_error(a, c, r, 413, "body_too_large",
                         "the request body is larger than the server's maximum of %zu bytes",
                         a->o.max_body_bytes);
  }
  return MHD_YES;
}

/* A chunk of the body: kept while under the request's maximum and the
 * server's budget for all bodies together. */
static void take_upload(cr_api *a, req *r, const char *upload, size_t n) {
  if (r->too_big)
    return;
  size_t held = atomic_fetch_add(&a->body_bytes, n) + n;
  r->held += n;
  if (held > body_budget(a)) {
    r->too_big = r->overloaded = true;
  } else if (r->body.len + n > a->o.max_body_bytes || cr_buf_append(&r->body, upload, n) < 0) {
    r->too_big = true;
  }
  if (r->too_big)
    body_release(a, r);
}

enum MHD_Result cr_api_handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  cr_api *a = cls;
  req *r = *con_cls;
  if (!r)
    return first_call(a, c, url, method, con_cls, false);
  if (*upload_size) {
    take_upload(a, r, upload, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  atomic_fetch_add(&a->m_requests, 1);
  return dispatch(a, c, r, url, method);
}

void cr_api_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)c;
  cr_api *a = cls;
  req *r = *con_cls;
  if (!r)
    return;
  cr_api_log(a, "http", "%s %s status=%d caller=%s duration_ms=%.1f%s", r->method, r->path,
             r->status,
             r->caller && r->caller[0] ? r->caller : "-", (cr_now_s() - r->t0) * 1000,
             toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (client gone)");
  body_release(a, r);
  free(r);
  *con_cls = NULL;
  pthread_mutex_lock(&a->lock);
  a->open_requests--;
  pthread_mutex_unlock(&a->lock);
}

/* ---- E2B's code-interpreter protocol (the --e2b-port) --------------------
 * The in-sandbox server E2B's SDKs talk to: POST /execute streams NDJSON
 * lines (number_of_executions, stdout, stderr, result, error,
 * end_of_execution last), and each context is a corral session. Errors are
 * plain text as upstream sends them; the SDK reads only the status. */

static enum MHD_Result e2b_text(cr_api *a, struct MHD_Connection *c, req *r, unsigned status,
                                const char *text) {
  char *b = strdup(text);
  return b ? respond(a, c, r, status, "text/plain; charset=utf-8", b, strlen(b)) : MHD_NO;
}

static enum MHD_Result e2b_null(cr_api *a, struct MHD_Connection *c, req *r) {
  return e2b_text(a, c, r, 200, "null");
}

/* E2B's language names onto ours; NULL for one we do not run. */
static const char *e2b_language(const char *l) {
  if (!l || !*l)
    return "python";
  const cr_runtime *rt = cr_runtime_find(l);
  return rt ? rt->name : NULL;
}

static const char *e2b_reported_language(const char *ours) {
  return strcmp(ours, "node") == 0 ? "javascript" : ours;
}

/* The registered default of (owner, lang), or -1. Under a->lock. */
static ssize_t e2b_default_find(cr_api *a, const char *owner, const char *lang) {
  for (size_t i = 0; i < a->ndefaults; i++)
    if (strcmp(a->defaults[i].owner, owner) == 0 && strcmp(a->defaults[i].language, lang) == 0)
      return (ssize_t)i;
  return -1;
}

/* The default context of an owner for a language, created on first use.
 * Two first requests may race to create it: the second to finish closes its
 * own and uses the one registered first, so an owner never has two
 * defaults whose variables diverge. */
static int e2b_default(cr_api *a, const char *owner, const char *lang, char id[40], cr_err *err) {
  pthread_mutex_lock(&a->lock);
  ssize_t i = e2b_default_find(a, owner, lang);
  if (i >= 0) {
    char known[40];
    snprintf(known, sizeof known, "%s", a->defaults[i].id);
    pthread_mutex_unlock(&a->lock);
    cr_session_info info;
    if (cr_mgr_info(a->mgr, known, owner, &info, err) == 0) {
      snprintf(id, 40, "%s", known);
      return 0;
    }
    /* It expired: forget it (if nobody replaced it meanwhile), make a new one. */
    pthread_mutex_lock(&a->lock);
    i = e2b_default_find(a, owner, lang);
    if (i >= 0 && strcmp(a->defaults[i].id, known) == 0)
      a->defaults[i] = a->defaults[--a->ndefaults];
  }
  pthread_mutex_unlock(&a->lock);
  cr_session_opts o;
  cr_session_opts_init(&o);
  o.language = lang;
  o.timeout_s = a->o.max_timeout_s;
  o.memory_bytes = a->o.default_memory_bytes;
  o.output_limit = a->o.output_limit;
  if (cr_mgr_open(a->mgr, &o, 86400, owner, id, err) < 0)
    return -1;
  atomic_fetch_add(&a->m_sandboxes, 1);
  pthread_mutex_lock(&a->lock);
  i = e2b_default_find(a, owner, lang);
  if (i >= 0) {
    /* Another request registered one while we made ours: theirs wins. */
    char mine[40];
    snprintf(mine, sizeof mine, "%s", id);
    snprintf(id, 40, "%s", a->defaults[i].id);
    pthread_mutex_unlock(&a->lock);
    cr_mgr_close(a->mgr, mine, owner, NULL);
    return 0;
  }
  cr_e2b_default *d = realloc(a->defaults, (a->ndefaults + 1) * sizeof *d);
  if (!d) {
    pthread_mutex_unlock(&a->lock);
    cr_mgr_close(a->mgr, id, owner, NULL);
    return cr_fail(err, ENOMEM, "registering the default context");
  }
  a->defaults = d;
  snprintf(d[a->ndefaults].owner, sizeof d[a->ndefaults].owner, "%s", owner);
  snprintf(d[a->ndefaults].language, sizeof d[a->ndefaults].language, "%s", lang);
  snprintf(d[a->ndefaults].id, sizeof d[a->ndefaults].id, "%s", id);
  a->ndefaults++;
  pthread_mutex_unlock(&a->lock);
  return 0;
}

int cr_e2b_prepare(cr_api *a, cr_err *err) {
  /* A warm default Python context, as E2B's sandbox has: without keys.
   * With keys each key gets its own on first use; one made now would
   * belong to no key and hold a session slot for nothing. */
  if (a->nkeys)
    return 0;
  char id[40];
  return e2b_default(a, "", "python", id, err);
}

/* Code that sets (set=true) or restores the variables of env_vars, in the
 * session's language. */
static char *e2b_env_code(const char *lang, json_t *vars, bool set) {
  cr_buf b = {0};
  const char *k;
  json_t *v;
  if (strcmp(lang, "python") == 0) {
    char *js = json_dumps(vars, JSON_COMPACT | JSON_ENSURE_ASCII);
    /* A JSON object of strings, ASCII-escaped, is a Python dict literal. */
    if (set)
      cr_buf_appendf(&b, "import os as _corral_os\n"
                         "_corral_saved_env = {k: _corral_os.environ.get(k) for k in %s}\n"
                         "_corral_os.environ.update(%s)\n",
                     js, js);
    else
      cr_buf_appendf(&b, "for _k, _v in _corral_saved_env.items():\n"
                         "    _corral_os.environ.pop(_k, None) if _v is None else "
                         "_corral_os.environ.__setitem__(_k, _v)\n");
    free(js);
  } else if (strcmp(lang, "node") == 0) {
    char *js = json_dumps(vars, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (set)
      cr_buf_appendf(&b, "globalThis.__corralSavedEnv = Object.fromEntries(Object.keys(%s).map("
                         "k => [k, process.env[k]])); Object.assign(process.env, %s); undefined",
                     js, js);
    else
      cr_buf_appendf(&b, "for (const [k, v] of Object.entries(globalThis.__corralSavedEnv)) "
                         "{ if (v === undefined) delete process.env[k]; else process.env[k] = v; } "
                         "undefined");
    free(js);
  } else {
    json_object_foreach(vars, k, v) {
      bool ok = *k && (isalpha((unsigned char)*k) || *k == '_');
      for (const char *p = k; *p; p++)
        ok = ok && (isalnum((unsigned char)*p) || *p == '_');
      if (!ok || !json_is_string(v))
        continue;
      /* The value it had before (HOME, PATH...) comes back after the
       * cell; one it did not have is unset again. */
      if (set) {
        cr_buf_appendf(&b,
                       "if [ -n \"${%s+x}\" ]; then __corral_had_%s=1; __corral_old_%s=$%s; "
                       "else __corral_had_%s=; fi\nexport %s='",
                       k, k, k, k, k, k);
        for (const char *p = json_string_value(v); *p; p++)
          cr_buf_append(&b, *p == '\'' ? "'\\''" : p, *p == '\'' ? 4 : 1);
        cr_buf_append(&b, "'\n", 2);
      } else {
        cr_buf_appendf(&b,
                       "if [ -n \"$__corral_had_%s\" ]; then %s=$__corral_old_%s; else unset %s; "
                       "fi\nunset __corral_had_%s __corral_old_%s\n",
                       k, k, k, k, k, k);
      }
    }
    if (!b.len)
      cr_buf_append(&b, ":", 1);
  }
  return cr_buf_steal(&b);
}

static enum MHD_Result e2b_execute(cr_api *a, struct MHD_Connection *c, req *r) {
  json_error_t je;
  json_t *j = r->body.len ? json_loadb(r->body.data, r->body.len, 0, &je) : NULL;
  json_t *code = json_object_get(j, "code"), *ctx = json_object_get(j, "context_id"),
         *lang = json_object_get(j, "language"), *vars = json_object_get(j, "env_vars");
  enum MHD_Result ret;
  bool vars_ok = true;
  const char *vk;
  json_t *vv;
  if (json_is_object(vars))
    json_object_foreach(vars, vk, vv) vars_ok = vars_ok && json_is_string(vv);
  if (!json_is_object(j) || !json_is_string(code) || !vars_ok ||
      (ctx && !json_is_null(ctx) && !json_is_string(ctx)) ||
      (lang && !json_is_null(lang) && !json_is_string(lang)) ||
      (vars && !json_is_null(vars) && !json_is_object(vars))) {
    json_decref(j);
    return e2b_text(a, c, r, 422, "the body must be {code: string, context_id?: string, "
                                  "language?: string, env_vars?: object}");
  }
  const char *cid = json_is_string(ctx) ? json_string_value(ctx) : NULL;
  const char *lname = json_is_string(lang) ? json_string_value(lang) : NULL;
  if (cid && *cid && lname && *lname) {
    json_decref(j);
    return e2b_text(a, c, r, 400, "Only one of context_id or language can be provided");
  }
  char id[40];
  cr_err err = {0};
  const char *ours = NULL;
  if (cid && *cid && strcmp(cid, "default") != 0) {
    snprintf(id, sizeof id, "%s", cid);
  } else {
    ours = e2b_language(lname);
    if (!ours) {
      json_decref(j);
      return e2b_text(a, c, r, 400, "unsupported language: use python, javascript or bash");
    }
    if (e2b_default(a, r->caller, ours, id, &err) < 0) {
      json_decref(j);
      return e2b_text(a, c, r, err.errnum == EUSERS ? 429 : 500, err.msg);
    }
  }
  cr_session *s = cr_mgr_get(a->mgr, id, r->caller, &err);
  if (!s) {
    char msg[128];
    snprintf(msg, sizeof msg, "Context %.40s not found", id);
    json_decref(j);
    return e2b_text(a, c, r, 404, msg);
  }
  stream *st = stream_new(a, c, r->caller);
  if (!st) {
    cr_mgr_release(a->mgr, s);
    json_decref(j);
    return e2b_text(a, c, r, 500, "out of memory");
  }
  st->e2b = true;
  st->sess = s;
  st->code = strdup(json_string_value(code));
  st->code_len = json_string_length(code);
  cr_session_info info;
  st->exec_count = cr_mgr_info(a->mgr, id, r->caller, &info, &err) == 0 ? (long)info.executions + 1 : 1;
  if (json_is_object(vars) && json_object_size(vars)) {
    const char *sl = cr_session_language(s);
    st->env_set = calloc(2, sizeof *st->env_set);
    st->env_set[0] = e2b_env_code(sl, vars, true);
    st->env_set[1] = e2b_env_code(sl, vars, false);
  }
  json_decref(j);
  if (st->code_len == 0) {
    /* an empty cell: nothing to run, the stream still ends properly */
    st->code = realloc(st->code, 2);
    memcpy(st->code, cr_session_language(s)[0] == 'b' ? ":" : "0", 2);
    st->code_len = 1;
  }
  ret = start_stream(a, c, r, st, session_worker);
  return ret;
}

static json_t *e2b_context_json(const cr_session_info *i) {
  return json_pack("{s:s, s:s, s:s}", "id", i->id, "language",
                   e2b_reported_language(i->language), "cwd", "/workspace");
}

static int by_created(const void *x, const void *y) {
  const cr_session_info *p = x, *q = y;
  return p->created_at < q->created_at ? -1 : p->created_at > q->created_at;
}

enum MHD_Result cr_e2b_handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  cr_api *a = cls;
  req *r = *con_cls;
  if (!r)
    return first_call(a, c, url, method, con_cls, true);
  if (*upload_size)
    return cr_api_handler(cls, c, url, method, version, upload, upload_size, con_cls);
  atomic_fetch_add(&a->m_requests, 1);
  if (r->overloaded)
    return e2b_text(a, c, r, 503, "server busy: too many request bodies held at once");
  if (r->too_big)
    return e2b_text(a, c, r, 413, "request body too large");
  char path[512];
  snprintf(path, sizeof path, "%.*s", (int)strcspn(url, "?"), url);
  if (strcmp(path, "/health") == 0)
    return respond(a, c, r, 200, "application/json", strdup("\"OK\""), 4);
  /* The same keys as the REST API, through E2B's header. */
  if (a->nkeys) {
    const char *tok = a->mhd->lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
    char bearer[600];
    snprintf(bearer, sizeof bearer, "Bearer %s", tok ? tok : "");
    const char *who = cr_api_auth(a, bearer);
    if (!tok || !who)
      return e2b_text(a, c, r, 401, "Unauthorized");
    r->caller = who;
  }
  cr_err err = {0};
  if (strcmp(path, "/execute") == 0 && strcmp(method, "POST") == 0)
    return e2b_execute(a, c, r);
  if (strcmp(path, "/contexts") == 0 && strcmp(method, "GET") == 0) {
    cr_session_info *v;
    size_t n;
    if (cr_mgr_list(a->mgr, r->caller, &v, &n) < 0)
      return e2b_text(a, c, r, 500, "out of memory");
    qsort(v, n, sizeof *v, by_created);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
      json_array_append_new(arr, e2b_context_json(&v[i]));
    free(v);
    return respond_json(a, c, r, 200, arr);
  }
  if (strcmp(path, "/contexts") == 0 && strcmp(method, "POST") == 0) {
    json_error_t je;
    json_t *j = r->body.len ? json_loadb(r->body.data, r->body.len, 0, &je) : json_object();
    json_t *l = json_object_get(j, "language");
    const char *ours = e2b_language(json_is_string(l) ? json_string_value(l) : NULL);
    if (!json_is_object(j) || (l && !json_is_null(l) && !json_is_string(l)) || !ours) {
      json_decref(j);
      return e2b_text(a, c, r, 400, "language must be python, javascript or bash");
    }
    json_decref(j);
    cr_session_opts o;
    cr_session_opts_init(&o);
    o.language = ours;
    o.timeout_s = a->o.max_timeout_s;
    o.memory_bytes = a->o.default_memory_bytes;
    o.output_limit = a->o.output_limit;
    char id[40];
    if (cr_mgr_open(a->mgr, &o, 86400, r->caller, id, &err) < 0)
      return e2b_text(a, c, r, err.errnum == EUSERS ? 429 : 500, err.msg);
    atomic_fetch_add(&a->m_sandboxes, 1);
    cr_session_info info;
    if (cr_mgr_info(a->mgr, id, r->caller, &info, &err) < 0)
      return e2b_text(a, c, r, 500, err.msg);
    return respond_json(a, c, r, 200, e2b_context_json(&info));
  }
  if (strncmp(path, "/contexts/", 10) == 0) {
    char id[64];
    const char *rest = path + 10;
    size_t idl = strcspn(rest, "/");
    snprintf(id, sizeof id, "%.*s", (int)(idl < 60 ? idl : 60), rest);
    const char *sub = rest + idl;
    char nf[128];
    snprintf(nf, sizeof nf, "Context %s not found", id);
    if (strcmp(sub, "/restart") == 0 && strcmp(method, "POST") == 0) {
      cr_session *s = cr_mgr_get(a->mgr, id, r->caller, &err);
      if (!s)
        return e2b_text(a, c, r, 404, nf);
      int rc = cr_session_restart(s, &err);
      cr_mgr_release(a->mgr, s);
      return rc < 0 ? e2b_text(a, c, r, err.errnum == ESHUTDOWN ? 409 : 500, err.msg)
                    : e2b_null(a, c, r);
    }
    if (!*sub && strcmp(method, "DELETE") == 0) {
      if (cr_mgr_close(a->mgr, id, r->caller, &err) < 0)
        return e2b_text(a, c, r, 404, nf);
      return e2b_null(a, c, r);
    }
  }
  return e2b_text(a, c, r, 404, "Not Found");
}

#include "api/mcp.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CORRAL_VERSION
#define CORRAL_VERSION "0.0.0"
#endif

struct cr_mcp {
  cr_toolbox *tools;
  pthread_mutex_t lock; /* one message at a time per connection */
  bool initialized;
  /* the tools/call running now, for notifications/cancelled (which arrive
   * while lock is held by that call) */
  pthread_mutex_t cur_lock;
  json_t *cur_id;
  bool cur_cancelled;
  atomic_bool cur_flag; /* the running call's withdrawal flag */
  /* Cancels of requests not started yet (still queued behind another call,
   * or their POST not handled yet): such a call is dropped when it comes.
   * Request ids are unique within an MCP session, so a stale entry matches
   * nothing; the ring bounds what a client can make us keep. */
  json_t *early_cancels[32];
  size_t early_next;
  /* a server's slot hooks for runs (cr_mcp_set_slots) */
  int (*take)(void *ctx, cr_err *err);
  void (*give)(void *ctx);
  void *slot_ctx;
};

void cr_mcp_set_slots(cr_mcp *m, int (*take)(void *ctx, cr_err *err), void (*give)(void *ctx),
                      void *ctx) {
  m->take = take;
  m->give = give;
  m->slot_ctx = ctx;
}

/* Newest first: a client asking for one of these gets it; any other gets
 * the newest. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

static const char instructions[] =
    "corral runs code in a secure sandbox. Whenever a question needs computation, counting, "
    "data analysis, parsing, exact arithmetic, or checking a claim, write a short program and "
    "run it with run_python (or run_javascript / run_bash) instead of guessing; print the "
    "values you need. Variables and files persist between calls, so build on earlier results. "
    "If the code fails, read the error and its hint, fix the code and run it again. There is "
    "no network access; numpy, pandas, scipy and matplotlib are installed.";

cr_mcp *cr_mcp_new(const cr_toolbox_opts *o) {
  cr_mcp *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->tools = cr_toolbox_new(o);
  if (!m->tools) {
    free(m);
    return NULL;
  }
  pthread_mutex_init(&m->lock, NULL);
  pthread_mutex_init(&m->cur_lock, NULL);
  return m;
}

void cr_mcp_free(cr_mcp *m) {
  if (!m)
    return;
  cr_toolbox_free(m->tools);
  pthread_mutex_destroy(&m->lock);
  pthread_mutex_destroy(&m->cur_lock);
  json_decref(m->cur_id);
  for (size_t i = 0; i < sizeof m->early_cancels / sizeof *m->early_cancels; i++)
    json_decref(m->early_cancels[i]);
  free(m);
}

/* Under cur_lock: was this request cancelled before it started? (The entry
 * is used up.) */
static bool take_early_cancel(cr_mcp *m, json_t *id) {
  for (size_t i = 0; i < sizeof m->early_cancels / sizeof *m->early_cancels; i++)
    if (m->early_cancels[i] && json_equal(m->early_cancels[i], id)) {
      json_decref(m->early_cancels[i]);
      m->early_cancels[i] = NULL;
      return true;
    }
  return false;
}

static json_t *error_response(json_t *id, int code, const char *msg) {
  return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                   "error", "code", code, "message", msg);
}

json_t *cr_mcp_parse_error(const char *detail) {
  char msg[512];
  snprintf(msg, sizeof msg, "Parse error: %s", detail);
  return error_response(NULL, -32700, msg);
}

bool cr_mcp_is(json_t *msg, const char *method) {
  json_t *mm = json_object_get(msg, "method");
  return json_is_string(mm) && strcmp(json_string_value(mm), method) == 0;
}

static json_t *ok(json_t *id, json_t *result) {
  return json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id, "result", result);
}

void cr_mcp_shut(cr_mcp *m) {
  if (m)
    cr_toolbox_shut(m->tools);
}

json_t *cr_mcp_handle(cr_mcp *m, json_t *msg) { return cr_mcp_handle_ex(m, msg, NULL); }

json_t *cr_mcp_handle_ex(cr_mcp *m, json_t *msg, bool *busy) {
  if (busy)
    *busy = false;
  if (!json_is_object(msg))
    return error_response(NULL, -32600, "Invalid Request: a message must be a JSON object");
  json_t *id = json_object_get(msg, "id");
  json_t *method = json_object_get(msg, "method");
  json_t *jv = json_object_get(msg, "jsonrpc");
  if (!json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0)
    return error_response(id, -32600, "Invalid Request: jsonrpc must be \"2.0\"");
  if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id))
    return error_response(NULL, -32600, "Invalid Request: id must be a string or an integer");
  if (!method) {
    /* a response to a request of ours (we send none): nothing to answer */
    if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
      return NULL;
    return error_response(id, -32600, "Invalid Request: no method");
  }
  if (!json_is_string(method))
    return error_response(id, -32600, "Invalid Request: method must be a string");
  const char *meth = json_string_value(method);
  /* Request or notification is the id's presence alone; a notification is
   * never answered, not even with an error. */
  if (!id) {
    if (strcmp(meth, "notifications/initialized") == 0) {
      pthread_mutex_lock(&m->lock);
      m->initialized = true;
      pthread_mutex_unlock(&m->lock);
    } else if (strcmp(meth, "notifications/cancelled") == 0) {
      /* The client gave up on a call: stop it if it is the one running
       * (its response is then not sent, as the protocol asks). */
      json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
      /* Withdrawn under cur_lock: the call cannot end and the next one
       * begin (with a fresh flag) in between, so only this call is hit,
       * also when it still waits for its sandbox or its turn. */
      pthread_mutex_lock(&m->cur_lock);
      if (rid && m->cur_id && json_equal(rid, m->cur_id)) {
        m->cur_cancelled = true;
        cr_toolbox_cancel(m->tools, &m->cur_flag);
      } else if (json_is_string(rid) || json_is_integer(rid)) {
        size_t k = m->early_next++ % (sizeof m->early_cancels / sizeof *m->early_cancels);
        json_decref(m->early_cancels[k]);
        m->early_cancels[k] = json_deep_copy(rid);
      }
      pthread_mutex_unlock(&m->cur_lock);
    }
    return NULL; /* the rest: nothing to do */
  }
  json_t *params = json_object_get(msg, "params");
  if (params && !json_is_object(params) && !json_is_array(params))
    return error_response(id, -32602, "Invalid params: params must be an object");

  pthread_mutex_lock(&m->lock);
  json_t *resp = NULL;
  if (strcmp(meth, "initialize") == 0) {
    json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_string(pv)) {
      resp = error_response(id, -32602, "Invalid params: protocolVersion (a string) is required");
    } else {
      const char *v = versions[0];
      for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
        if (strcmp(json_string_value(pv), versions[i]) == 0)
          v = versions[i];
      json_t *r = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v,
                            "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
                            "corral", "title", "corral code sandbox", "version", CORRAL_VERSION,
                            "instructions", instructions);
      resp = ok(id, r);
      json_decref(r);
    }
  } else if (strcmp(meth, "ping") == 0) {
    json_t *r = json_object();
    resp = ok(id, r);
    json_decref(r);
  } else if (strcmp(meth, "tools/list") == 0) {
    json_t *r = json_pack("{s:o}", "tools", cr_tools_list(NULL));
    resp = ok(id, r);
    json_decref(r);
  } else if (strcmp(meth, "tools/call") == 0) {
    json_t *name = json_object_get(params, "name");
    json_t *args = json_object_get(params, "arguments");
    if (!json_is_string(name)) {
      resp = error_response(id, -32602, "Invalid params: name (a string) is required");
    } else {
      cr_err err = {0};
      pthread_mutex_lock(&m->cur_lock);
      if (take_early_cancel(m, id)) {
        /* Cancelled before it started: not run, not answered. */
        pthread_mutex_unlock(&m->cur_lock);
        pthread_mutex_unlock(&m->lock);
        return NULL;
      }
      m->cur_id = json_deep_copy(id);
      m->cur_cancelled = false;
      atomic_store(&m->cur_flag, false);
      pthread_mutex_unlock(&m->cur_lock);
      cr_exec_extras x = {.cancel = &m->cur_flag, .on_turn = m->take, .on_turn_end = m->give,
                          .turn_ctx = m->slot_ctx};
      json_t *r = cr_toolbox_call_ex(m->tools, json_string_value(name), args, &x, &err);
      pthread_mutex_lock(&m->cur_lock);
      bool cancelled = m->cur_cancelled;
      json_decref(m->cur_id);
      m->cur_id = NULL;
      pthread_mutex_unlock(&m->cur_lock);
      if (cancelled) {
        json_decref(r);
        pthread_mutex_unlock(&m->lock);
        return NULL;
      }
      if (!r && err.errnum == EAGAIN) {
        resp = error_response(id, -32000, err.msg);
        if (busy)
          *busy = true;
      } else if (!r) {
        char emsg[700];
        snprintf(emsg, sizeof emsg, "Invalid params: %s", err.msg);
        resp = error_response(id, -32602, emsg);
      } else {
        resp = ok(id, r);
        json_decref(r);
      }
    }
  } else if (strcmp(meth, "resources/list") == 0 || strcmp(meth, "prompts/list") == 0) {
    json_t *r = json_pack("{s:[]}", strcmp(meth, "resources/list") == 0 ? "resources" : "prompts");
    resp = ok(id, r);
    json_decref(r);
  } else {
    char emsg[300];
    snprintf(emsg, sizeof emsg, "Method not found: %.200s", meth);
    resp = error_response(id, -32601, emsg);
  }
  pthread_mutex_unlock(&m->lock);
  return resp;
}

/* stdio: this thread reads; a worker handles requests in order and writes
 * the answers. Notifications are handled here at once, so that a
 * notifications/cancelled reaches a call that is running; at end of input
 * the running call is stopped and those still queued do not run. */
typedef struct stdio_q {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  json_t **items; /* messages, or parse-error answers already made */
  bool *is_answer;
  size_t n, cap, head;
  bool eof;
  cr_mcp *m;
  int rc;
} stdio_q;

/* Handles queued messages in order; `wait`: for more until end of input. */
static void stdio_run(stdio_q *q, bool wait) {
  for (;;) {
    pthread_mutex_lock(&q->lock);
    while (wait && q->head == q->n && !q->eof)
      pthread_cond_wait(&q->cv, &q->lock);
    if (q->head == q->n) {
      pthread_mutex_unlock(&q->lock);
      return;
    }
    json_t *item = q->items[q->head];
    bool answer = q->is_answer[q->head];
    q->head++;
    pthread_mutex_unlock(&q->lock);
    json_t *resp = answer ? item : cr_mcp_handle(q->m, item);
    if (!answer)
      json_decref(item);
    if (resp && q->rc == 0) {
      char *s = json_dumps(resp, JSON_COMPACT | JSON_REAL_PRECISION(10));
      /* one message per line, written whole */
      if (!s || fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
        /* Nobody reads the answers any more: what is queued need not run. */
        q->rc = 1;
        cr_mcp_shut(q->m);
      }
      free(s);
    }
    json_decref(resp);
  }
}

static void *stdio_worker(void *arg) {
  stdio_run(arg, true);
  return NULL;
}

static void stdio_push(stdio_q *q, json_t *item, bool answer) {
  pthread_mutex_lock(&q->lock);
  if (q->n == q->cap) {
    size_t nc = q->cap ? 2 * q->cap : 16;
    json_t **ni = realloc(q->items, nc * sizeof *ni);
    bool *na = ni ? realloc(q->is_answer, nc * sizeof *na) : NULL;
    if (ni)
      q->items = ni;
    if (na)
      q->is_answer = na;
    if (!ni || !na) {
      pthread_mutex_unlock(&q->lock);
      json_decref(item);
      return;
    }
    q->cap = nc;
  }
  q->items[q->n] = item;
  q->is_answer[q->n++] = answer;
  pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->lock);
}

int cr_mcp_stdio(const cr_toolbox_opts *o) {
  cr_mcp *m = cr_mcp_new(o);
  if (!m) {
    fprintf(stderr, "corral mcp: out of memory\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  fprintf(stderr, "corral mcp: ready (stdio; one JSON-RPC message per line)\n");
  stdio_q q = {.m = m};
  pthread_mutex_init(&q.lock, NULL);
  pthread_cond_init(&q.cv, NULL);
  pthread_t worker;
  bool threaded = pthread_create(&worker, NULL, stdio_worker, &q) == 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      line[--n] = '\0';
    if (n == 0)
      continue;
    json_error_t je;
    json_t *msg = json_loadb(line, (size_t)n, 0, &je);
    if (!msg) {
      stdio_push(&q, cr_mcp_parse_error(je.text), true);
    } else if (json_is_object(msg) && !json_object_get(msg, "id") &&
               json_is_string(json_object_get(msg, "method"))) {
      cr_mcp_handle(m, msg); /* a notification: never answered */
      json_decref(msg);
    } else {
      stdio_push(&q, msg, false);
    }
    if (!threaded)
      stdio_run(&q, false);
  }
  free(line);
  /* End of input: what was sent before it still runs and is answered (a
   * script of requests piped in); a client that is gone shows as failing
   * writes instead (above). */
  pthread_mutex_lock(&q.lock);
  q.eof = true;
  pthread_cond_signal(&q.cv);
  pthread_mutex_unlock(&q.lock);
  if (threaded)
    pthread_join(worker, NULL);
  else
    stdio_run(&q, false);
  free(q.items);
  free(q.is_answer);
  pthread_mutex_destroy(&q.lock);
  pthread_cond_destroy(&q.cv);
  cr_mcp_free(m);
  fprintf(stderr, "corral mcp: input closed, sessions closed\n");
  return q.rc;
}

#include "api/mcp.h"

#include <pthread.h>
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
};

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
  return m;
}

void cr_mcp_free(cr_mcp *m) {
  if (!m)
    return;
  cr_toolbox_free(m->tools);
  pthread_mutex_destroy(&m->lock);
  free(m);
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

bool cr_mcp_runs_code(json_t *msg) { return cr_mcp_is(msg, "tools/call"); }

json_t *cr_mcp_handle(cr_mcp *m, json_t *msg) {
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
    }
    return NULL; /* notifications/cancelled and the rest: nothing to do */
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
      json_t *r = cr_toolbox_call(m->tools, json_string_value(name), args, &err);
      if (!r) {
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

int cr_mcp_stdio(const cr_toolbox_opts *o) {
  cr_mcp *m = cr_mcp_new(o);
  if (!m) {
    fprintf(stderr, "corral mcp: out of memory\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  fprintf(stderr, "corral mcp: ready (stdio; one JSON-RPC message per line)\n");
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      line[--n] = '\0';
    if (n == 0)
      continue;
    json_error_t je;
    json_t *msg = json_loadb(line, (size_t)n, 0, &je);
    json_t *resp = msg ? cr_mcp_handle(m, msg) : cr_mcp_parse_error(je.text);
    json_decref(msg);
    if (resp) {
      char *s = json_dumps(resp, JSON_COMPACT | JSON_REAL_PRECISION(10));
      json_decref(resp);
      if (s) {
        /* one message per line, written whole */
        if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
          free(s);
          rc = 1;
          break;
        }
        free(s);
      }
    }
  }
  free(line);
  cr_mcp_free(m);
  fprintf(stderr, "corral mcp: input closed, sessions closed\n");
  return rc;
}

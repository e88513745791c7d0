#include "agent/agent.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/llm.h"
#include "util/base64.h"
#include "util/buf.h"

static const char system_prompt[] =
    "You can run code in a sandbox with the tools you are given. Whenever the question needs "
    "computing, counting, data analysis, exact arithmetic or checking, write a short program "
    "and run it instead of guessing; print the values you need. Variables and files persist "
    "between runs. If a run fails, read the error and its hint, fix the code and run it again. "
    "Files the user gave you are in /workspace. When you have the result, answer in plain "
    "text with the computed values.";

static const char budget_msg[] =
    "[corral: the code-execution budget is spent. Do not call tools again: give your best "
    "answer now with what you have.]";

static const char refused_after_budget_msg[] =
    "Not run: the code-execution budget is spent. Do not call tools again: answer the question "
    "now in plain text with what you have, and say what is uncertain.";

void cr_agent_opts_init(cr_agent_opts *o) {
  memset(o, 0, sizeof *o);
  o->provider = "openai";
  o->max_turns = 10;
  o->max_code_attempts = 3;
  o->request_timeout_s = 120;
  o->retries = 4;
  o->max_tokens = 4096;
  cr_toolbox_opts_init(&o->tools);
}

typedef struct run_state {
  const cr_agent_opts *o;
  cr_toolbox *tb;
  json_t *executions;
  int code_attempts, failures;
  bool budget_spent;
  /* Tool calls after the budget was spent were refused once, with a
   * request to answer: a second round of them ends the run unanswered. */
  bool refused_after_budget;
} run_state;

/* ---- review ----------------------------------------------------------- */

/* Lets the person edit the code in $EDITOR (default vi); the edited text,
 * or NULL if anything failed. Caller frees. */
static char *edit_code(const char *code) {
  char path[] = "/tmp/corral-review-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return NULL;
  size_t len = strlen(code);
  bool ok = write(fd, code, len) == (ssize_t)len;
  close(fd);
  const char *ed = getenv("EDITOR") && *getenv("EDITOR") ? getenv("EDITOR") : "vi";
  pid_t pid = ok ? fork() : -1;
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL); /* the agent ignores it; the editor must not inherit that */
    int tty = open("/dev/tty", O_RDWR);
    if (tty >= 0) {
      dup2(tty, 0);
      dup2(tty, 1);
    }
    execlp("/bin/sh", "sh", "-c", "exec $0 \"$1\"", ed, path, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  if (pid > 0)
    waitpid(pid, &st, 0);
  char *out = NULL;
  if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    cr_buf b = {0};
    int in = open(path, O_RDONLY | O_CLOEXEC);
    char tmp[65536];
    ssize_t n;
    while (in >= 0 && (n = read(in, tmp, sizeof tmp)) > 0)
      cr_buf_append(&b, tmp, (size_t)n);
    if (in >= 0)
      close(in);
    out = cr_buf_steal(&b);
  }
  unlink(path);
  return out;
}

/* 1 run, 0 declined (why in *note), -1 quit; *edited gets the code to run
 * instead when the person edited it. */
static int review(const cr_agent_opts *o, const char *code, cr_buf *note, char **edited) {
  if (o->review_cmd) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0) {
      cr_buf_appendf(note, "the review command could not be started: %s", strerror(errno));
      return 0;
    }
    if (pipe2(out, O_CLOEXEC) < 0) {
      cr_buf_appendf(note, "the review command could not be started: %s", strerror(errno));
      close(in[0]);
      close(in[1]);
      return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
      signal(SIGPIPE, SIG_DFL); /* the agent ignores it; the reviewer must not inherit that */
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(out[1], 2);
      execl("/bin/sh", "sh", "-c", o->review_cmd, (char *)NULL);
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
      /* Not reviewed is not approved: the code does not run. */
      cr_buf_appendf(note, "the review command could not be started: %s", strerror(errno));
      close(in[1]);
      close(out[0]);
      return 0;
    }
    /* Write the code and read the reviewer's words at once: a reviewer that
     * echoes what it reads (cat) would otherwise fill its output pipe while
     * we still write, and both would wait for ever. */
    size_t len = strlen(code), off = 0;
    int wfd = in[1];
    if (len == 0) {
      close(wfd);
      wfd = -1;
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    if (wfd >= 0)
      fcntl(wfd, F_SETFL, O_NONBLOCK);
    for (;;) {
      struct pollfd p[2] = {{.fd = out[0], .events = POLLIN}, {.fd = wfd, .events = POLLOUT}};
      if (poll(p, wfd >= 0 ? 2 : 1, -1) < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      if (wfd >= 0 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
        ssize_t w = write(wfd, code + off, len - off);
        if (w > 0)
          off += (size_t)w;
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || off == len) {
          close(wfd); /* done, or the reviewer stopped reading (EPIPE) */
          wfd = -1;
        }
      }
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        ssize_t n = read(out[0], buf, sizeof buf);
        if (n > 0) {
          if (note->len < 4096)
            cr_buf_append(note, buf, (size_t)n);
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          break; /* the reviewer closed its output: it is done */
        }
      }
    }
    if (wfd >= 0)
      close(wfd);
    close(out[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
      ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 1 : 0;
  }
  FILE *tty = fopen("/dev/tty", "r+");
  if (!tty) {
    cr_buf_appendf(note, "no terminal to ask on");
    return 0;
  }
  fprintf(tty, "\n--- the model wants to run ---\n%s\n--- run / skip / edit / quit? [r/s/e/q] ",
          code);
  fflush(tty);
  char ans[32] = "";
  if (!fgets(ans, sizeof ans, tty))
    ans[0] = 'q';
  fclose(tty);
  if (ans[0] == 'r' || ans[0] == 'y')
    return 1;
  if (ans[0] == 'e') {
    *edited = edit_code(code);
    if (*edited)
      return 1;
    cr_buf_appendf(note, "editing failed");
    return 0;
  }
  if (ans[0] == 'q')
    return -1;
  cr_buf_appendf(note, "the user skipped it");
  return 0;
}

/* A tool call's id as the model sent it, or one made up when it sent none.
 * A made-up id is written into the call itself (`call`, the object the
 * conversation keeps), since the result must name a call the history has:
 * strict APIs refuse a tool result whose id no earlier call carries. The
 * turn is in it so that ids stay unique across the conversation. */
static json_t *call_id(json_t *call, int turn, size_t k) {
  json_t *id = json_object_get(call, "id");
  if (json_is_string(id) && json_string_length(id) > 0)
    return json_incref(id);
  id = json_sprintf("call_corral_%d_%zu", turn, k);
  if (json_is_object(call))
    json_object_set(call, "id", id);
  return id;
}

/* Has the reply any text besides white space? A reply of blanks answers
 * nothing. */
static bool has_text(const cr_buf *b) {
  for (size_t i = 0; i < b->len; i++)
    if (!isspace((unsigned char)b->data[i]))
      return true;
  return false;
}

/* Is this one of the tools the model was offered (the run tools of the
 * chosen languages)? Others (write_file, reset, another language) are
 * refused even though the toolbox has them. */
static bool offered(const cr_agent_opts *o, const char *name) {
  static const char *const python_only[] = {"python", NULL};
  if (strncmp(name, "run_", 4) != 0)
    return false;
  json_t *defs = cr_tools_list(o->languages ? o->languages : python_only);
  bool found = false;
  size_t i;
  json_t *t;
  json_array_foreach(defs, i, t) {
    const char *n = json_string_value(json_object_get(t, "name"));
    if (n && strcmp(n, name) == 0)
      found = true;
  }
  json_decref(defs);
  return found;
}

/* What goes back to the model of one tool result, at most: every result
 * stays in the conversation, and a few verbose runs would otherwise fill
 * a model's context (the toolbox keeps 64 KiB per stream). Head and tail,
 * where the question's answer and the traceback are. */
#define TOOL_TEXT_MAX (12u << 10)

static char *cap_text(char *t) {
  size_t n = t ? strlen(t) : 0;
  if (n <= TOOL_TEXT_MAX)
    return t;
  size_t head = TOOL_TEXT_MAX / 3, tail = TOOL_TEXT_MAX - head;
  /* never cut inside a UTF-8 character */
  while (head > 0 && ((unsigned char)t[head] & 0xC0) == 0x80)
    head--;
  size_t from = n - tail;
  while (from < n && ((unsigned char)t[from] & 0xC0) == 0x80)
    from++;
  char *out = NULL;
  if (asprintf(&out, "%.*s\n[... %zu bytes of this result left out ...]\n%s", (int)head, t,
               from - head, t + from) < 0)
    return t;
  free(t);
  return out;
}

static char *run_tool(run_state *st, const char *name, json_t *args, bool *is_error, bool *quit) {
  cr_err err = {0};
  *is_error = false;
  if (!offered(st->o, name)) {
    *is_error = true;
    char *t = NULL;
    if (asprintf(&t, "Invalid tool call: '%s' is not one of the tools offered", name) < 0)
      t = NULL;
    return t;
  }
  bool is_run = strncmp(name, "run_", 4) == 0;
  bool was_edited = false;
  if (is_run && (st->o->review || st->o->review_cmd)) {
    json_t *c = json_object_get(args, strcmp(name, "run_bash") == 0 ? "command" : "code");
    cr_buf note = {0};
    char *edited = NULL;
    int v = review(st->o, json_is_string(c) ? json_string_value(c) : "", &note, &edited);
    if (edited) {
      /* the person's version runs, and the model is told so */
      was_edited = json_object_set_new(args, strcmp(name, "run_bash") == 0 ? "command" : "code",
                                       json_string(edited)) == 0;
      free(edited);
    }
    if (v <= 0) {
      *is_error = true;
      if (v < 0)
        *quit = true;
      char *t = NULL;
      if (asprintf(&t, "The reviewer declined to run this code.%s%.*s",
                   note.len ? " Reviewer said: " : "", (int)note.len, note.data ? note.data : "") < 0)
        t = NULL;
      cr_buf_free(&note);
      return t;
    }
    cr_buf_free(&note);
  }
  json_t *r = cr_toolbox_call(st->tb, name, args, &err);
  if (!r) {
    *is_error = true;
    char *t = NULL;
    if (asprintf(&t, "Invalid tool call: %s", err.msg) < 0)
      t = NULL;
    return t;
  }
  *is_error = json_is_true(json_object_get(r, "isError"));
  cr_buf text = {0};
  if (was_edited)
    cr_buf_appendf(&text, "[the reviewer edited the code before it ran]\n");
  size_t i;
  json_t *item;
  json_array_foreach(json_object_get(r, "content"), i, item) {
    json_t *t = json_object_get(item, "text");
    if (json_is_string(t))
      cr_buf_append(&text, json_string_value(t), json_string_length(t));
    else if (json_is_string(json_object_get(item, "mimeType")))
      cr_buf_appendf(&text, "[%s produced]\n", json_string_value(json_object_get(item, "mimeType")));
  }
  json_t *sc = json_object_get(r, "structuredContent");
  if (is_run) {
    st->code_attempts++;
    if (sc)
      json_array_append(st->executions, sc);
    if (*is_error)
      st->failures++;
    if (st->o->trace) {
      json_t *e = json_object_get(sc, "error");
      const char *msg = json_string_value(json_object_get(e, "message"));
      fprintf(stderr, "corral agent: attempt %d: %s, %s%s%s\n", st->code_attempts, name,
              json_string_value(json_object_get(sc, "status")) ?: "?", msg ? ": " : "",
              msg ? msg : "");
    }
    if (st->failures >= st->o->max_code_attempts && !st->budget_spent) {
      st->budget_spent = true;
      cr_buf_appendf(&text, "\n%s\n", budget_msg);
    }
  }
  json_decref(r);
  return cap_text(cr_buf_steal(&text));
}

/* ---- the two wire formats ------------------------------------------------ */

static json_t *tools_for(const cr_agent_opts *o, bool anthropic) {
  static const char *const python_only[] = {"python", NULL};
  json_t *defs = cr_tools_list(o->languages ? o->languages : python_only);
  json_t *out = json_array();
  size_t i;
  json_t *t;
  json_array_foreach(defs, i, t) {
    const char *name = json_string_value(json_object_get(t, "name"));
    if (strncmp(name, "run_", 4) != 0)
      continue; /* the agent offers only the run tools */
    json_t *schema = json_object_get(t, "inputSchema");
    json_t *desc = json_object_get(t, "description");
    if (anthropic)
      json_array_append_new(out, json_pack("{s:s, s:O, s:O}", "name", name, "description", desc,
                                           "input_schema", schema));
    else
      json_array_append_new(out, json_pack("{s:s, s:{s:s, s:O, s:O}}", "type", "function",
                                           "function", "name", name, "description", desc,
                                           "parameters", schema));
  }
  json_decref(defs);
  return out;
}

static int api_error(const cr_http_reply *r, const cr_agent_opts *o, cr_err *err) {
  const char *hint = r->status == 401 || r->status == 403
                         ? "check the API key (OPENAI_API_KEY / ANTHROPIC_API_KEY)"
                     : r->status == 404 ? "check --model and --base-url"
                     : r->status == 429 ? "rate limited even after retries; try again later"
                     : r->status >= 500 ? "the provider failed even after retries; try again later"
                                        : "see the provider's message";
  return cr_fail(err, 0, "%s API answered HTTP %ld (%s): %.300s", o->provider, r->status, hint,
                 r->raw);
}

int cr_agent_run(const cr_agent_opts *o, const char *question, json_t **transcript, cr_err *err) {
  *transcript = NULL;
  bool anthropic = strcmp(o->provider, "anthropic") == 0;
  if (!anthropic && strcmp(o->provider, "openai") != 0)
    return cr_fail(err, 0, "unknown provider '%s': use openai or anthropic", o->provider);
  /* A local OpenAI-compatible server (--base-url) usually takes no key; the
   * providers' own endpoints always need one. */
  bool keyless = !anthropic && o->base_url && *o->base_url;
  if ((!o->api_key || !*o->api_key) && !keyless)
    return cr_fail(err, 0, "no API key: set %s, or give --base-url for a local server that needs "
                           "none",
                   anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
  if (!o->model || !*o->model)
    return cr_fail(err, 0, "no model: give --model");
  run_state st = {.o = o, .executions = json_array()};
  st.tb = cr_toolbox_new(&o->tools);
  json_t *usage = json_pack("{s:i, s:i}", "input_tokens", 0, "output_tokens", 0);
  json_t *messages = json_array();
  char *answer = NULL;
  const char *stop = "error";
  char errmsg[CR_ERR_MSG_MAX] = "";
  int turns = 0;
  int rc = -1;

  /* the user's files first */
  for (const char *const *f = o->data_files; f && *f; f++) {
    int fd = open(*f, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > (16 << 20)) {
      if (fd >= 0)
        close(fd);
      snprintf(errmsg, sizeof errmsg, "--data '%s': not a readable file of at most 16 MiB", *f);
      goto done;
    }
    cr_buf b = {0};
    char tmp[65536];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) > 0)
      cr_buf_append(&b, tmp, (size_t)n);
    close(fd);
    const char *base = strrchr(*f, '/') ? strrchr(*f, '/') + 1 : *f;
    /* through the same tool a model would use: base64 keeps any bytes */
    char *enc = cr_b64_encode(b.data ? b.data : "", b.len);
    json_t *args = json_pack("{s:s, s:s, s:s}", "path", base, "content", enc ? enc : "",
                             "encoding", "base64");
    cr_err e2;
    json_t *r = cr_toolbox_call(st.tb, "write_file", args, &e2);
    json_decref(args);
    cr_buf_free(&b);
    free(enc);
    bool bad = !r || json_is_true(json_object_get(r, "isError"));
    json_decref(r);
    if (bad) {
      snprintf(errmsg, sizeof errmsg, "--data '%s': could not be copied into the sandbox", *f);
      goto done;
    }
  }

  char url[1024];
  const char *base_url = o->base_url && *o->base_url
                             ? o->base_url
                             : anthropic ? "https://api.anthropic.com/v1" : "https://api.openai.com/v1";
  snprintf(url, sizeof url, "%s%s%s", base_url, base_url[strlen(base_url) - 1] == '/' ? "" : "/",
           anthropic ? "messages" : "chat/completions");
  char auth[1200];
  const char *headers[4] = {0};
  if (anthropic) {
    snprintf(auth, sizeof auth, "x-api-key: %s", o->api_key);
    headers[0] = auth;
    headers[1] = "anthropic-version: 2023-06-01";
  } else {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", o->api_key ? o->api_key : "");
    if (o->api_key && *o->api_key)
      headers[0] = auth;
    json_array_append_new(messages, json_pack("{s:s, s:s}", "role", "system", "content",
                                              system_prompt));
  }
  json_array_append_new(messages, json_pack("{s:s, s:s}", "role", "user", "content", question));
  json_t *tools = tools_for(o, anthropic);
  bool quit = false;

  for (turns = 1; turns <= o->max_turns; turns++) {
    json_t *req = anthropic ? json_pack("{s:s, s:i, s:s, s:O, s:O}", "model", o->model,
                                        "max_tokens", o->max_tokens, "system", system_prompt,
                                        "messages", messages, "tools", tools)
                            : json_pack("{s:s, s:O, s:O}", "model", o->model, "messages",
                                        messages, "tools", tools);
    cr_http_reply rep;
    cr_err e2 = {0};
    int pr = cr_llm_post(url, headers, req, o->request_timeout_s, o->retries, &rep, &e2);
    json_decref(req);
    if (pr < 0) {
      snprintf(errmsg, sizeof errmsg, "%s", e2.msg);
      break;
    }
    if (rep.status != 200) {
      api_error(&rep, o, &e2);
      snprintf(errmsg, sizeof errmsg, "%s", e2.msg);
      cr_http_reply_free(&rep);
      break;
    }
    json_t *u = json_object_get(rep.body, "usage");
    json_int_t in_tok = json_integer_value(json_object_get(u, anthropic ? "input_tokens" : "prompt_tokens"));
    json_int_t out_tok = json_integer_value(json_object_get(u, anthropic ? "output_tokens" : "completion_tokens"));
    json_object_set_new(usage, "input_tokens",
                        json_integer(json_integer_value(json_object_get(usage, "input_tokens")) + in_tok));
    json_object_set_new(usage, "output_tokens",
                        json_integer(json_integer_value(json_object_get(usage, "output_tokens")) + out_tok));

    /* Normalise the reply: its text, and the tool calls (id, name, args). */
    json_t *calls = json_array();
    cr_buf text = {0};
    bool malformed = false, truncated = false;
    if (anthropic) {
      json_t *content = json_object_get(rep.body, "content");
      const char *sr = json_string_value(json_object_get(rep.body, "stop_reason"));
      if (!json_is_array(content) || !sr) {
        malformed = true;
      } else {
        size_t i;
        json_t *b;
        json_array_foreach(content, i, b) {
          const char *ty = json_string_value(json_object_get(b, "type"));
          if (ty && strcmp(ty, "text") == 0 && json_is_string(json_object_get(b, "text")))
            cr_buf_appendf(&text, "%s", json_string_value(json_object_get(b, "text")));
          else if (ty && strcmp(ty, "tool_use") == 0)
            json_array_append_new(calls, json_pack("{s:o, s:O?, s:O?}", "id",
                                                   call_id(b, turns, json_array_size(calls)),
                                                   "name", json_object_get(b, "name"), "args",
                                                   json_object_get(b, "input")));
        }
        truncated = strcmp(sr, "max_tokens") == 0;
        json_array_append_new(messages, json_pack("{s:s, s:O}", "role", "assistant", "content",
                                                  content));
      }
    } else {
      json_t *msg = json_object_get(json_array_get(json_object_get(rep.body, "choices"), 0), "message");
      if (!json_is_object(msg)) {
        malformed = true;
      } else {
        json_t *c = json_object_get(msg, "content");
        if (json_is_string(c))
          cr_buf_appendf(&text, "%s", json_string_value(c));
        size_t i;
        json_t *tc;
        json_array_foreach(json_object_get(msg, "tool_calls"), i, tc) {
          json_t *fn = json_object_get(tc, "function");
          json_error_t je;
          const char *a = json_string_value(json_object_get(fn, "arguments"));
          json_t *args = a ? json_loads(a, 0, &je) : NULL;
          json_array_append_new(calls, json_pack("{s:o, s:O?, s:o}", "id",
                                                 call_id(tc, turns, i), "name",
                                                 json_object_get(fn, "name"), "args",
                                                 args ? args : json_object()));
        }
        const char *fr = json_string_value(
            json_object_get(json_array_get(json_object_get(rep.body, "choices"), 0), "finish_reason"));
        truncated = fr && strcmp(fr, "length") == 0;
        json_array_append(messages, msg);
      }
    }
    cr_http_reply_free(&rep);
    if (malformed) {
      snprintf(errmsg, sizeof errmsg, "the %s API sent a reply without %s: %.200s", o->provider,
               anthropic ? "content and stop_reason" : "choices[0].message", rep.raw);
      json_decref(calls);
      cr_buf_free(&text);
      break;
    }
    if (json_array_size(calls) > 0 && st.budget_spent && st.refused_after_budget) {
      /* Asked twice to answer without tools and calling them again: the
       * text beside the calls ("Let me compute.") is not an answer, and
       * exit 0 promises one. */
      json_decref(calls);
      cr_buf_free(&text);
      snprintf(errmsg, sizeof errmsg,
               "the failure budget is spent and the model kept calling tools instead of "
               "answering (raise --max-code-attempts, or ask for a simpler task)");
      stop = "budget_spent";
      break;
    }
    if (json_array_size(calls) == 0) {
      /* No tool call: this is the answer, if there is one. A reply of
       * nothing (or of blanks) is not an answer: exit 0 promises one. */
      json_decref(calls);
      if (!has_text(&text)) {
        snprintf(errmsg, sizeof errmsg, "the model replied with neither text nor a tool call");
        stop = "empty_reply";
        cr_buf_free(&text);
        break;
      }
      answer = cr_buf_steal(&text);
      stop = st.budget_spent ? "budget_spent" : "answer";
      (void)truncated; /* a reply cut at max_tokens is still the answer we have */
      rc = 0;
      break;
    }
    cr_buf_free(&text);
    /* Run every call of the turn, in order, and send all results back. */
    json_t *results = json_array();
    size_t i;
    json_t *call;
    /* Calls after the budget was spent are answered, not run: every call
     * needs its result, and the model gets one more turn to answer. */
    bool refuse = st.budget_spent;
    st.refused_after_budget = refuse;
    json_array_foreach(calls, i, call) {
      bool is_error = refuse;
      const char *name = json_string_value(json_object_get(call, "name"));
      char *out = refuse ? strdup(refused_after_budget_msg)
                         : run_tool(&st, name ? name : "", json_object_get(call, "args"),
                                    &is_error, &quit);
      json_t *id = json_object_get(call, "id");
      if (anthropic)
        json_array_append_new(results, json_pack("{s:s, s:O, s:s, s:b}", "type", "tool_result",
                                                 "tool_use_id", id, "content", out ? out : "",
                                                 "is_error", is_error));
      else
        json_array_append_new(messages, json_pack("{s:s, s:O, s:s}", "role", "tool",
                                                  "tool_call_id", id, "content", out ? out : ""));
      free(out);
    }
    json_decref(calls);
    if (anthropic)
      json_array_append_new(messages, json_pack("{s:s, s:o}", "role", "user", "content", results));
    else
      json_decref(results);
    if (quit) {
      snprintf(errmsg, sizeof errmsg, "stopped by the reviewer");
      break;
    }
  }
  if (turns > o->max_turns && !answer) {
    stop = "max_turns";
    snprintf(errmsg, sizeof errmsg, "no answer within %d turns (--max-turns)", o->max_turns);
  }
  json_decref(tools);

done:
  *transcript = json_pack("{s:s?, s:s, s:i, s:i, s:O, s:O}", "answer", answer, "stop_reason",
                          stop, "turns", turns > o->max_turns ? o->max_turns : turns,
                          "code_attempts", st.code_attempts, "executions", st.executions,
                          "usage", usage);
  if (errmsg[0]) {
    json_object_set_new(*transcript, "error", json_string(errmsg));
    if (rc < 0)
      cr_fail(err, 0, "%s", errmsg);
  }
  free(answer);
  json_decref(messages);
  json_decref(usage);
  json_decref(st.executions);
  cr_toolbox_free(st.tb);
  return rc;
}

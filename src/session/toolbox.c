#include "session/toolbox.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/exec.h"
#include "exec/workspace.h"
#include "runtime/runtime.h"
#include "sandbox/sandbox.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/utf8.h"

struct cr_toolbox {
  cr_toolbox_opts o;
  /* python, node, bash; atomic: cr_toolbox_shut reads them from another
   * thread while a call may be opening one */
  _Atomic(cr_session *) sess[3];
  atomic_bool shut;
};

void cr_toolbox_opts_init(cr_toolbox_opts *o) {
  o->timeout_s = CR_DEFAULT_TIMEOUT_S;
  o->memory_bytes = CR_DEFAULT_MEMORY_BYTES;
  o->output_limit = 64u << 10; /* what a model reads: head and tail of 64 KiB */
}

cr_toolbox *cr_toolbox_new(const cr_toolbox_opts *o) {
  cr_toolbox *t = calloc(1, sizeof *t);
  if (t)
    t->o = *o;
  return t;
}

void cr_toolbox_free(cr_toolbox *t) {
  if (!t)
    return;
  for (int i = 0; i < 3; i++)
    cr_session_close(t->sess[i]);
  free(t);
}

static const char *const langs[3] = {"python", "node", "bash"};

static int lang_index(const char *l) {
  const cr_runtime *rt = cr_runtime_find(l ? l : "python");
  if (!rt)
    return -1;
  for (int i = 0; i < 3; i++)
    if (strcmp(rt->name, langs[i]) == 0)
      return i;
  return -1;
}

static cr_session *session_for(cr_toolbox *t, int i, cr_err *err) {
  if (t->sess[i])
    return t->sess[i];
  cr_session_opts o;
  cr_session_opts_init(&o);
  o.language = langs[i];
  o.timeout_s = t->o.timeout_s;
  o.memory_bytes = t->o.memory_bytes;
  o.output_limit = t->o.output_limit;
  cr_session *fresh;
  if (cr_session_open(&o, &fresh, err) < 0)
    return NULL;
  t->sess[i] = fresh;
  /* Shut while it was opening: its calls must not run. */
  if (atomic_load(&t->shut))
    cr_session_shut(fresh);
  return fresh;
}

void cr_toolbox_cancel(cr_toolbox *t, atomic_bool *flag) {
  /* The flag alone stops a call that has no session yet (its sandbox is
   * opening): execute sees it before it runs. Each session interrupts the
   * call only if the flag is its running one's. */
  atomic_store(flag, true);
  for (int i = 0; i < 3; i++) {
    cr_session *s = t->sess[i];
    if (s)
      cr_session_cancel(s, flag);
  }
}

void cr_toolbox_shut(cr_toolbox *t) {
  atomic_store(&t->shut, true);
  for (int i = 0; i < 3; i++) {
    cr_session *s = t->sess[i];
    if (s)
      cr_session_shut(s);
  }
}

/* ---- definitions -------------------------------------------------------- */

static json_t *result_schema(void) {
  /* structuredContent is the corral result object (docs/result.md). */
  return json_pack(
      "{s:s, s:[s], s:{s:{s:s}, s:{s:[s,s]}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, "
      "s:{s:s}, s:{s:s}}}",
      "type", "object", "required", "status", "properties", "status", "type", "string",
      "exit_code", "type", "integer", "null", "stdout", "type", "string", "stderr", "type",
      "string", "duration_ms", "type", "number", "results", "type", "array", "error", "type",
      "object", "null", "files", "type", "array", "limits", "type", "object");
}

static json_t *run_tool(const char *name, const char *title, const char *arg, const char *desc,
                        const char *argdesc) {
  return json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s, s:i}}, s:[s], s:b}, "
                   "s:o}",
                   "name", name, "title", title, "description", desc, "inputSchema", "type",
                   "object", "properties", arg, "type", "string", "description", argdesc,
                   "timeout_s", "type", "number", "description",
                   "wall-clock limit for this call in seconds (at most the server's)", "minimum", 1,
                   "required", arg, "additionalProperties", 0, "outputSchema", result_schema());
}

json_t *cr_tools_list(const char *const *languages) {
  json_t *tools = json_array();
  bool want[3] = {languages == NULL, languages == NULL, languages == NULL};
  for (const char *const *l = languages; l && *l; l++) {
    int i = lang_index(*l);
    if (i >= 0)
      want[i] = true;
  }
  if (want[0])
    json_array_append_new(
        tools,
        run_tool("run_python", "Run Python", "code",
                 "Run Python 3 code in a persistent sandboxed session and return what it "
                 "printed. Use it whenever an answer needs computing, counting, parsing or "
                 "checking: compute it, do not guess. Variables, imports and files in "
                 "/workspace persist between calls. The value of the last expression is "
                 "returned like a notebook; matplotlib figures come back as images. numpy, "
                 "pandas, scipy and matplotlib are installed; there is no network. Print the "
                 "results you need.",
                 "Python code to run"));
  if (want[1])
    json_array_append_new(
        tools, run_tool("run_javascript", "Run JavaScript", "code",
                        "Run JavaScript (Node.js) in a persistent sandboxed session: "
                        "let/const/function declarations persist between calls, top-level "
                        "await works, the last expression's value is returned, console output "
                        "is captured. No network.",
                        "JavaScript code to run"));
  if (want[2])
    json_array_append_new(
        tools, run_tool("run_bash", "Run a shell command", "command",
                        "Run bash commands in a persistent sandboxed shell: the working "
                        "directory, variables and functions persist between calls. The exit "
                        "status is reported. No network; only /workspace and /tmp are "
                        "writable.",
                        "bash commands to run"));
  json_array_append_new(
      tools, json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:[s,s,s]}}, s:b}}", "name", "reset",
                       "title", "Reset the interpreter", "description",
                       "Start a fresh interpreter (all variables and imports are lost; files "
                       "in /workspace are kept). Use it when the session is in a bad state.",
                       "inputSchema", "type", "object", "properties", "language", "type",
                       "string", "enum", "python", "javascript", "bash",
                       "additionalProperties", 0));
  json_array_append_new(
      tools, json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:b}}", "name", "list_files",
                       "title", "List files", "description",
                       "List a directory of the Python session's /workspace (where run_python "
                       "reads and writes files).",
                       "inputSchema", "type", "object", "properties", "path", "type", "string",
                       "description", "directory relative to /workspace (default: the top)",
                       "additionalProperties", 0));
  json_array_append_new(
      tools, json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}}", "name",
                       "read_file", "title", "Read a file", "description",
                       "Read a file of /workspace: text comes back as text, images as images, "
                       "other binary files as base64 with their MIME type.",
                       "inputSchema", "type", "object", "properties", "path", "type", "string",
                       "description", "file path relative to /workspace", "required", "path",
                       "additionalProperties", 0));
  json_array_append_new(
      tools,
      json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s}, s:{s:s, s:[s,s]}}, s:[s,s], "
                "s:b}}",
                "name", "write_file", "title", "Write a file", "description",
                "Write a file into /workspace (parent directories are created), e.g. data for "
                "run_python to read.",
                "inputSchema", "type", "object", "properties", "path", "type", "string",
                "description", "file path relative to /workspace", "content", "type", "string",
                "encoding", "type", "string", "enum", "utf-8", "base64", "required", "path",
                "content", "additionalProperties", 0));
  return tools;
}

/* ---- results ------------------------------------------------------------- */

/* The program's bytes for a reader of C strings: a NUL byte is written
 * as the two characters \0. Left raw, it would end the text there for
 * every consumer that takes it as a string (jansson's "s", strlen), and
 * a program could hide its own traceback, status and error that way. */
static void append_visible(cr_buf *b, const char *p, size_t n) {
  for (size_t i = 0; i < n;) {
    const char *z = memchr(p + i, '\0', n - i);
    size_t run = z ? (size_t)(z - (p + i)) : n - i;
    cr_buf_append(b, p + i, run);
    i += run;
    if (z) {
      cr_buf_append(b, "\\0", 2);
      i++;
    }
  }
}

char *cr_tool_result_text(const cr_result *r) {
  cr_buf b = {0};
  if (r->out_len) {
    append_visible(&b, r->out, r->out_len);
    if (r->out[r->out_len - 1] != '\n')
      cr_buf_append(&b, "\n", 1);
  }
  for (size_t i = 0; i < r->nresults; i++) {
    json_t *t = json_object_get(r->results[i].mime, "text/plain");
    if (r->results[i].main && json_is_string(t)) {
      append_visible(&b, json_string_value(t), json_string_length(t));
      cr_buf_append(&b, "\n", 1);
    }
  }
  if (r->err_len) {
    cr_buf_appendf(&b, "[stderr]\n");
    append_visible(&b, r->err, r->err_len);
    if (r->err[r->err_len - 1] != '\n')
      cr_buf_append(&b, "\n", 1);
  }
  if (r->out_truncated || r->err_truncated)
    cr_buf_appendf(&b, "[output truncated: %llu bytes of stdout and %llu of stderr dropped in "
                       "the middle]\n",
                   (unsigned long long)r->out_dropped, (unsigned long long)r->err_dropped);
  cr_buf_appendf(&b, "[status: %s", cr_status_name(r->status));
  if (r->exited)
    cr_buf_appendf(&b, ", exit code %d", r->exit_code);
  cr_buf_appendf(&b, ", %.0f ms]\n", r->duration_ms);
  if (r->has_error) {
    cr_buf_appendf(&b, "[error: %s: %s%s%s; retryable: %s]\n",
                   cr_category_name(r->error.category), r->error.name ? r->error.name : "",
                   r->error.message ? ": " : "", r->error.message ? r->error.message : "",
                   r->error.retryable ? "yes" : "no");
    if (r->error.hint)
      cr_buf_appendf(&b, "[hint: %s]\n", r->error.hint);
  }
  /* the model reads JSON text: valid UTF-8 only */
  size_t n;
  char *clean = cr_utf8_sanitize(b.data ? b.data : "", b.len, &n);
  cr_buf_free(&b);
  return clean;
}

static json_t *call_result(const cr_result *r) {
  json_t *content = json_array();
  char *text = cr_tool_result_text(r);
  json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", text ? text : ""));
  free(text);
  for (size_t i = 0; i < r->nresults; i++) {
    static const char *imgs[] = {"image/png", "image/jpeg"};
    for (int k = 0; k < 2; k++) {
      json_t *d = json_object_get(r->results[i].mime, imgs[k]);
      if (json_is_string(d))
        json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image", "data", d,
                                                 "mimeType", imgs[k]));
    }
  }
  json_t *full = cr_result_to_json(r);
  return json_pack("{s:o, s:o, s:b}", "content", content, "structuredContent",
                   full ? full : json_object(), "isError", r->status != CR_ST_OK);
}

static json_t *text_result(bool is_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static json_t *text_result(bool is_error, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", msg, "isError",
                   is_error);
}

/* ---- files ---------------------------------------------------------------- */

static const char *mime_of(const char *path) {
  const char *dot = strrchr(path, '.');
  if (!dot)
    return "application/octet-stream";
  static const struct {
    const char *ext, *mime;
  } m[] = {{".png", "image/png"},   {".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"},
           {".gif", "image/gif"},   {".webp", "image/webp"}, {".svg", "image/svg+xml"},
           {".pdf", "application/pdf"}, {".zip", "application/zip"}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++)
    if (strcasecmp(dot, m[i].ext) == 0)
      return m[i].mime;
  return "application/octet-stream";
}

static int by_name(const void *x, const void *y) {
  return strcmp(((const cr_ws_dirent *)x)->name, ((const cr_ws_dirent *)y)->name);
}

static json_t *tool_files(cr_toolbox *t, const char *name, json_t *args, cr_err *err) {
  json_t *jp = json_object_get(args, "path");
  const char *path = json_is_string(jp) ? json_string_value(jp) : NULL;
  if (jp && !json_is_null(jp) && !json_is_string(jp)) {
    cr_fail(err, 0, "path must be a string");
    return NULL;
  }
  bool top = !path || !*path || strcmp(path, ".") == 0 || strcmp(path, "./") == 0 ||
             strcmp(path, "/workspace") == 0 || strcmp(path, "/workspace/") == 0;
  if (path && strncmp(path, "/workspace/", 11) == 0)
    path += 11;
  if (!top && !cr_sb_path_ok(path)) {
    cr_fail(err, 0, "path '%s' must be relative to /workspace, without '..' or empty parts",
            path);
    return NULL;
  }
  cr_session *s = session_for(t, 0, err);
  if (!s)
    return NULL;
  int ws = cr_session_workspace_fd(s);
  uid_t uid;
  gid_t gid;
  cr_session_ids(s, &uid, &gid);
  if (strcmp(name, "list_files") == 0) {
    cr_ws_dirent *ents;
    size_t nents;
    int lrc = cr_ws_list_dir(ws, top ? NULL : path, &ents, &nents);
    if (lrc < 0)
      return text_result(true, "cannot list '%s': %s", top ? "/workspace" : path, strerror(-lrc));
    /* Any number of entries and any bytes in their names (a program made
     * them): at most 1000 listed, with the count of the rest, and the text
     * made valid UTF-8 for JSON. */
    qsort(ents, nents, sizeof *ents, by_name);
    cr_buf b = {0};
    size_t shown = nents < 1000 ? nents : 1000;
    for (size_t i = 0; i < shown; i++)
      cr_buf_appendf(&b, "%s%s\t%llu bytes\n", ents[i].name, S_ISDIR(ents[i].mode) ? "/" : "",
                     (unsigned long long)ents[i].size);
    if (nents > shown)
      cr_buf_appendf(&b, "(%zu more entries not listed)\n", nents - shown);
    cr_ws_dirents_free(ents, nents);
    size_t cl = 0;
    char *clean = cr_utf8_sanitize(b.len ? b.data : "(empty)\n", b.len ? b.len : 8, &cl);
    cr_buf_free(&b);
    json_t *r = clean ? json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text", "text", clean,
                                  cl, "isError", false)
                      : NULL;
    free(clean);
    if (!r)
      cr_fail(err, ENOMEM, "listing files: out of memory");
    return r;
  }
  if (top) {
    cr_fail(err, 0, "give the path of a file");
    return NULL;
  }
  if (strcmp(name, "read_file") == 0) {
    char *cbuf;
    size_t got;
    int rrc = cr_ws_read(ws, path, 16 << 20, &cbuf, &got);
    if (rrc == -EISDIR || rrc == -EFBIG)
      return text_result(true, "'%s' is not a regular file of at most 16 MiB", path);
    if (rrc == -ENOMEM)
      return text_result(true, "out of memory");
    if (rrc < 0)
      return text_result(true, "cannot read '%s': %s", path, strerror(-rrc));
    unsigned char *buf = (unsigned char *)cbuf;
    json_t *r;
    const char *mime = mime_of(path);
    if (strncmp(mime, "image/", 6) == 0 && strcmp(mime, "image/svg+xml") != 0) {
      char *d = cr_b64_encode(buf, got);
      r = json_pack("{s:[{s:s, s:s, s:s}], s:b}", "content", "type", "image", "data", d ? d : "",
                    "mimeType", mime, "isError", 0);
      free(d);
    } else if (cr_utf8_valid((char *)buf, got) && !memchr(buf, 0, got)) {
      r = json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text", "text", (char *)buf, got,
                    "isError", 0);
    } else {
      char *d = cr_b64_encode(buf, got);
      char uri[4200];
      snprintf(uri, sizeof uri, "file:///workspace/%s", path);
      r = json_pack("{s:[{s:s, s:{s:s, s:s, s:s}}], s:b}", "content", "type", "resource",
                    "resource", "uri", uri, "mimeType", mime, "blob", d ? d : "", "isError", 0);
      free(d);
    }
    free(buf);
    return r;
  }
  /* write_file */
  json_t *jc = json_object_get(args, "content"), *je = json_object_get(args, "encoding");
  if (!json_is_string(jc) || (je && !json_is_null(je) && !json_is_string(je))) {
    cr_fail(err, 0, "content must be a string (encoding: utf-8 or base64)");
    return NULL;
  }
  const char *enc = json_is_string(je) ? json_string_value(je) : "utf-8";
  unsigned char *data = NULL;
  size_t len = 0;
  if (strcmp(enc, "base64") == 0) {
    data = cr_b64_decode(json_string_value(jc), &len);
    if (!data) {
      cr_fail(err, 0, "content is not valid base64");
      return NULL;
    }
  } else if (strcmp(enc, "utf-8") != 0 && strcmp(enc, "utf8") != 0) {
    cr_fail(err, 0, "encoding must be utf-8 or base64");
    return NULL;
  }
  const unsigned char *p = data ? data : (const unsigned char *)json_string_value(jc);
  if (!data)
    len = json_string_length(jc);
  int fd = cr_ws_open(ws, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, uid, gid);
  json_t *r;
  if (fd < 0) {
    r = text_result(true, "cannot write '%s': %s", path, strerror(-fd));
  } else {
    size_t off = 0;
    int e = 0;
    while (off < len) {
      ssize_t k = write(fd, p + off, len - off);
      if (k < 0) {
        e = errno;
        break;
      }
      off += (size_t)k;
    }
    close(fd);
    r = e ? text_result(true, "writing '%s' failed: %s", path, strerror(e))
          : text_result(false, "wrote %zu bytes to /workspace/%s", off, path);
  }
  free(data);
  return r;
}

json_t *cr_toolbox_call(cr_toolbox *t, const char *name, json_t *args, cr_err *err) {
  return cr_toolbox_call_ex(t, name, args, NULL, err);
}

json_t *cr_toolbox_call_ex(cr_toolbox *t, const char *name, json_t *args,
                           const cr_exec_extras *x, cr_err *err) {
  if (args && !json_is_object(args) && !json_is_null(args)) {
    cr_fail(err, 0, "arguments must be an object");
    return NULL;
  }
  int li = strcmp(name, "run_python") == 0       ? 0
           : strcmp(name, "run_javascript") == 0 ? 1
           : strcmp(name, "run_bash") == 0       ? 2
                                                 : -1;
  if (li >= 0) {
    const char *key = li == 2 ? "command" : "code";
    json_t *code = json_object_get(args, key), *to = json_object_get(args, "timeout_s");
    const char *k2;
    json_t *v2;
    json_object_foreach(args, k2, v2) {
      if (strcmp(k2, key) != 0 && strcmp(k2, "timeout_s") != 0) {
        cr_fail(err, 0, "unknown argument '%s' (give %s and optionally timeout_s)", k2, key);
        return NULL;
      }
    }
    if (!json_is_string(code) || json_string_length(code) == 0) {
      cr_fail(err, 0, "%s must be a non-empty string", key);
      return NULL;
    }
    if (to && !json_is_null(to) && (!json_is_number(to) || !(json_number_value(to) > 0))) {
      cr_fail(err, 0, "timeout_s must be a number above 0");
      return NULL;
    }
    cr_session *s = session_for(t, li, err);
    if (!s)
      return text_result(true, "the sandbox could not start: %s", err->msg);
    cr_result res;
    /* the model may lower the limit, never raise it */
    double lim = json_is_number(to) ? json_number_value(to) : 0;
    if (cr_session_execute_ex(s, json_string_value(code), json_string_length(code), lim, NULL,
                              x, &res, err) < 0) {
      cr_result_free(&res);
      if (err->errnum == EAGAIN)
        return NULL; /* refused a slot: the caller says busy */
      return text_result(true, "%s", err->msg);
    }
    json_t *r = call_result(&res);
    cr_result_free(&res);
    return r;
  }
  if (strcmp(name, "reset") == 0) {
    json_t *l = json_object_get(args, "language");
    if (l && !json_is_null(l) && !json_is_string(l)) {
      cr_fail(err, 0, "language must be python, javascript or bash");
      return NULL;
    }
    int i = lang_index(json_is_string(l) ? json_string_value(l) : "python");
    if (i < 0) {
      cr_fail(err, 0, "language must be python, javascript or bash");
      return NULL;
    }
    if (!t->sess[i])
      return text_result(false, "the %s interpreter was not started yet; nothing to reset",
                         langs[i]);
    if (cr_session_restart(t->sess[i], err) < 0)
      return text_result(true, "reset failed: %s", err->msg);
    return text_result(false, "a fresh %s interpreter is ready; files in /workspace are kept",
                       langs[i]);
  }
  if (strcmp(name, "list_files") == 0 || strcmp(name, "read_file") == 0 ||
      strcmp(name, "write_file") == 0)
    return tool_files(t, name, args, err);
  cr_fail(err, 0, "unknown tool '%s'", name);
  return NULL;
}

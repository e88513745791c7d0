#include "exec/result.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

const char *cr_status_name(cr_status s) {
  switch (s) {
  case CR_ST_OK: return "ok";
  case CR_ST_ERROR: return "error";
  case CR_ST_TIMEOUT: return "timeout";
  case CR_ST_MEMORY: return "memory_limit";
  case CR_ST_OUTPUT: return "output_limit";
  case CR_ST_WRONG: return "wrong_answer";
  case CR_ST_INTERRUPTED: return "interrupted";
  case CR_ST_SANDBOX: return "sandbox_error";
  }
  return "sandbox_error";
}

void cr_result_init(cr_result *r) { memset(r, 0, sizeof *r); }

void cr_result_free(cr_result *r) {
  free(r->out);
  free(r->err);
  cr_error_info_free(&r->error);
  for (size_t i = 0; i < r->nresults; i++)
    json_decref(r->results[i].mime);
  free(r->results);
  for (size_t i = 0; i < r->nfiles; i++)
    free(r->files[i].path);
  free(r->files);
  free(r->files_copy_error);
  free(r->language);
  memset(r, 0, sizeof *r);
}

/* A JSON string from arbitrary bytes. */
static json_t *bytes_string(const char *p, size_t n) {
  if (!p)
    return json_string("");
  if (cr_utf8_valid(p, n))
    return json_stringn(p, n);
  size_t len;
  char *clean = cr_utf8_sanitize(p, n, &len);
  if (!clean)
    return NULL;
  json_t *s = json_stringn(clean, len);
  free(clean);
  return s;
}

static const char *change_name(cr_file_change c) {
  return c == CR_FILE_CREATED ? "created" : c == CR_FILE_MODIFIED ? "modified" : "deleted";
}

static json_t *str_or_null(const char *s) { return s ? bytes_string(s, strlen(s)) : json_null(); }

json_t *cr_result_to_json(const cr_result *r) {
  json_t *o = json_object();
  if (!o)
    return NULL;
  json_object_set_new(o, "status", json_string(cr_status_name(r->status)));
  json_object_set_new(o, "exit_code", r->exited ? json_integer(r->exit_code) : json_null());
  json_object_set_new(o, "signal", r->signal ? json_integer(r->signal) : json_null());
  json_object_set_new(o, "stdout", bytes_string(r->out, r->out_len));
  json_object_set_new(o, "stderr", bytes_string(r->err, r->err_len));
  json_object_set_new(o, "stdout_truncated", json_boolean(r->out_truncated));
  json_object_set_new(o, "stderr_truncated", json_boolean(r->err_truncated));
  json_object_set_new(o, "stdout_dropped_bytes", json_integer((json_int_t)r->out_dropped));
  json_object_set_new(o, "stderr_dropped_bytes", json_integer((json_int_t)r->err_dropped));
  json_object_set_new(o, "duration_ms", json_real((double)(long long)(r->duration_ms * 100) / 100));
  json_object_set_new(o, "cpu_ms", json_real((double)(long long)(r->cpu_ms * 100) / 100));
  json_object_set_new(o, "memory_peak_bytes", json_integer((json_int_t)r->memory_peak_bytes));
  if (r->has_error) {
    json_t *e = json_object();
    json_object_set_new(e, "category", json_string(cr_category_name(r->error.category)));
    json_object_set_new(e, "name", str_or_null(r->error.name));
    json_object_set_new(e, "message", str_or_null(r->error.message));
    json_object_set_new(e, "retryable", json_boolean(r->error.retryable));
    json_object_set_new(e, "hint", str_or_null(r->error.hint));
    json_object_set_new(o, "error", e);
  } else {
    json_object_set_new(o, "error", json_null());
  }
  json_t *res = json_array();
  for (size_t i = 0; i < r->nresults; i++) {
    json_t *x = json_object();
    json_object_set(x, "mime", r->results[i].mime);
    json_object_set_new(x, "main", json_boolean(r->results[i].main));
    json_array_append_new(res, x);
  }
  json_object_set_new(o, "results", res);
  json_t *files = json_array();
  for (size_t i = 0; i < r->nfiles; i++) {
    json_t *f = json_object();
    json_object_set_new(f, "path", str_or_null(r->files[i].path));
    json_object_set_new(f, "size", json_integer((json_int_t)r->files[i].size));
    json_object_set_new(f, "change", json_string(change_name(r->files[i].change)));
    json_array_append_new(files, f);
  }
  json_object_set_new(o, "files", files);
  if (r->files_truncated)
    json_object_set_new(o, "files_truncated", json_true());
  if (r->files_copy_error)
    json_object_set_new(o, "files_copy_error", json_string(r->files_copy_error));
  json_t *l = json_object();
  json_object_set_new(l, "timeout_s", json_real(r->timeout_s));
  json_object_set_new(l, "cpu_s", json_real(r->cpu_s));
  json_object_set_new(l, "memory_bytes", json_integer((json_int_t)r->memory_bytes));
  json_object_set_new(l, "pids", json_integer(r->pids));
  json_object_set_new(l, "output_bytes", json_integer((json_int_t)r->output_bytes));
  json_object_set_new(l, "disk_bytes", json_integer((json_int_t)r->disk_bytes));
  json_object_set_new(l, "enforced_by", json_string(r->enforced_by ? r->enforced_by : "none"));
  json_t *w = json_object();
  json_object_set_new(w, "namespaces", json_string("user,mount,pid,ipc,uts,net,cgroup"));
  json_object_set_new(w, "seccomp", json_string("on"));
  json_object_set_new(w, "landlock", r->landlock_abi > 0 ? json_integer(r->landlock_abi)
                                                         : json_string("off"));
  json_object_set_new(l, "walls", w);
  json_object_set_new(o, "limits", l);
  if (r->language)
    json_object_set_new(o, "language", json_string(r->language));
  return o;
}

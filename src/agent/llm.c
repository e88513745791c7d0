#include "agent/llm.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/buf.h"

static struct {
  __typeof__(curl_global_init) *global_init;
  __typeof__(curl_easy_init) *easy_init;
  __typeof__(curl_easy_setopt) *easy_setopt;
  __typeof__(curl_easy_perform) *easy_perform;
  __typeof__(curl_easy_getinfo) *easy_getinfo;
  __typeof__(curl_easy_cleanup) *easy_cleanup;
  __typeof__(curl_easy_strerror) *easy_strerror;
  __typeof__(curl_slist_append) *slist_append;
  __typeof__(curl_slist_free_all) *slist_free_all;
} C;
static int g_rc = -1;
static char g_err[256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
  void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_err, sizeof g_err, "cannot load libcurl (%s): install libcurl4", dlerror());
    return;
  }
#define SYM(f, n)                                                                            \
  if (!(*(void **)&C.f = dlsym(h, n))) {                                                     \
    snprintf(g_err, sizeof g_err, "libcurl has no %s", n);                                   \
    return;                                                                                  \
  }
  SYM(global_init, "curl_global_init");
  SYM(easy_init, "curl_easy_init");
  SYM(easy_setopt, "curl_easy_setopt");
  SYM(easy_perform, "curl_easy_perform");
  SYM(easy_getinfo, "curl_easy_getinfo");
  SYM(easy_cleanup, "curl_easy_cleanup");
  SYM(easy_strerror, "curl_easy_strerror");
  SYM(slist_append, "curl_slist_append");
  SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
  if (C.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    snprintf(g_err, sizeof g_err, "curl_global_init failed");
    return;
  }
  g_rc = 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  cr_buf *b = ud;
  if (b->len > (64u << 20))
    return 0; /* a model's reply is never this large: stop */
  return cr_buf_append(b, p, size * n) == 0 ? size * n : 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  long *retry_after = ud;
  size_t len = size * n;
  if (len > 12 && strncasecmp(p, "retry-after:", 12) == 0)
    *retry_after = strtol(p + 12, NULL, 10);
  return len;
}

void cr_http_reply_free(cr_http_reply *r) {
  json_decref(r->body);
  r->body = NULL;
}

int cr_llm_post(const char *url, const char *const *headers, json_t *body, double timeout_s,
                int retries, cr_http_reply *reply, cr_err *err) {
  memset(reply, 0, sizeof *reply);
  pthread_once(&g_once, load);
  if (g_rc < 0)
    return cr_fail(err, 0, "%s", g_err);
  char *payload = json_dumps(body, JSON_COMPACT);
  if (!payload)
    return cr_fail(err, 0, "encoding the request");
  int rc = -1;
  for (int attempt = 0;; attempt++) {
    CURL *c = C.easy_init();
    struct curl_slist *hl = C.slist_append(NULL, "Content-Type: application/json");
    for (const char *const *h = headers; h && *h; h++)
      hl = C.slist_append(hl, *h);
    cr_buf buf = {0};
    long retry_after = -1;
    C.easy_setopt(c, CURLOPT_URL, url);
    C.easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    C.easy_setopt(c, CURLOPT_POSTFIELDS, payload);
    C.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    C.easy_setopt(c, CURLOPT_WRITEDATA, &buf);
    C.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    C.easy_setopt(c, CURLOPT_HEADERDATA, &retry_after);
    C.easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    C.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    C.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    C.easy_setopt(c, CURLOPT_USERAGENT, "corral-agent");
    CURLcode cc = C.easy_perform(c);
    long status = 0;
    if (cc == CURLE_OK)
      C.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    C.easy_cleanup(c);
    C.slist_free_all(hl);
    if (cc != CURLE_OK) {
      cr_buf_free(&buf);
      if (attempt < retries && cc != CURLE_OPERATION_TIMEDOUT && cc != CURLE_COULDNT_RESOLVE_HOST) {
        struct timespec ts = {1 << attempt, 0};
        nanosleep(&ts, NULL);
        continue;
      }
      rc = cr_fail(err, 0, "no answer from %s: %s", url,
                   cc == CURLE_OPERATION_TIMEDOUT ? "timed out" : C.easy_strerror(cc));
      break;
    }
    if ((status == 429 || status >= 500) && attempt < retries) {
      /* Retry-After when given (capped), else exponential backoff. */
      long wait = retry_after >= 0 ? retry_after : 1L << attempt;
      if (wait > 30)
        wait = 30;
      cr_buf_free(&buf);
      struct timespec ts = {wait, 0};
      nanosleep(&ts, NULL);
      continue;
    }
    reply->status = status;
    snprintf(reply->raw, sizeof reply->raw, "%.*s", (int)(buf.len < 500 ? buf.len : 500),
             buf.data ? buf.data : "");
    json_error_t je;
    reply->body = buf.len ? json_loadb(buf.data, buf.len, 0, &je) : NULL;
    cr_buf_free(&buf);
    rc = 0;
    break;
  }
  free(payload);
  return rc;
}

/* The HTTP server: libmicrohttpd in thread-per-connection mode (a handler
 * may block for the length of an execution; a streaming reader may wait for
 * the next event), JSON with jansson, every route an adapter over
 * cr_execute or the session manager. */
#include "api/server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/mhd.h"
#include "api/routes.h"
#include "exec/exec.h"
#include "runtime/runtime.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/clock.h"

void cr_server_opts_init(cr_server_opts *o) {
  memset(o, 0, sizeof *o);
  o->listen = "127.0.0.1:8080";
  o->max_sessions = 64;
  o->max_concurrent = 4;
  o->queue = 16;
  o->max_timeout_s = 300;
  o->max_memory_bytes = 4096ull << 20;
  o->default_timeout_s = CR_DEFAULT_TIMEOUT_S;
  o->default_memory_bytes = CR_DEFAULT_MEMORY_BYTES;
  o->output_limit = CR_DEFAULT_OUTPUT_LIMIT;
  o->max_body_bytes = 64u << 20;
  o->drain_grace_s = 10;
}


/* ---- keys ---------------------------------------------------------------- */

static int load_keys(cr_api *a, const char *path, cr_err *err) {
  FILE *f = fopen(path, "re");
  if (!f)
    return cr_fail(err, errno, "reading the API keys file %s", path);
  char line[1024];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *p = line;
    while (isspace((unsigned char)*p))
      p++;
    if (!*p || *p == '#')
      continue;
    char *key = strtok(p, " \t\r\n");
    char *name = strtok(NULL, " \t\r\n");
    if (!key || strlen(key) < 8) {
      fclose(f);
      return cr_fail(err, 0, "%s:%d: a key must be at least 8 characters", path, lineno);
    }
    cr_api_key *k = realloc(a->keys, (a->nkeys + 1) * sizeof *k);
    if (!k) {
      fclose(f);
      return cr_fail(err, ENOMEM, "reading the API keys file");
    }
    a->keys = k;
    char auto_name[32];
    snprintf(auto_name, sizeof auto_name, "key%zu", a->nkeys + 1);
    a->keys[a->nkeys].key = strdup(key);
    a->keys[a->nkeys].name = strdup(name ? name : auto_name);
    a->nkeys++;
  }
  fclose(f);
  if (a->nkeys == 0)
    return cr_fail(err, 0, "the API keys file %s has no key", path);
  return 0;
}

/* Constant time in the key's length: no timing oracle on a prefix. */
static bool key_equal(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  unsigned char d = (unsigned char)(la != lb);
  for (size_t i = 0; i < la; i++)
    d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
  return d == 0;
}

const char *cr_api_auth(cr_api *a, const char *authorization) {
  if (a->nkeys == 0)
    return "";
  if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
    return NULL;
  const char *k = authorization + 7;
  const char *who = NULL;
  for (size_t i = 0; i < a->nkeys; i++)
    if (key_equal(k, a->keys[i].key))
      who = a->keys[i].name;
  return who;
}

/* ---- concurrency gate ------------------------------------------------------ */

int cr_api_acquire(cr_api *a) {
  pthread_mutex_lock(&a->lock);
  if (a->draining) {
    /* Draining: what runs may finish, nothing new starts (its client gets
     * 503 and may retry elsewhere). */
    pthread_mutex_unlock(&a->lock);
    atomic_fetch_add(&a->m_rejected, 1);
    return -1;
  }
  if (a->running >= a->o.max_concurrent) {
    if (a->waiting >= a->o.queue) {
      pthread_mutex_unlock(&a->lock);
      atomic_fetch_add(&a->m_rejected, 1);
      return -1;
    }
    a->waiting++;
    while (a->running >= a->o.max_concurrent && !a->draining)
      pthread_cond_wait(&a->cv, &a->lock);
    a->waiting--;
    if (a->draining) {
      pthread_mutex_unlock(&a->lock);
      atomic_fetch_add(&a->m_rejected, 1);
      return -1;
    }
  }
  a->running++;
  pthread_mutex_unlock(&a->lock);
  return 0;
}

bool cr_api_draining(cr_api *a) {
  pthread_mutex_lock(&a->lock);
  bool d = a->draining;
  pthread_mutex_unlock(&a->lock);
  return d;
}

void cr_api_release(cr_api *a) {
  pthread_mutex_lock(&a->lock);
  a->running--;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->lock);
}

/* ---- cancel fds of running one-shot executions (a draining server
 * cancels them all) ----------------------------------------------------- */

void cr_api_track_cancel(cr_api *a, int fd, bool add) {
  pthread_mutex_lock(&a->lock);
  if (add) {
    int *v = realloc(a->cancels, (a->ncancels + 1) * sizeof *v);
    if (v) {
      a->cancels = v;
      v[a->ncancels++] = fd;
    }
    if (a->cancel_all) {
      uint64_t one = 1;
      ssize_t w = write(fd, &one, sizeof one);
      (void)w;
    }
  } else {
    for (size_t i = 0; i < a->ncancels; i++)
      if (a->cancels[i] == fd) {
        a->cancels[i] = a->cancels[--a->ncancels];
        break;
      }
  }
  pthread_mutex_unlock(&a->lock);
}

/* ---- metrics ------------------------------------------------------------- */

static const double buckets[CR_API_BUCKETS] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                               1,    2.5,   5,    10,  30,   120};

static int lang_index(const char *l) {
  return !l ? 0 : strcmp(l, "node") == 0 ? 1 : strcmp(l, "bash") == 0 ? 2 : 0;
}

void cr_api_count(cr_api *a, const cr_result *r, double secs) {
  pthread_mutex_lock(&a->lock);
  a->m_exec[lang_index(r->language)][r->status]++;
  for (int i = 0; i < CR_API_BUCKETS; i++)
    if (secs <= buckets[i])
      a->m_lat[i]++;
  a->m_lat_count++;
  a->m_lat_sum += secs;
  pthread_mutex_unlock(&a->lock);
}

char *cr_api_metrics(cr_api *a) {
  static const char *langs[] = {"python", "node", "bash"};
  cr_buf b = {0};
  pthread_mutex_lock(&a->lock);
  cr_buf_appendf(&b, "# HELP corral_executions_total Executions by language and status.\n"
                     "# TYPE corral_executions_total counter\n");
  for (int l = 0; l < 3; l++)
    for (int s = 0; s <= CR_ST_SANDBOX; s++)
      cr_buf_appendf(&b, "corral_executions_total{language=\"%s\",status=\"%s\"} %llu\n",
                     langs[l], cr_status_name((cr_status)s), a->m_exec[l][s]);
  cr_buf_appendf(&b, "# HELP corral_execution_seconds Wall time of executions.\n"
                     "# TYPE corral_execution_seconds histogram\n");
  for (int i = 0; i < CR_API_BUCKETS; i++)
    cr_buf_appendf(&b, "corral_execution_seconds_bucket{le=\"%g\"} %llu\n", buckets[i],
                   a->m_lat[i]);
  cr_buf_appendf(&b, "corral_execution_seconds_bucket{le=\"+Inf\"} %llu\n", a->m_lat_count);
  cr_buf_appendf(&b, "corral_execution_seconds_sum %.6f\ncorral_execution_seconds_count %llu\n",
                 a->m_lat_sum, a->m_lat_count);
  size_t running = a->running, waiting = a->waiting;
  pthread_mutex_unlock(&a->lock);
  cr_buf_appendf(&b, "# HELP corral_sessions_live Sessions open now.\n"
                     "# TYPE corral_sessions_live gauge\ncorral_sessions_live %zu\n",
                 cr_mgr_count(a->mgr));
  cr_buf_appendf(&b, "# HELP corral_executions_running Executions running now.\n"
                     "# TYPE corral_executions_running gauge\ncorral_executions_running %zu\n"
                     "corral_executions_queued %zu\n",
                 running, waiting);
  cr_buf_appendf(&b, "# HELP corral_sandboxes_started_total Sandboxes started.\n"
                     "# TYPE corral_sandboxes_started_total counter\n"
                     "corral_sandboxes_started_total %llu\n",
                 (unsigned long long)atomic_load(&a->m_sandboxes));
  cr_buf_appendf(&b, "# HELP corral_rejected_total Requests refused for load (429).\n"
                     "# TYPE corral_rejected_total counter\ncorral_rejected_total %llu\n",
                 (unsigned long long)atomic_load(&a->m_rejected));
  cr_buf_appendf(&b, "# HELP corral_http_requests_total HTTP requests answered.\n"
                     "# TYPE corral_http_requests_total counter\ncorral_http_requests_total %llu\n",
                 (unsigned long long)atomic_load(&a->m_requests));
  return cr_buf_steal(&b);
}

/* ---- logging ------------------------------------------------------------- */

void cr_api_log(cr_api *a, const char *kind, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[40];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  pthread_mutex_lock(&a->log_lock);
  if (a->o.log_json) {
    json_t *j = json_pack("{s:s, s:s, s:s}", "time", when, "kind", kind, "msg", msg);
    if (j) {
      json_dumpf(j, stderr, JSON_COMPACT);
      fputc('\n', stderr);
      json_decref(j);
    }
  } else {
    fprintf(stderr, "%s.%03ldZ %s %s\n", when, ts.tv_nsec / 1000000, kind, msg);
  }
  fflush(stderr);
  pthread_mutex_unlock(&a->log_lock);
}

/* ---- listening address ------------------------------------------------ */

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len,
                        bool *loopback, cr_err *err) {
  memset(ss, 0, sizeof *ss);
  char host[128];
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof host)
    return cr_fail(err, 0, "--listen '%s': give ADDR:PORT, e.g. 127.0.0.1:8080", s);
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port < 0 || port > 65535)
    return cr_fail(err, 0, "--listen '%s': the port must be 0-65535", s);
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  if (host[0] == '[' && host[strlen(host) - 1] == ']') {
    memmove(host, host + 1, strlen(host));
    host[strlen(host) - 1] = '\0';
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
      return cr_fail(err, 0, "--listen '%s': not an IPv6 address", s);
    *loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
    *len = sizeof *a6;
    return 0;
  }
  if (strcmp(host, "localhost") == 0)
    snprintf(host, sizeof host, "127.0.0.1");
  struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
  a4->sin_family = AF_INET;
  a4->sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
    return cr_fail(err, 0, "--listen '%s': not an IPv4 address (or [IPv6])", s);
  *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
  *len = sizeof *a4;
  return 0;
}

/* Paths arrive as sent (see routes.c): our own decoding rejects %00. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls;
  (void)c;
  return strlen(s);
}

int cr_server_run(const cr_server_opts *o, cr_err *err) {
  const cr_mhd *mhd = cr_mhd_load(err);
  if (!mhd)
    return -1;
  cr_api *a = calloc(1, sizeof *a);
  if (!a)
    return cr_fail(err, ENOMEM, "starting the server");
  a->mhd = mhd;
  a->o = *o;
  pthread_mutex_init(&a->lock, NULL);
  pthread_mutex_init(&a->log_lock, NULL);
  pthread_cond_init(&a->cv, NULL);
  int rc = -1;
  struct sockaddr_storage ss;
  socklen_t sl;
  bool loopback = false;
  if (parse_listen(o->listen, &ss, &sl, &loopback, err) < 0)
    goto out;
  if (o->api_keys_file && load_keys(a, o->api_keys_file, err) < 0)
    goto out;
  if (!loopback && a->nkeys == 0) {
    cr_fail(err, 0, "refusing to listen on %s without API keys: anyone who can reach it could "
                    "run code; give --api-keys FILE, or listen on 127.0.0.1",
            o->listen);
    goto out;
  }
  cr_mgr_opts mo;
  cr_mgr_opts_init(&mo);
  mo.max_sessions = o->max_sessions;
  if (cr_mgr_new(&mo, &a->mgr, err) < 0)
    goto out;
  cr_api_runtimes_init(a);

  /* Signals are taken by this thread only (sigwait below): block them
   * before MHD starts its threads, which inherit the mask. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  a->d = mhd->start_daemon(
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
          (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
      0, NULL, NULL, cr_api_handler, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
      MHD_OPTION_NOTIFY_COMPLETED, cr_api_completed, a, MHD_OPTION_UNESCAPE_CALLBACK,
      no_unescape, NULL,
      /* A connection idle for a minute is closed (a slow or stalled client
       * must not hold a thread forever); a running execution is not idle
       * time: its handler holds the thread, not MHD. */
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned int)1024, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)256, MHD_OPTION_END);
  if (!a->d) {
    cr_fail(err, 0, "cannot listen on %s (address in use, or not permitted)", o->listen);
    cr_mgr_free(a->mgr);
    a->mgr = NULL;
    goto out;
  }
  if (o->e2b_port > 0) {
    /* The same address, E2B's port: their SDKs find the code interpreter
     * there. */
    struct sockaddr_storage es = ss;
    if (es.ss_family == AF_INET6)
      ((struct sockaddr_in6 *)&es)->sin6_port = htons((uint16_t)o->e2b_port);
    else
      ((struct sockaddr_in *)&es)->sin_port = htons((uint16_t)o->e2b_port);
    a->e2b = mhd->start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
            (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
        0, NULL, NULL, cr_e2b_handler, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&es,
        MHD_OPTION_NOTIFY_COMPLETED, cr_api_completed, a, MHD_OPTION_UNESCAPE_CALLBACK,
        no_unescape, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)1024, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned int)256, MHD_OPTION_END);
    cr_err e2;
    if (!a->e2b || cr_e2b_prepare(a, &e2) < 0) {
      cr_fail(err, 0, "cannot serve the E2B protocol on port %d (%s)", o->e2b_port,
              a->e2b ? e2.msg : "address in use, or not permitted");
      if (a->e2b)
        mhd->stop_daemon(a->e2b);
      mhd->stop_daemon(a->d);
      cr_mgr_free(a->mgr);
      a->mgr = NULL;
      goto out;
    }
  }
  const union MHD_DaemonInfo *di = mhd->get_daemon_info(a->d, MHD_DAEMON_INFO_BIND_PORT);
  char shown[160];
  snprintf(shown, sizeof shown, "%.*s:%u", (int)(strrchr(o->listen, ':') - o->listen), o->listen,
           di ? di->port : 0);
  if (a->nkeys == 0)
    fprintf(stderr, "corral serve: no --api-keys: serving loopback only, without "
                    "authentication\n");
  fprintf(stderr, "corral serve: listening on http://%s\n", shown);
  if (a->e2b)
    fprintf(stderr, "corral serve: E2B code-interpreter protocol on port %d\n", o->e2b_port);
  fprintf(stderr, "corral serve: try  curl -s http://%s/v1/execute -H 'Content-Type: "
                  "application/json' -d '{\"code\":\"print(6*7)\"}'\n",
          shown);
  fflush(stderr);

  /* The signals, and every 10 s a sweep of idle MCP sessions (the
   * session manager reaps its own). */
  int sig = 0;
  for (;;) {
    struct timespec every = {10, 0};
    sig = sigtimedwait(&sigs, NULL, &every);
    if (sig > 0)
      break;
    cr_mcp_http_sweep(a, CR_MCP_IDLE_S);
  }
  cr_api_log(a, "server", "%s: draining (grace %g s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
             o->drain_grace_s);

  /* Drain: no new connections, nothing new starts; what runs and every
   * request begun gets the grace period, then what runs is stopped, what
   * waits does not run, every session is closed, and the answers to all
   * that go out before the connections are closed. */
  mhd->quiesce_daemon(a->d);
  if (a->e2b)
    mhd->quiesce_daemon(a->e2b);
  pthread_mutex_lock(&a->lock);
  a->draining = true;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->lock);
  double deadline = cr_now_s() + o->drain_grace_s;
  for (;;) {
    pthread_mutex_lock(&a->lock);
    size_t busy = a->running + a->active_streams + a->open_requests;
    pthread_mutex_unlock(&a->lock);
    if (busy == 0 || cr_now_s() >= deadline)
      break;
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&a->lock);
  a->cancel_all = true;
  for (size_t i = 0; i < a->ncancels; i++) {
    uint64_t one = 1;
    ssize_t w = write(a->cancels[i], &one, sizeof one);
    (void)w;
  }
  pthread_mutex_unlock(&a->lock);
  /* Past the grace: what runs is stopped and what waits does not run. */
  cr_mgr_shut_all(a->mgr);
  cr_mcp_http_shut_all(a);
  /* Stopped executions answer within moments (a kill, a reap): let those
   * answers out rather than cut every connection under them. Bounded: a
   * client that does not read its answer cannot hold the exit. */
  double answered_by = cr_now_s() + 5;
  for (;;) {
    pthread_mutex_lock(&a->lock);
    size_t open = a->open_requests + a->active_streams;
    pthread_mutex_unlock(&a->lock);
    if (open == 0 || cr_now_s() >= answered_by)
      break;
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
  }
  mhd->stop_daemon(a->d);
  if (a->e2b)
    mhd->stop_daemon(a->e2b);
  cr_mcp_http_free_all(a);
  cr_mgr_free(a->mgr);
  a->mgr = NULL;
  cr_api_log(a, "server", "stopped");
  rc = 0;
out:
  for (size_t i = 0; i < a->nkeys; i++) {
    free(a->keys[i].key);
    free(a->keys[i].name);
  }
  free(a->keys);
  free(a->cancels);
  free(a->defaults);
  cr_api_runtimes_free(a);
  pthread_mutex_destroy(&a->lock);
  pthread_mutex_destroy(&a->log_lock);
  pthread_cond_destroy(&a->cv);
  free(a);
  return rc;
}

/* Private to src/api: the server's state and the route handlers. */
#ifndef CORRAL_API_ROUTES_H
#define CORRAL_API_ROUTES_H

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "api/mhd.h"
#include "api/server.h"
#include "exec/result.h"
#include "session/session.h"

#define CR_API_BUCKETS 12

typedef struct cr_api_key {
  char *key;
  char *name;
} cr_api_key;

typedef struct cr_e2b_default {
  char owner[64];
  char language[16];
  char id[40];
} cr_e2b_default;

struct cr_mcp;

typedef struct cr_mcp_conn {
  char id[40];
  char owner[64];
  struct cr_mcp *m;
  int refs;
  bool closing;
  double last;
} cr_mcp_conn;

typedef struct cr_api {
  const cr_mhd *mhd;
  struct MHD_Daemon *d;
  cr_server_opts o;
  cr_session_mgr *mgr;
  cr_api_key *keys;
  size_t nkeys;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  size_t running, waiting, active_streams;
  size_t open_requests; /* requests begun and not yet answered (a drain waits for them) */
  bool draining, cancel_all;
  int *cancels;
  size_t ncancels;
  /* metrics (under lock, or atomic) */
  unsigned long long m_exec[3][CR_ST_SANDBOX + 1];
  unsigned long long m_lat[CR_API_BUCKETS], m_lat_count;
  double m_lat_sum;
  atomic_ullong m_sandboxes, m_rejected, m_requests, m_exec_ids;
  pthread_mutex_t log_lock;
  json_t *runtimes;   /* GET /v1/runtimes, computed once */
  struct MHD_Daemon *e2b;
  cr_e2b_default *defaults;   /* E2B default contexts per owner and language */
  size_t ndefaults;
  cr_mcp_conn *mcps;          /* MCP sessions of /mcp (Streamable HTTP) */
  size_t nmcps;
  atomic_size_t body_bytes;   /* request bodies held in memory, all connections */
} cr_api;

/* The caller's name for a valid key ("" without keys), NULL if refused. */
const char *cr_api_auth(cr_api *a, const char *authorization);
/* A slot for an execution: 0, or -1 when the queue is full (429). */
/* An execution slot: 0, or -1 when the queue is full or the server is
 * draining (cr_api_draining tells which; a draining server starts nothing
 * new). */
int cr_api_acquire(cr_api *a);
bool cr_api_draining(cr_api *a);
void cr_api_release(cr_api *a);
void cr_api_track_cancel(cr_api *a, int fd, bool add);
void cr_api_count(cr_api *a, const cr_result *r, double secs);
char *cr_api_metrics(cr_api *a);
void cr_api_log(cr_api *a, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cr_api_runtimes_init(cr_api *a);
void cr_api_runtimes_free(cr_api *a);

enum MHD_Result cr_api_handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls);
void cr_api_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe);
/* E2B's code-interpreter protocol on its own port. */
enum MHD_Result cr_e2b_handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls);
/* MCP at /mcp (Streamable HTTP); every MCP session is freed at stop. */
void cr_mcp_http_free_all(cr_api *a);
/* MCP sessions of /mcp idle (no request) for longer than idle_s are
 * closed; draining: all are shut (their running calls stopped). */
void cr_mcp_http_sweep(cr_api *a, double idle_s);
void cr_mcp_http_shut_all(cr_api *a);
#define CR_MCP_IDLE_S 600.0
/* The default python context, which E2B clients expect to exist at start. */
int cr_e2b_prepare(cr_api *a, cr_err *err);

#endif

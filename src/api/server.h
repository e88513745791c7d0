/* corral serve: the HTTP API (docs/api.md), an adapter over the core
 * (cr_execute) and sessions (cr_session_mgr). Nothing here touches the
 * sandbox. */
#ifndef CORRAL_API_SERVER_H
#define CORRAL_API_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct cr_server_opts {
  const char *listen;          /* "127.0.0.1:8080" */
  const char *api_keys_file;   /* NULL: no auth, loopback only */
  size_t max_sessions;
  size_t max_concurrent;       /* executions running at once */
  size_t queue;                /* executions waiting for a slot before 429 */
  double max_timeout_s;
  uint64_t max_memory_bytes;
  double default_timeout_s;
  uint64_t default_memory_bytes;
  uint64_t output_limit;
  size_t max_body_bytes;
  bool log_json;
  double drain_grace_s;
  int e2b_port;               /* 0: no E2B-compatible port */
} cr_server_opts;

void cr_server_opts_init(cr_server_opts *o);

/* Serves until SIGTERM or SIGINT, then drains and returns 0. Returns -1
 * with a message when it cannot start (bad address, keys file, port taken,
 * a non-loopback address without keys). */
int cr_server_run(const cr_server_opts *o, cr_err *err);

#endif

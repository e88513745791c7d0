/* One execution (DESIGN.md section 1): an exec spec goes in, events come out
 * through a sink as they happen, and one result comes back. Every front end
 * (CLI, HTTP, MCP, agent) calls cr_execute; none touches the sandbox.
 *
 *   cr_exec_spec spec;  cr_exec_spec_init(&spec);      defaults applied
 *   spec.language = "python"; spec.code = ...;
 *   cr_result res;  cr_err err;
 *   if (cr_execute(&spec, &sink, &res, &err) < 0) ...   invalid spec only
 *   json_t *j = cr_result_to_json(&res);  cr_result_free(&res);
 *
 * cr_execute returns -1 only for a spec it refuses (bad language, limits out
 * of range, unsafe file name): the message says what was wrong and what to
 * do, nothing was started. Anything that goes wrong once the spec is valid,
 * the sandbox included, is a result (status sandbox_error), never -1. */
#ifndef CORRAL_EXEC_H
#define CORRAL_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/result.h"
#include "util/err.h"

typedef struct cr_exec_file {
  const char *path;   /* relative path in /workspace */
  int fd;             /* readable fd (caller keeps ownership), or -1 ... */
  const void *data;   /* ... then these bytes */
  size_t len;
} cr_exec_file;

/* A run's defaults, the same for every front end (CLI, sessions, server,
 * MCP, agent). */
#define CR_DEFAULT_TIMEOUT_S 30.0
#define CR_DEFAULT_MEMORY_BYTES (256ull << 20)
#define CR_DEFAULT_PIDS 128
#define CR_DEFAULT_DISK_BYTES (256ull << 20)
#define CR_DEFAULT_OUTPUT_LIMIT (1u << 20)   /* bytes kept per stream */
#define CR_DEFAULT_OUTPUT_MAX (64u << 20)    /* bytes a stream may write before the stop */

/* Hard ceilings: a spec asking for more is refused (front ends may clamp to
 * lower server-configured maxima before calling). */
#define CR_MAX_TIMEOUT_S 3600.0
#define CR_MAX_MEMORY_BYTES (64ull << 30)
#define CR_MAX_CODE_BYTES (16u << 20)

typedef struct cr_exec_spec {
  const char *language;       /* "python" (default), "node", "bash" or an alias */
  const char *code;
  size_t code_len;
  const char *code_name;      /* file name for the program in /workspace; NULL: main.<ext> */
  const void *stdin_data;     /* NULL: empty stdin */
  size_t stdin_len;
  const cr_exec_file *files;
  size_t nfiles;
  const char *const *env;     /* "KEY=VALUE" entries added to the base environment; NULL-terminated or NULL */
  double timeout_s;           /* wall clock (default 30) */
  double cpu_s;               /* CPU per process (default: timeout_s) */
  uint64_t memory_bytes;      /* default 256 MiB */
  uint32_t pids;              /* default 128 */
  uint64_t disk_bytes;        /* size of /workspace and of /tmp (default 256 MiB) */
  uint64_t output_limit;      /* bytes kept per stream (default 1 MiB) */
  uint64_t output_max;        /* bytes a stream may write before the run is stopped (default 64 MiB) */
  const char *expected;       /* when non-NULL, stdout is compared with it */
  size_t expected_len;
  const char *out_dir;        /* when non-NULL, created/changed files are copied there */
  int cancel_fd;              /* readable => stop the run (status interrupted); -1 for none */
} cr_exec_spec;

void cr_exec_spec_init(cr_exec_spec *spec);

/* Events as they happen. stream is 1 (stdout) or 2 (stderr); only the bytes
 * that the result keeps at the head of each stream are delivered (the tail
 * comes with the result). Callbacks may be NULL. */
typedef struct cr_sink {
  void *ctx;
  void (*on_output)(void *ctx, int stream, const char *data, size_t len);
  /* A rich output as it is produced (sessions): the MIME bundle (borrowed)
   * and whether it is the cell's main result. */
  void (*on_display)(void *ctx, json_t *mime, bool main);
} cr_sink;

int cr_execute(const cr_exec_spec *spec, const cr_sink *sink, cr_result *res, cr_err *err);

/* What cr_execute checks of the spec before it starts anything: -1 with a
 * message that says what to change when the request itself is wrong. A
 * front end asks first, so that an error of cr_execute after this passed is
 * the host's (a sandbox that could not start), not the caller's. */
int cr_exec_validate(const cr_exec_spec *spec, cr_err *err);

#endif

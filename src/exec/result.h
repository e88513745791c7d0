/* The result an agent gets (DESIGN.md section 3): one shape for every front
 * end. Field names are final; new fields may be added, none renamed. */
#ifndef CORRAL_EXEC_RESULT_H
#define CORRAL_EXEC_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/classify.h"

typedef enum cr_status {
  CR_ST_OK = 0,
  CR_ST_ERROR,
  CR_ST_TIMEOUT,
  CR_ST_MEMORY,
  CR_ST_OUTPUT,
  CR_ST_WRONG,
  CR_ST_INTERRUPTED,
  CR_ST_SANDBOX,
} cr_status;

/* "ok", "error", "timeout", "memory_limit", "output_limit", "wrong_answer",
 * "interrupted", "sandbox_error". */
const char *cr_status_name(cr_status s);

typedef enum { CR_FILE_CREATED, CR_FILE_MODIFIED, CR_FILE_DELETED } cr_file_change;

typedef struct cr_file_entry {
  char *path;           /* relative to /workspace */
  uint64_t size;
  cr_file_change change;
} cr_file_entry;

/* A rich result: MIME type -> content (text, or base64 for binary types). */
typedef struct cr_rich {
  json_t *mime;         /* object; owned */
  bool main;
} cr_rich;

typedef struct cr_result {
  cr_status status;
  bool exited;           /* exit_code valid */
  int exit_code;
  int signal;            /* 0 = none */
  char *out;             /* stdout as kept (head, marker, tail); may hold any bytes */
  size_t out_len;
  char *err;
  size_t err_len;
  bool out_truncated, err_truncated;
  uint64_t out_dropped, err_dropped;
  double duration_ms;
  double cpu_ms;
  uint64_t memory_peak_bytes;
  bool has_error;
  cr_error_info error;
  cr_rich *results;
  size_t nresults;
  cr_file_entry *files;
  size_t nfiles;
  bool files_truncated;  /* more files changed than are listed */
  /* Set when the files were to be copied out (--out) and were not, or not
   * all of them: why. The run's own outcome is reported as it was. */
  char *files_copy_error;
  /* limits in force */
  double timeout_s, cpu_s;
  uint64_t memory_bytes, output_bytes, disk_bytes;
  uint32_t pids;
  const char *enforced_by;   /* static */
  int landlock_abi;          /* 0: Landlock not applied */
  char *language;
} cr_result;

void cr_result_init(cr_result *r);
void cr_result_free(cr_result *r);
/* New reference; invalid UTF-8 in the streams becomes U+FFFD, NUL bytes are
 * kept (escaped by the JSON writer). NULL only on ENOMEM. */
json_t *cr_result_to_json(const cr_result *r);

#endif

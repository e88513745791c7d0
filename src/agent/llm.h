/* Talking to a model: one HTTPS POST of JSON, with bounded retries. libcurl
 * is loaded when `corral agent` starts, not linked: it would add its
 * dynamic-linking cost to every `corral run` (see src/api/mhd.h). */
#ifndef CORRAL_AGENT_LLM_H
#define CORRAL_AGENT_LLM_H

#include <jansson.h>

#include "util/err.h"

typedef struct cr_http_reply {
  long status;            /* HTTP status, 0 if no answer */
  json_t *body;           /* parsed JSON, or NULL */
  char raw[512];          /* the start of the body, for error messages */
} cr_http_reply;

/* POSTs body to url with the given headers (NULL-terminated "K: V"),
 * retrying 429 and 5xx up to `retries` times with backoff (honouring
 * Retry-After, at most 30 s a wait). timeout_s bounds each attempt.
 * Returns 0 with *reply filled (any status), -1 when no answer came at all
 * (the message says why: timeout, refused, DNS...). */
int cr_llm_post(const char *url, const char *const *headers, json_t *body, double timeout_s,
                int retries, cr_http_reply *reply, cr_err *err);
void cr_http_reply_free(cr_http_reply *r);

#endif

/* The self-debugging loop (DESIGN.md section 1, an adapter like the
 * others): the model writes a program, corral runs it in the agent's own
 * sessions (session/toolbox.h: the same tools as MCP), the result goes back
 * in the next turn, until the model answers or a budget is spent. */
#ifndef CORRAL_AGENT_H
#define CORRAL_AGENT_H

#include <jansson.h>
#include <stdbool.h>

#include "session/toolbox.h"
#include "util/err.h"

typedef struct cr_agent_opts {
  const char *provider;            /* "openai" (any compatible server) or "anthropic" */
  const char *model;
  const char *base_url;            /* e.g. https://api.openai.com/v1 or a local server */
  const char *api_key;
  const char *const *languages;    /* run_* tools offered; NULL = python only */
  int max_turns;                   /* default 10 */
  int max_code_attempts;           /* failed executions before the model must answer; 3 */
  bool review;                     /* ask on the terminal before each run */
  const char *review_cmd;          /* or pipe the code to this command; run if it exits 0 */
  double request_timeout_s;        /* per model call, default 120 */
  int retries;                     /* 429/5xx retries, default 4 */
  int max_tokens;                  /* Anthropic's max_tokens, default 4096 */
  const char *const *data_files;   /* host files copied into /workspace first */
  bool trace;                      /* a live trace on stderr */
  cr_toolbox_opts tools;
} cr_agent_opts;

void cr_agent_opts_init(cr_agent_opts *o);

/* Runs the loop. *transcript (always set when the loop started) is
 * {answer, stop_reason: answer|max_turns|budget_spent|error, error?,
 * turns, code_attempts, executions: [result...], usage}. Returns 0 when
 * the model answered (stop_reason answer or budget_spent with an answer),
 * -1 otherwise with err saying why (a missing key, 401, an unknown model,
 * a malformed reply...). The sessions are closed before it returns. */
int cr_agent_run(const cr_agent_opts *o, const char *question, json_t **transcript, cr_err *err);

#endif

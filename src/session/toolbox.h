/* The code-execution tools a model calls (MCP's tools/call, the agent's
 * tool calls): one source of truth for their names, schemas and
 * descriptions, and for running them against a connection's own sessions.
 *
 * A toolbox belongs to one connection (an MCP client, one agent run). Its
 * sessions are created on first use and destroyed with it. Each language
 * has its own session; the file tools act on the Python session's
 * /workspace. */
#ifndef CORRAL_SESSION_TOOLBOX_H
#define CORRAL_SESSION_TOOLBOX_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#include "session/session.h"
#include "util/err.h"

typedef struct cr_toolbox cr_toolbox;

typedef struct cr_toolbox_opts {
  double timeout_s;          /* per call; a call may lower it, never raise it */
  uint64_t memory_bytes;
  uint64_t output_limit;
} cr_toolbox_opts;

void cr_toolbox_opts_init(cr_toolbox_opts *o);
cr_toolbox *cr_toolbox_new(const cr_toolbox_opts *o);
void cr_toolbox_free(cr_toolbox *t);
/* Ends what runs and refuses what comes (any thread): every session's
 * running cell is interrupted, queued and later calls do not run. */
void cr_toolbox_shut(cr_toolbox *t);
/* Withdraws the call that was given this flag (cr_toolbox_call_ex's
 * extras.cancel), any thread: still waiting (for its sandbox or its turn)
 * it does not run, running it is interrupted; no other call is touched. */
void cr_toolbox_cancel(cr_toolbox *t, atomic_bool *flag);

/* The tool definitions: [{name, title, description, inputSchema,
 * outputSchema}] (new reference). `languages` limits the run_* tools
 * (NULL: all three). */
json_t *cr_tools_list(const char *const *languages);

/* Runs a tool. Returns an MCP CallToolResult object {content, structuredContent,
 * isError} (new reference); a failure of the code is a result with isError
 * true, because the model must see it. Returns NULL with err filled for a
 * call that is wrong in itself (unknown tool, bad arguments): the caller
 * answers with "invalid params". */
json_t *cr_toolbox_call(cr_toolbox *t, const char *name, json_t *args, cr_err *err);
/* The same, with what a caller adds to a run tool's execution (a withdrawal
 * flag, a server's slot hooks: session.h's cr_exec_extras; may be NULL).
 * A run refused by extras.on_turn returns NULL with err->errnum EAGAIN
 * (the caller answers "busy, retry"), not a result. */
json_t *cr_toolbox_call_ex(cr_toolbox *t, const char *name, json_t *args,
                           const cr_exec_extras *x, cr_err *err);

/* The result text a model reads (stdout, stderr, status line, error and
 * hint; truncation marked). Caller frees. */
char *cr_tool_result_text(const cr_result *r);

#endif

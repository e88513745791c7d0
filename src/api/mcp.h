/* MCP (Model Context Protocol) over JSON-RPC 2.0: corral's tools for
 * Claude Desktop, Cursor, Cline, VS Code. The protocol core is transport-
 * free; `corral mcp` runs it over stdio, `corral serve` at /mcp over
 * Streamable HTTP. The tools themselves are session/toolbox.h. */
#ifndef CORRAL_API_MCP_H
#define CORRAL_API_MCP_H

#include <jansson.h>
#include <stdbool.h>

#include "session/toolbox.h"

typedef struct cr_mcp cr_mcp;

cr_mcp *cr_mcp_new(const cr_toolbox_opts *o);
void cr_mcp_free(cr_mcp *m);
/* From another thread: stop its running tool call and refuse further ones
 * (an HTTP session being deleted or expired, a server draining). */
void cr_mcp_shut(cr_mcp *m);
/* Handles one message (a parsed JSON value). Returns the response (new
 * reference), or NULL when there is none to send (a notification, a
 * response from the client). Never fails: errors are JSON-RPC errors. */
json_t *cr_mcp_handle(cr_mcp *m, json_t *msg);
/* The same; *busy (may be NULL) says the response is a "too many
 * executions" error (a transport answers it with its own busy status, HTTP
 * 429). */
json_t *cr_mcp_handle_ex(cr_mcp *m, json_t *msg, bool *busy);

/* A server's execution slots for this connection's runs: taken when a run's
 * turn on its session comes, given back when it ends (session.h's
 * cr_exec_extras.on_turn / on_turn_end). Set before the first message. */
void cr_mcp_set_slots(cr_mcp *m, int (*take)(void *ctx, cr_err *err), void (*give)(void *ctx),
                      void *ctx);

/* The JSON-RPC answer to bytes that do not parse. */
json_t *cr_mcp_parse_error(const char *detail);

/* Is this a request or notification of this method? */
bool cr_mcp_is(json_t *msg, const char *method);

/* `corral mcp`: one JSON message per line on stdin, answers on stdout,
 * logs on stderr; returns at EOF with every session closed. */
int cr_mcp_stdio(const cr_toolbox_opts *o);

#endif

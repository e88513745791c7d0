/* corral: run code that an LLM wrote, safely and fast. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#ifndef CORRAL_VERSION
#define CORRAL_VERSION "0.0.0"
#endif

static const char usage[] =
    "usage: corral COMMAND [options]\n"
    "  run      run one program in a fresh sandbox and print its result\n"
    "  serve    the HTTP API (docs/api.md)\n"
    "  mcp      MCP server over stdio (Claude Desktop, Cursor, Cline, VS Code)\n"
    "  agent    ask a model; it computes the answer with code run here (self-debugging)\n"
    "  session  a REPL over a sandboxed session: variables and files persist between cells\n"
    "  doctor   what this host supports and which fallback is in force\n"
    "  --version, --help\n"
    "`corral COMMAND --help` for a command's options.\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "run") == 0)
    return cr_cli_run(argc - 1, argv + 1);
  if (strcmp(cmd, "agent") == 0)
    return cr_cli_agent(argc - 1, argv + 1);
  if (strcmp(cmd, "mcp") == 0)
    return cr_cli_mcp(argc - 1, argv + 1);
  if (strcmp(cmd, "serve") == 0)
    return cr_cli_serve(argc - 1, argv + 1);
  if (strcmp(cmd, "session") == 0)
    return cr_cli_session(argc - 1, argv + 1);
  if (strcmp(cmd, "doctor") == 0)
    return cr_cli_doctor(argc - 1, argv + 1);
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("corral %s\n", CORRAL_VERSION);
    return 0;
  }
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0 || strcmp(cmd, "-h") == 0) {
    fputs(usage, stdout);
    return 0;
  }
  fprintf(stderr, "corral: unknown command '%s'\n%s", cmd, usage);
  return 2;
}

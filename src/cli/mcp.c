/* corral mcp: the MCP server over stdio, for Claude Desktop, Cursor, Cline,
 * VS Code. Limits here are the most a model may ask for. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/mcp.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: corral mcp [--timeout S] [--memory MB]\n"
    "MCP server over stdio (one JSON-RPC message per line). Tools: run_python,\n"
    "run_javascript, run_bash, reset, list_files, read_file, write_file.\n"
    "  --timeout S   per-call limit, the most a model may ask (default 30)\n"
    "  --memory MB   memory of each session (default 256)\n";

int cr_cli_mcp(int argc, char **argv) {
  cr_toolbox_opts o;
  cr_toolbox_opts_init(&o);
  static const struct option longopts[] = {{"timeout", required_argument, NULL, 't'},
                                           {"memory", required_argument, NULL, 'm'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+t:m:h", longopts, NULL)) != -1) {
    char *end;
    switch (c) {
    case 't':
      o.timeout_s = strtod(optarg, &end);
      if (*end || !(o.timeout_s > 0) || o.timeout_s > 3600) {
        fprintf(stderr, "corral mcp: --timeout '%s': give seconds, above 0, at most 3600\n",
                optarg);
        return 2;
      }
      break;
    case 'm': {
      unsigned long long mb = strtoull(optarg, &end, 10);
      if (*end || mb < 32 || mb > 65536) {
        fprintf(stderr, "corral mcp: --memory '%s': give MiB, 32 to 65536\n", optarg);
        return 2;
      }
      o.memory_bytes = mb << 20;
      break;
    }
    case 'h': fputs(usage, stdout); return 0;
    default:
      fprintf(stderr, "corral mcp: unknown or incomplete option '%s' (see --help)\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "corral mcp: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  return cr_mcp_stdio(&o);
}

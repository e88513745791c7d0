/* corral serve: flags -> cr_server_opts. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/server.h"
#include "cli/cli.h"
#include "sandbox/sandbox.h"

static const char usage[] =
    "usage: corral serve [options]\n"
    "  --listen ADDR:PORT    where to listen (default 127.0.0.1:8080; a non-loopback\n"
    "                        address needs --api-keys)\n"
    "  --api-keys FILE       one key per line, optionally `key name`; then every /v1\n"
    "                        request needs Authorization: Bearer KEY\n"
    "  --max-sessions N      sessions open at once (default 64)\n"
    "  --max-concurrent N    executions running at once (default 4); with --max-sessions\n"
    "                        at most 512 in all (the sandboxes one process can run)\n"
    "  --queue N             executions waiting for a slot before 429 (default 16)\n"
    "  --max-timeout S       largest timeout_s a request may ask (default 300)\n"
    "  --max-memory MB       largest memory_mb a request may ask (default 4096)\n"
    "  --timeout S           default timeout_s (default 30)\n"
    "  --memory MB           default memory_mb (default 256)\n"
    "  --output-limit BYTES  kept per stream (default 1048576)\n"
    "  --max-body BYTES      largest request body (default 67108864)\n"
    "  --log-format text|json\n"
    "  --e2b-port PORT       also serve E2B's code-interpreter protocol on PORT (e.g. 49999)\n"
    "API: docs/api.md, or GET /openapi.json on the running server.\n";

static int num(const char *opt, const char *v, double lo, double hi, double *out) {
  char *end;
  double d = strtod(v, &end);
  if (*end || !(d >= lo) || d > hi) {
    fprintf(stderr, "corral serve: %s '%s': give a number from %g to %g\n", opt, v, lo, hi);
    return -1;
  }
  *out = d;
  return 0;
}

int cr_cli_serve(int argc, char **argv) {
  cr_server_opts o;
  cr_server_opts_init(&o);
  static const struct option longopts[] = {
      {"listen", required_argument, NULL, 'l'},      {"api-keys", required_argument, NULL, 'k'},
      {"max-sessions", required_argument, NULL, 's'}, {"max-concurrent", required_argument, NULL, 'c'},
      {"queue", required_argument, NULL, 'q'},       {"max-timeout", required_argument, NULL, 'T'},
      {"max-memory", required_argument, NULL, 'M'},  {"timeout", required_argument, NULL, 't'},
      {"memory", required_argument, NULL, 'm'},      {"output-limit", required_argument, NULL, 'O'},
      {"max-body", required_argument, NULL, 'B'},    {"log-format", required_argument, NULL, 'L'},
      {"e2b-port", required_argument, NULL, 'E'},    {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  optind = 1;
  opterr = 0;
  int c;
  double d;
  while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
    switch (c) {
    case 'l': o.listen = optarg; break;
    case 'k': o.api_keys_file = optarg; break;
    case 's': if (num("--max-sessions", optarg, 1, 100000, &d) < 0) return 2; o.max_sessions = (size_t)d; break;
    case 'c': if (num("--max-concurrent", optarg, 1, 4096, &d) < 0) return 2; o.max_concurrent = (size_t)d; break;
    case 'q': if (num("--queue", optarg, 0, 100000, &d) < 0) return 2; o.queue = (size_t)d; break;
    case 'T': if (num("--max-timeout", optarg, 0.1, 3600, &d) < 0) return 2; o.max_timeout_s = d; break;
    case 'M': if (num("--max-memory", optarg, 16, 65536, &d) < 0) return 2; o.max_memory_bytes = (uint64_t)d << 20; break;
    case 't': if (num("--timeout", optarg, 0.1, 3600, &d) < 0) return 2; o.default_timeout_s = d; break;
    case 'm': if (num("--memory", optarg, 16, 65536, &d) < 0) return 2; o.default_memory_bytes = (uint64_t)d << 20; break;
    case 'O': if (num("--output-limit", optarg, 64, 1 << 30, &d) < 0) return 2; o.output_limit = (uint64_t)d; break;
    case 'B': if (num("--max-body", optarg, 64, 1 << 30, &d) < 0) return 2; o.max_body_bytes = (size_t)d; break;
    case 'L':
      if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
        fprintf(stderr, "corral serve: --log-format '%s': give text or json\n", optarg);
        return 2;
      }
      o.log_json = strcmp(optarg, "json") == 0;
      break;
    case 'E': if (num("--e2b-port", optarg, 1, 65535, &d) < 0) return 2; o.e2b_port = (int)d; break;
    case 'h': fputs(usage, stdout); return 0;
    default:
      fprintf(stderr, "corral serve: unknown or incomplete option '%s' (see --help)\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "corral serve: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (o.max_sessions + o.max_concurrent > CR_SB_MAX_LIVE) {
    fprintf(stderr,
            "corral serve: --max-sessions %zu plus --max-concurrent %zu is more than the %d "
            "sandboxes one process can run at once (each needs a uid of its own): lower "
            "them\n",
            o.max_sessions, o.max_concurrent, CR_SB_MAX_LIVE);
    return 2;
  }
  if (o.default_timeout_s > o.max_timeout_s)
    o.default_timeout_s = o.max_timeout_s;
  if (o.default_memory_bytes > o.max_memory_bytes)
    o.default_memory_bytes = o.max_memory_bytes;
  cr_err err = {0};
  if (cr_server_run(&o, &err) < 0) {
    fprintf(stderr, "corral serve: %s\n", err.msg);
    return 1;
  }
  return 0;
}

/* corral agent: the self-debugging loop from the command line. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli/cli.h"
#include "runtime/runtime.h"

static const char usage[] =
    "usage: corral agent [options] \"question\"\n"
    "  --provider openai|anthropic   (default openai; keys from OPENAI_API_KEY /\n"
    "                                ANTHROPIC_API_KEY)\n"
    "  --model NAME                  (default gpt-4o / claude-sonnet-4-6)\n"
    "  --base-url URL                any OpenAI-compatible server (or OPENAI_BASE_URL)\n"
    "  --lang python,node,bash       which run tools to offer (default python)\n"
    "  --data FILE                   copy a file into /workspace first (repeatable)\n"
    "  --max-turns N                 (default 10)\n"
    "  --max-code-attempts N         failed runs before the model must answer (default 3)\n"
    "  --review                      show each program and ask: run / skip / edit / quit\n"
    "  --review-cmd PROG             pipe each program to PROG; run it only if PROG exits 0\n"
    "  --timeout S, --memory MB      limits of each run (default 30 s, 256 MiB)\n"
    "  --request-timeout S           per model call (default 120)\n"
    "  --retries N                   429/5xx retries, with backoff and Retry-After (default 4)\n"
    "  --json                        print the transcript object instead of the answer\n";

int cr_cli_agent(int argc, char **argv) {
  /* A --review-cmd that stops reading, or a closed stdout, is an error to
   * report, not a silent death. */
  signal(SIGPIPE, SIG_IGN);
  cr_agent_opts o;
  cr_agent_opts_init(&o);
  bool json = false;
  const char *langs[4] = {NULL};
  char *langbuf = NULL;
  const char *data[65] = {NULL};
  size_t ndata = 0;
  static const struct option lo[] = {
      {"provider", required_argument, NULL, 'p'}, {"model", required_argument, NULL, 'M'},
      {"base-url", required_argument, NULL, 'b'}, {"lang", required_argument, NULL, 'l'},
      {"data", required_argument, NULL, 'd'},     {"max-turns", required_argument, NULL, 'T'},
      {"max-code-attempts", required_argument, NULL, 'A'},
      {"review", no_argument, NULL, 'r'},         {"review-cmd", required_argument, NULL, 'R'},
      {"timeout", required_argument, NULL, 't'},  {"memory", required_argument, NULL, 'm'},
      {"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
      {"request-timeout", required_argument, NULL, 'Q'}, {"retries", required_argument, NULL, 'Y'},
      {NULL, 0, NULL, 0}};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
    char *end;
    switch (c) {
    case 'p': o.provider = optarg; break;
    case 'M': o.model = optarg; break;
    case 'b': o.base_url = optarg; break;
    case 'l': {
      free(langbuf);
      langbuf = strdup(optarg);
      size_t k = 0;
      for (char *t = strtok(langbuf, ","); t && k < 3; t = strtok(NULL, ",")) {
        if (!cr_runtime_find(t)) {
          fprintf(stderr, "corral agent: --lang '%s': use python, node or bash (comma "
                          "separated)\n", t);
          free(langbuf);
          return 2;
        }
        langs[k++] = t;
      }
      langs[k] = NULL;
      if (k == 0) {
        fprintf(stderr, "corral agent: --lang '%s' names no language: use python, node or "
                        "bash (comma separated)\n", optarg);
        free(langbuf);
        return 2;
      }
      o.languages = langs;
      break;
    }
    case 'd':
      if (ndata >= 64) {
        fprintf(stderr, "corral agent: at most 64 --data files\n");
        return 2;
      }
      data[ndata++] = optarg;
      break;
    case 'T':
      o.max_turns = (int)strtol(optarg, &end, 10);
      if (*end || o.max_turns < 1 || o.max_turns > 100) {
        fprintf(stderr, "corral agent: --max-turns '%s': give 1 to 100\n", optarg);
        return 2;
      }
      break;
    case 'A':
      o.max_code_attempts = (int)strtol(optarg, &end, 10);
      if (*end || o.max_code_attempts < 1 || o.max_code_attempts > 100) {
        fprintf(stderr, "corral agent: --max-code-attempts '%s': give 1 to 100\n", optarg);
        return 2;
      }
      break;
    case 'r': o.review = true; break;
    case 'R': o.review_cmd = optarg; break;
    case 't':
      o.tools.timeout_s = strtod(optarg, &end);
      if (*end || !(o.tools.timeout_s > 0) || o.tools.timeout_s > 3600) {
        fprintf(stderr, "corral agent: --timeout '%s': give seconds above 0\n", optarg);
        return 2;
      }
      break;
    case 'm': {
      unsigned long long mb = strtoull(optarg, &end, 10);
      if (*end || mb < 32 || mb > 65536) {
        fprintf(stderr, "corral agent: --memory '%s': give MiB, 32 to 65536\n", optarg);
        return 2;
      }
      o.tools.memory_bytes = mb << 20;
      break;
    }
    case 'Q':
      o.request_timeout_s = strtod(optarg, &end);
      if (*end || !(o.request_timeout_s > 0)) {
        fprintf(stderr, "corral agent: --request-timeout '%s': give seconds above 0\n", optarg);
        return 2;
      }
      break;
    case 'Y':
      o.retries = (int)strtol(optarg, &end, 10);
      if (*end || o.retries < 0 || o.retries > 10) {
        fprintf(stderr, "corral agent: --retries '%s': give 0 to 10\n", optarg);
        return 2;
      }
      break;
    case 'j': json = true; break;
    case 'h': fputs(usage, stdout); return 0;
    default:
      fprintf(stderr, "corral agent: unknown or incomplete option '%s' (see --help)\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "corral agent: give the question as one argument (see --help)\n");
    free(langbuf);
    return 2;
  }
  bool anthropic = strcmp(o.provider, "anthropic") == 0;
  o.api_key = getenv(anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
  if (!o.base_url && !anthropic)
    o.base_url = getenv("OPENAI_BASE_URL");
  if (!o.model)
    o.model = anthropic ? "claude-sonnet-4-6" : "gpt-4o";
  data[ndata] = NULL;
  o.data_files = ndata ? data : NULL;
  o.trace = true;
  json_t *t = NULL;
  cr_err err = {0};
  int rc = cr_agent_run(&o, argv[optind], &t, &err);
  if (json && t) {
    json_dumpf(t, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    fputc('\n', stdout);
  } else if (rc == 0) {
    const char *a = json_string_value(json_object_get(t, "answer"));
    printf("%s\n", a ? a : "");
  }
  if (rc < 0)
    fprintf(stderr, "corral agent: %s\n", err.msg);
  json_decref(t);
  free(langbuf);
  /* SIGPIPE is ignored: an answer that could not be written (stdout closed,
   * disk full) must not look like success. */
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "corral agent: writing the %s to stdout failed: %s\n",
            json ? "transcript" : "answer", strerror(errno));
    return 1;
  }
  return rc < 0 ? 1 : 0;
}

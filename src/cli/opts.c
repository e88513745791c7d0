#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "exec/exec.h"

static int parse_double(const char *s, double *out) {
  if (!s || !*s)
    return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
  /* Digits only: strtoull would skip blanks and accept " -5" as 2^64-5. */
  if (!s || *s < '0' || *s > '9')
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

enum {
  OPT_JSON = 256, OPT_CPU, OPT_PIDS, OPT_DISK, OPT_OUTLIMIT, OPT_OUTMAX, OPT_STDIN,
  OPT_EXPECT, OPT_EXPECT_FILE, OPT_RAW_OUTPUT,
};

int cr_cli_parse_run(int argc, char **argv, cr_run_opts *o, cr_err *err) {
  memset(o, 0, sizeof *o);
  o->timeout_s = CR_DEFAULT_TIMEOUT_S;
  o->memory_bytes = CR_DEFAULT_MEMORY_BYTES;
  o->disk_bytes = CR_DEFAULT_DISK_BYTES;
  o->output_limit = CR_DEFAULT_OUTPUT_LIMIT;
  o->output_max = CR_DEFAULT_OUTPUT_MAX;
  o->pids = CR_DEFAULT_PIDS;
  static const struct option longopts[] = {
      {"code", required_argument, NULL, 'c'},
      {"lang", required_argument, NULL, 'l'},
      {"json", no_argument, NULL, OPT_JSON},
      {"raw-output", no_argument, NULL, OPT_RAW_OUTPUT},
      {"timeout", required_argument, NULL, 't'},
      {"cpu", required_argument, NULL, OPT_CPU},
      {"memory", required_argument, NULL, 'm'},
      {"pids", required_argument, NULL, OPT_PIDS},
      {"disk", required_argument, NULL, OPT_DISK},
      {"output-limit", required_argument, NULL, OPT_OUTLIMIT},
      {"output-max", required_argument, NULL, OPT_OUTMAX},
      {"stdin", required_argument, NULL, OPT_STDIN},
      {"file", required_argument, NULL, 'f'},
      {"out", required_argument, NULL, 'o'},
      {"expect", required_argument, NULL, OPT_EXPECT},
      {"expect-file", required_argument, NULL, OPT_EXPECT_FILE},
      {"env", required_argument, NULL, 'e'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = 1;
  opterr = 0;
  int c;
  bool cpu_set = false;
  while ((c = getopt_long(argc, argv, "+:c:l:t:m:f:o:e:h", longopts, NULL)) != -1) {
    uint64_t u;
    double d;
    switch (c) {
    case 'c':
      if (o->code)
        return cr_fail(err, 0, "-c/--code given twice: give the program once");
      o->code = optarg;
      break;
    case 'l': o->lang = optarg; break;
    case OPT_JSON: o->json = true; break;
    case OPT_RAW_OUTPUT: o->raw_output = true; break;
    case 't':
      if (parse_double(optarg, &d) < 0 || d <= 0)
        return cr_fail(err, 0, "--timeout '%s': give a number of seconds above 0, e.g. 5 or 0.5",
                       optarg);
      o->timeout_s = d;
      break;
    case OPT_CPU:
      if (parse_double(optarg, &d) < 0 || d <= 0)
        return cr_fail(err, 0, "--cpu '%s': give a number of seconds above 0", optarg);
      o->cpu_s = d;
      cpu_set = true;
      break;
    case 'm':
      if (parse_u64(optarg, &u) < 0 || u == 0 || u > (1u << 20))
        return cr_fail(err, 0, "--memory '%s': give a whole number of MiB, e.g. 256", optarg);
      o->memory_bytes = u << 20;
      break;
    case OPT_PIDS:
      if (parse_u64(optarg, &u) < 0 || u == 0 || u > 65536)
        return cr_fail(err, 0, "--pids '%s': give a whole number from 1 to 65536", optarg);
      o->pids = (uint32_t)u;
      break;
    case OPT_DISK:
      if (parse_u64(optarg, &u) < 0 || u == 0 || u > (1u << 20))
        return cr_fail(err, 0, "--disk '%s': give a whole number of MiB, e.g. 256", optarg);
      o->disk_bytes = u << 20;
      break;
    case OPT_OUTLIMIT:
      if (parse_u64(optarg, &u) < 0 || u == 0)
        return cr_fail(err, 0, "--output-limit '%s': give a whole number of bytes", optarg);
      o->output_limit = u;
      break;
    case OPT_OUTMAX:
      if (parse_u64(optarg, &u) < 0 || u == 0)
        return cr_fail(err, 0, "--output-max '%s': give a whole number of bytes", optarg);
      o->output_max = u;
      break;
    case OPT_STDIN: o->stdin_path = optarg; break;
    case 'f': {
      if (o->nfiles >= CR_CLI_MAX_FILES)
        return cr_fail(err, 0, "too many --file options (at most %d)", CR_CLI_MAX_FILES);
      /* PATH[:NAME]; without NAME the file keeps its base name. */
      char *colon = strrchr(optarg, ':');
      if (colon && colon[1]) {
        *colon = '\0';
        o->file_src[o->nfiles] = optarg;
        o->file_dst[o->nfiles] = colon + 1;
      } else {
        if (colon)
          *colon = '\0';
        o->file_src[o->nfiles] = optarg;
        const char *slash = strrchr(optarg, '/');
        o->file_dst[o->nfiles] = slash ? slash + 1 : optarg;
      }
      if (!*o->file_src[o->nfiles])
        return cr_fail(err, 0, "--file needs a host path: --file PATH[:NAME]");
      o->nfiles++;
      break;
    }
    case 'o': o->out_dir = optarg; break;
    case OPT_EXPECT: o->expect = optarg; break;
    case OPT_EXPECT_FILE: o->expect_file = optarg; break;
    case 'e':
      if (o->nenv >= CR_CLI_MAX_ENV)
        return cr_fail(err, 0, "too many --env options (at most %d)", CR_CLI_MAX_ENV);
      if (!strchr(optarg, '='))
        return cr_fail(err, 0, "--env '%s': give KEY=VALUE", optarg);
      o->env[o->nenv++] = optarg;
      break;
    case 'h': o->help = true; return 0;
    case ':':
      return cr_fail(err, 0, "option '%s' needs a value (see `corral run --help`)",
                     argv[optind - 1]);
    default:
      return cr_fail(err, 0, "unknown option '%s' (see `corral run --help`)", argv[optind - 1]);
    }
  }
  if (!cpu_set)
    o->cpu_s = 0;
  if (optind < argc)
    o->path = argv[optind++];
  if (optind < argc)
    return cr_fail(err, 0, "unexpected argument '%s': give one program (FILE, '-' or -c CODE)",
                   argv[optind]);
  if (o->code && o->path)
    return cr_fail(err, 0, "both -c and a program file '%s' given: choose one", o->path);
  if (!o->code && !o->path)
    return cr_fail(err, 0, "no program: give -c CODE, a FILE, or '-' to read it from stdin");
  if (o->expect && o->expect_file)
    return cr_fail(err, 0, "--expect and --expect-file both given: choose one");
  if (o->stdin_path && strcmp(o->stdin_path, "-") == 0)
    return cr_fail(err, 0, "--stdin - is not supported: give a file (standard input may hold "
                           "the program)");
  return 0;
}

/* corral session: a REPL over one sandboxed session. Each cell runs in the
 * same interpreter, so variables, imports and files persist. From a
 * terminal: type code, an empty line runs it. From a pipe or file: one cell
 * per blank-line-separated block. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "session/session.h"
#include "util/buf.h"

static const char usage[] =
    "usage: corral session [options]\n"
    "  -l, --lang LANG      python (default), node or bash\n"
    "  -t, --timeout S      per-cell wall-clock limit (default 30)\n"
    "  -m, --memory MB      memory limit of the whole session (default 256)\n"
    "      --disk MB        size of /workspace and of /tmp, each (default 256)\n"
    "      --pids N         most processes/threads at once (default 128)\n"
    "      --json           print each cell's result as one JSON line\n"
    "  -e, --env KEY=VALUE  environment variable (repeatable)\n"
    "      --raw-output     program output to a terminal unchanged (default: control\n"
    "                       characters other than tab, newline and CR shown as ^X)\n"
    "Cells: from a terminal, an empty line runs what was typed; from a pipe or\n"
    "file, blocks separated by blank lines. Ctrl-C interrupts the running cell.\n";

static int g_sig[2] = {-1, -1};

static void on_sigint(int sig) {
  (void)sig;
  ssize_t w = write(g_sig[1], "i", 1);
  (void)w;
}

/* Turns a signal into cr_session_interrupt, which may not be called from a
 * signal handler (it takes a lock). */
static void *interrupter(void *arg) {
  cr_session *s = arg;
  char c;
  while (read(g_sig[0], &c, 1) == 1) {
    if (c == 'q')
      break;
    if (!cr_session_interrupt(s))
      fputs("\n(nothing running; Ctrl-D ends the session)\n", stderr);
  }
  return NULL;
}

/* The program's bytes reach the terminal through cr_tty_write (escape
 * sequences shown, not obeyed). */
static cr_tty_out g_tty[3];

static void on_output(void *ctx, int stream, const char *data, size_t len) {
  size_t *sent = ctx;
  fflush(stream == 1 ? stdout : stderr);
  cr_tty_write(&g_tty[stream], stream, data, len);
  sent[stream] += len;
}

static void print_result(const cr_result *r, const size_t sent[3]) {
  fflush(stdout);
  if (r->out_len > sent[1])
    cr_tty_write(&g_tty[1], 1, r->out + sent[1], r->out_len - sent[1]);
  if (r->err_len > sent[2])
    cr_tty_write(&g_tty[2], 2, r->err + sent[2], r->err_len - sent[2]);
  cr_tty_flush(&g_tty[1], 1);
  cr_tty_flush(&g_tty[2], 2);
  for (size_t i = 0; i < r->nresults; i++) {
    json_t *mime = r->results[i].mime;
    json_t *text = json_object_get(mime, "text/plain");
    const char *key;
    json_t *v;
    if (r->results[i].main && json_is_string(text)) {
      fflush(stdout);
      cr_tty_write(&g_tty[1], 1, json_string_value(text), json_string_length(text));
      cr_tty_flush(&g_tty[1], 1);
      putchar('\n');
      continue;
    }
    /* Keys and text are the program's: through the terminal filter. */
    cr_buf line = {0};
    cr_buf_append(&line, "[display:", 9);
    json_object_foreach(mime, key, v) {
      if (strcmp(key, "text/plain") != 0) {
        char n[32];
        snprintf(n, sizeof n, " (%zu bytes)", json_is_string(v) ? json_string_length(v) : 0);
        cr_buf_append(&line, " ", 1);
        cr_buf_append(&line, key, strlen(key));
        cr_buf_append(&line, n, strlen(n));
      }
    }
    cr_buf_append(&line, "]", 1);
    if (json_is_string(text)) {
      cr_buf_append(&line, " ", 1);
      cr_buf_append(&line, json_string_value(text), json_string_length(text));
    }
    cr_buf_append(&line, "\n", 1);
    fflush(stdout);
    if (line.data) {
      cr_tty_write(&g_tty[1], 1, line.data, line.len);
      cr_tty_flush(&g_tty[1], 1);
    }
    cr_buf_free(&line);
  }
  fflush(stdout);
  if (r->status != CR_ST_OK) {
    char tail[64];
    snprintf(tail, sizeof tail, ", %.1f ms\n", r->duration_ms);
    if (r->has_error)
      cr_tty_printf(&g_tty[2], 2, "corral: %s (%s: %s%s%s)%s", cr_status_name(r->status),
                    cr_category_name(r->error.category), r->error.name ? r->error.name : "",
                    r->error.message ? ": " : "", r->error.message ? r->error.message : "",
                    tail);
    else
      cr_tty_printf(&g_tty[2], 2, "corral: %s%s", cr_status_name(r->status), tail);
    if (r->has_error && r->error.hint)
      cr_tty_printf(&g_tty[2], 2, "corral: hint: %s\n", r->error.hint);
  }
}

/* Reads one cell: lines up to a blank line (or EOF). Returns false at EOF
 * with nothing read. */
static bool read_cell(FILE *in, bool tty, cr_buf *cell) {
  cr_buf_reset(cell);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  bool any = false;
  for (;;) {
    if (tty) {
      fputs(any ? "... " : ">>> ", stderr);
      fflush(stderr);
    }
    n = getline(&line, &cap, in);
    if (n < 0)
      break;
    bool blank = strspn(line, " \t\r\n") == (size_t)n;
    if (blank) {
      if (any)
        break;
      continue;
    }
    cr_buf_append(cell, line, (size_t)n);
    any = true;
  }
  free(line);
  while (cell->len && (cell->data[cell->len - 1] == '\n'))
    cell->data[--cell->len] = '\0';
  return any;
}

int cr_cli_session(int argc, char **argv) {
  cr_session_opts o;
  cr_session_opts_init(&o);
  bool json = false, raw = false;
  const char *env[257];
  size_t nenv = 0;
  static const struct option longopts[] = {
      {"lang", required_argument, NULL, 'l'}, {"timeout", required_argument, NULL, 't'},
      {"memory", required_argument, NULL, 'm'}, {"json", no_argument, NULL, 'j'},
      {"env", required_argument, NULL, 'e'},   {"help", no_argument, NULL, 'h'},
      {"disk", required_argument, NULL, 'd'},  {"pids", required_argument, NULL, 'p'},
      {"raw-output", no_argument, NULL, 'r'},  {NULL, 0, NULL, 0}};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+:l:t:m:e:h", longopts, NULL)) != -1) {
    char *end;
    switch (c) {
    case 'l': o.language = optarg; break;
    case 't':
      o.timeout_s = strtod(optarg, &end);
      if (*end || !(o.timeout_s > 0)) {
        fprintf(stderr, "corral session: --timeout '%s': give a number of seconds above 0\n",
                optarg);
        return 2;
      }
      break;
    case 'm': {
      unsigned long long mb = strtoull(optarg, &end, 10);
      if (*end || mb == 0 || mb > (1u << 20)) {
        fprintf(stderr, "corral session: --memory '%s': give a whole number of MiB\n", optarg);
        return 2;
      }
      o.memory_bytes = mb << 20;
      break;
    }
    case 'd':
    case 'p': {
      unsigned long long v = strtoull(optarg, &end, 10);
      if (*end || v == 0 || v > (1u << 20)) {
        fprintf(stderr, "corral session: --%s '%s': give a whole number\n",
                c == 'd' ? "disk" : "pids", optarg);
        return 2;
      }
      if (c == 'd')
        o.disk_bytes = v << 20;
      else
        o.pids = (uint32_t)v;
      break;
    }
    case 'j': json = true; break;
    case 'r': raw = true; break;
    case 'e':
      if (nenv >= 256 || !strchr(optarg, '=')) {
        fprintf(stderr, "corral session: --env '%s': give KEY=VALUE\n", optarg);
        return 2;
      }
      env[nenv++] = optarg;
      break;
    case 'h': fputs(usage, stdout); return 0;
    case ':':
      fprintf(stderr, "corral session: option '%s' needs a value\n", argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "corral session: unknown option '%s' (see --help)\n", argv[optind - 1]);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "corral session: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  cr_tty_init(&g_tty[1], 1, raw);
  cr_tty_init(&g_tty[2], 2, raw);

  env[nenv] = NULL;
  o.env = nenv ? env : NULL;

  cr_session *s;
  cr_err err = {0};
  if (cr_session_open(&o, &s, &err) < 0) {
    cr_tty_printf(&g_tty[2], 2, "corral session: %s\n", err.msg);
    return 125;
  }
  signal(SIGPIPE, SIG_IGN);
  pthread_t th;
  bool th_started = false;
  if (pipe2(g_sig, O_CLOEXEC) == 0 && pthread_create(&th, NULL, interrupter, s) == 0) {
    th_started = true;
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
  }
  bool tty = isatty(0);
  if (tty)
    fprintf(stderr, "corral session (%s): an empty line runs the cell, Ctrl-D ends\n",
            cr_session_language(s));
  cr_buf cell = {0};
  int rc = 0;
  while (read_cell(stdin, tty, &cell)) {
    cr_result r;
    size_t sent[3] = {0, 0, 0};
    cr_sink sink = {.ctx = sent, .on_output = on_output};
    if (cr_session_execute(s, cell.data, cell.len, 0, json ? NULL : &sink, &r, &err) < 0) {
      cr_tty_printf(&g_tty[2], 2, "corral session: %s\n", err.msg);
      cr_result_free(&r);
      rc = 1;
      if (strstr(err.msg, "sandbox is gone"))
        break;
      continue;
    }
    if (json) {
      json_t *j = cr_result_to_json(&r);
      if (j) {
        json_dumpf(j, stdout, JSON_COMPACT | JSON_REAL_PRECISION(10) |
                                  (g_tty[1].filter ? JSON_ENSURE_ASCII : 0));
        fputc('\n', stdout);
        fflush(stdout);
        json_decref(j);
      }
    } else {
      print_result(&r, sent);
    }
    cr_result_free(&r);
  }
  cr_buf_free(&cell);
  if (th_started) {
    signal(SIGINT, SIG_DFL);
    ssize_t w = write(g_sig[1], "q", 1);
    (void)w;
    pthread_join(th, NULL);
  }
  if (g_sig[0] >= 0) {
    close(g_sig[0]);
    close(g_sig[1]);
  }
  cr_session_close(s);
  return rc;
}

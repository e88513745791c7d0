/* corral run: one program in a fresh sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "exec/exec.h"
#include "exec/expect.h"
#include "exec/workspace.h"
#include "runtime/runtime.h"
#include "sandbox/sandbox.h"
#include "util/buf.h"

static const char usage[] =
    "usage: corral run [options] (-c CODE | FILE | -)\n"
    "  -c, --code CODE        the program text\n"
    "  -l, --lang LANG        python (default), node or bash; FILE's extension also selects it\n"
    "      --json             print the whole result as JSON instead of the program's output\n"
    "  -t, --timeout S        wall-clock limit in seconds (default 30)\n"
    "      --cpu S            CPU-time limit per process (default: the timeout)\n"
    "  -m, --memory MB        memory limit in MiB (default 256)\n"
    "      --pids N           most processes/threads at once (default 128)\n"
    "      --disk MB          size of /workspace and of /tmp, each (default 256)\n"
    "      --output-limit B   bytes kept per stream, head and tail (default 1048576)\n"
    "      --output-max B     bytes a stream may write before the run is stopped (default 67108864)\n"
    "      --stdin FILE       the program's standard input (default: empty)\n"
    "  -f, --file PATH[:NAME] copy a host file into /workspace (repeatable)\n"
    "  -o, --out DIR          copy files the program created or changed to DIR\n"
    "      --expect TEXT      expected stdout (\\n decoded); a mismatch is status wrong_answer\n"
    "      --expect-file FILE expected stdout from a file\n"
    "  -e, --env KEY=VALUE    environment variable for the program (repeatable)\n"
    "      --raw-output       write the program's output to a terminal unchanged (by default\n"
    "                         control characters other than tab, newline and CR are shown as ^X)\n"
    "exit code: the program's; 124 timeout, 137 memory_limit, 123 output_limit,\n"
    "122 wrong_answer, 130 interrupted, 125 sandbox_error, 121 --out files not copied,\n"
    "2 usage error\n";

/* --out was given and the files were not (all) copied there (docs/cli.md). */
#define CR_EXIT_COPY_FAILED 121

static int read_all(int fd, cr_buf *b) {
  char tmp[65536];
  for (;;) {
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n == 0)
      return 0;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (cr_buf_append(b, tmp, (size_t)n) < 0)
      return -ENOMEM;
  }
}

static int read_path(const char *path, cr_buf *b) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return -EISDIR;
  }
  int rc = read_all(fd, b);
  close(fd);
  return rc;
}

static int g_cancel[2] = {-1, -1};

static void on_signal(int sig) {
  (void)sig;
  if (g_cancel[1] >= 0) {
    ssize_t w = write(g_cancel[1], "x", 1);
    (void)w;
  }
}

typedef struct live {
  size_t sent[3];
  cr_tty_out tty[3];
} live;


static void on_output(void *ctx, int stream, const char *data, size_t len) {
  live *l = ctx;
  cr_tty_write(&l->tty[stream], stream, data, len);
  l->sent[stream] += len;
}

static int exit_code_for(const cr_result *r) {
  switch (r->status) {
  case CR_ST_OK:
  case CR_ST_ERROR:
    if (r->exited)
      return r->exit_code;
    return r->signal ? 128 + r->signal : 1;
  case CR_ST_TIMEOUT: return 124;
  case CR_ST_MEMORY: return 137;
  case CR_ST_OUTPUT: return 123;
  case CR_ST_WRONG: return 122;
  case CR_ST_INTERRUPTED: return 130;
  case CR_ST_SANDBOX: return 125;
  }
  return 125;
}

static void status_line(const cr_result *r, cr_tty_out *t) {
  char code[32];
  if (r->exited)
    snprintf(code, sizeof code, "exit %d", r->exit_code);
  else if (r->signal)
    snprintf(code, sizeof code, "signal %d", r->signal);
  else
    snprintf(code, sizeof code, "no exit status");
  fprintf(stderr, "corral: %s, %s, %.1f ms, cpu %.1f ms, %.1f MiB\n", cr_status_name(r->status),
          code, r->duration_ms, r->cpu_ms, (double)r->memory_peak_bytes / (1 << 20));
  if (r->has_error) {
    /* The error's name, message and hint quote the program's stderr. */
    cr_tty_printf(t, 2, "corral: %s: %s%s%s\n", cr_category_name(r->error.category),
                  r->error.name ? r->error.name : "", r->error.message ? ": " : "",
                  r->error.message ? r->error.message : "");
    if (r->error.hint)
      cr_tty_printf(t, 2, "corral: hint: %s\n", r->error.hint);
  }
}

int cr_cli_run(int argc, char **argv) {
  cr_run_opts o;
  cr_err err = {0};
  if (cr_cli_parse_run(argc, argv, &o, &err) < 0) {
    fprintf(stderr, "corral run: %s\n", err.msg);
    return 2;
  }
  if (o.help) {
    fputs(usage, stdout);
    return 0;
  }

  int rc = 2;
  cr_buf code = {0}, in = {0}, expect = {0};
  int fds[CR_CLI_MAX_FILES];
  cr_exec_file files[CR_CLI_MAX_FILES];
  size_t nopen = 0;
  char *expect_text = NULL;
  size_t expect_len = 0;
  cr_result res;
  cr_result_init(&res);

  const char *lang = o.lang;
  const char *code_name = NULL;
  if (o.code) {
    if (cr_buf_append(&code, o.code, strlen(o.code)) < 0)
      goto oom;
  } else if (strcmp(o.path, "-") == 0) {
    if (read_all(0, &code) < 0) {
      fprintf(stderr, "corral run: reading the program from standard input: %s\n",
              strerror(errno));
      goto out;
    }
  } else {
    int r = read_path(o.path, &code);
    if (r < 0) {
      fprintf(stderr, "corral run: cannot read the program '%s': %s\n", o.path, strerror(-r));
      goto out;
    }
    const cr_runtime *ft = cr_runtime_for_file(o.path);
    if (!lang && ft)
      lang = ft->name;
    const char *base = strrchr(o.path, '/');
    base = base ? base + 1 : o.path;
    /* Keep the script's own name inside (tracebacks then name it), when
     * its extension matches the language. */
    if (ft && (!lang || cr_runtime_find(lang) == ft) && cr_sb_path_ok(base))
      code_name = base;
  }
  if (!lang)
    lang = "python";
  if (!cr_runtime_find(lang)) {
    fprintf(stderr, "corral run: unknown language '%s': use one of %s\n", lang,
            cr_runtime_list());
    goto out;
  }
  if (o.out_dir) {
    /* Refused now rather than after the run, whose files would be lost;
     * the copy makes the same check again when it runs. */
    cr_err oe = {0};
    if (cr_ws_out_dir_check(o.out_dir, &oe) < 0) {
      fprintf(stderr, "corral run: --out: %s\n", oe.msg);
      goto out;
    }
  }
  if (o.stdin_path) {
    int r = read_path(o.stdin_path, &in);
    if (r < 0) {
      fprintf(stderr, "corral run: cannot read --stdin file '%s': %s\n", o.stdin_path,
              strerror(-r));
      goto out;
    }
  }
  for (size_t i = 0; i < o.nfiles; i++) {
    int fd = open(o.file_src[i], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
      int e = fd < 0 ? errno : EINVAL;
      if (fd >= 0)
        close(fd);
      fprintf(stderr, "corral run: --file '%s': %s\n", o.file_src[i],
              e == EINVAL ? "not a regular file" : strerror(e));
      goto out;
    }
    fds[nopen++] = fd;
    files[i] = (cr_exec_file){.path = o.file_dst[i], .fd = fd};
  }
  if (o.expect) {
    expect_text = cr_unescape(o.expect, &expect_len);
    if (!expect_text)
      goto oom;
  } else if (o.expect_file) {
    int r = read_path(o.expect_file, &expect);
    if (r < 0) {
      fprintf(stderr, "corral run: cannot read --expect-file '%s': %s\n", o.expect_file,
              strerror(-r));
      goto out;
    }
  }

  cr_exec_spec spec;
  cr_exec_spec_init(&spec);
  spec.language = lang;
  spec.code = code.data ? code.data : "";
  spec.code_len = code.len;
  spec.code_name = code_name;
  spec.stdin_data = in.data;
  spec.stdin_len = in.len;
  spec.files = files;
  spec.nfiles = o.nfiles;
  spec.env = o.nenv ? o.env : NULL;
  spec.timeout_s = o.timeout_s;
  spec.cpu_s = o.cpu_s;
  spec.memory_bytes = o.memory_bytes;
  spec.pids = o.pids;
  spec.disk_bytes = o.disk_bytes;
  spec.output_limit = o.output_limit;
  spec.output_max = o.output_max;
  spec.out_dir = o.out_dir;
  if (expect_text) {
    spec.expected = expect_text;
    spec.expected_len = expect_len;
  } else if (o.expect_file) {
    spec.expected = expect.data ? expect.data : "";
    spec.expected_len = expect.len;
  }

  /* Ctrl-C, SIGTERM, SIGHUP: stop the run, still print its result and leave
   * nothing behind. */
  if (pipe2(g_cancel, O_CLOEXEC | O_NONBLOCK) == 0) {
    spec.cancel_fd = g_cancel[0];
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
  }
  signal(SIGPIPE, SIG_IGN);

  live l = {{0, 0, 0}, {{0}, {0}, {0}}};
  cr_tty_init(&l.tty[1], 1, o.raw_output);
  cr_tty_init(&l.tty[2], 2, o.raw_output);
  cr_sink sink = {.ctx = &l, .on_output = on_output};
  if (cr_execute(&spec, o.json ? NULL : &sink, &res, &err) < 0) {
    cr_tty_printf(&l.tty[2], 2, "corral run: %s\n", err.msg);
    rc = 2;
    goto out;
  }
  if (o.json) {
    json_t *j = cr_result_to_json(&res);
    if (!j)
      goto oom;
    json_dumpf(j, stdout,
               JSON_REAL_PRECISION(10) |
                   /* on a terminal, C1 controls in strings are escaped too */
                   (isatty(1) && !o.raw_output ? JSON_INDENT(2) | JSON_ENSURE_ASCII
                                               : JSON_COMPACT));
    fputc('\n', stdout);
    json_decref(j);
  } else {
    /* The head went out live; the rest (the dropped-bytes marker and the
     * tail, or what came after the live part) follows now. */
    if (res.out_len > l.sent[1])
      cr_tty_write(&l.tty[1], 1, res.out + l.sent[1], res.out_len - l.sent[1]);
    if (res.err_len > l.sent[2])
      cr_tty_write(&l.tty[2], 2, res.err + l.sent[2], res.err_len - l.sent[2]);
    cr_tty_flush(&l.tty[1], 1);
    cr_tty_flush(&l.tty[2], 2);
    status_line(&res, &l.tty[2]);
    if (res.files_copy_error)
      fprintf(stderr, "corral run: files not copied out: %s\n", res.files_copy_error);
  }
  fflush(stdout);
  rc = exit_code_for(&res);
  /* Whatever the run's status: a caller that asked for the files and did
   * not get them must not read success from the exit code. */
  if (res.files_copy_error)
    rc = CR_EXIT_COPY_FAILED;
  goto out;

oom:
  fprintf(stderr, "corral run: out of memory\n");
  rc = 125;
out:
  cr_result_free(&res);
  for (size_t i = 0; i < nopen; i++)
    close(fds[i]);
  cr_buf_free(&code);
  cr_buf_free(&in);
  cr_buf_free(&expect);
  free(expect_text);
  if (g_cancel[0] >= 0) {
    close(g_cancel[0]);
    close(g_cancel[1]);
    g_cancel[0] = g_cancel[1] = -1;
  }
  return rc;
}

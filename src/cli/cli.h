/* The command line: thin. Parsing is separate from running so the parser
 * can be unit-tested. */
#ifndef CORRAL_CLI_H
#define CORRAL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define CR_CLI_MAX_FILES 256
#define CR_CLI_MAX_ENV 256

typedef struct cr_run_opts {
  const char *code;           /* -c */
  const char *path;           /* FILE or "-" */
  const char *lang;           /* --lang, NULL = from the file or python */
  bool json;
  bool raw_output;  /* program output to a terminal unfiltered */
  double timeout_s, cpu_s;
  uint64_t memory_bytes, disk_bytes, output_limit, output_max;
  uint32_t pids;
  const char *stdin_path;
  const char *file_src[CR_CLI_MAX_FILES];   /* host path */
  const char *file_dst[CR_CLI_MAX_FILES];   /* name in /workspace (points into argv or src) */
  size_t nfiles;
  const char *out_dir;
  const char *expect;         /* raw --expect text (escapes not yet decoded) */
  const char *expect_file;
  const char *env[CR_CLI_MAX_ENV + 1];
  size_t nenv;
  bool help;
} cr_run_opts;

/* Parses `corral run` arguments (argv[0] is "run"). Returns 0, or -1 with a
 * message naming the bad option and what is allowed. */
int cr_cli_parse_run(int argc, char **argv, cr_run_opts *o, cr_err *err);

int cr_cli_run(int argc, char **argv);
int cr_cli_doctor(int argc, char **argv);
int cr_cli_session(int argc, char **argv);
int cr_cli_serve(int argc, char **argv);
int cr_cli_mcp(int argc, char **argv);
int cr_cli_agent(int argc, char **argv);

/* On a terminal the program's bytes could drive the terminal: escape
 * sequences retitle it, rewrite what is on screen (hiding what really ran),
 * write the clipboard (OSC 52) or worse on some emulators. Where `filter` is
 * set (the fd is a terminal and --raw-output was not given), control
 * characters other than tab, newline and carriage return are shown cat -v
 * style (ESC as ^[, U+009B as <U+009B>, a bare 8-bit C1 byte as <9B>);
 * otherwise the bytes pass unchanged. State carries across chunks of one
 * stream. */
typedef struct cr_tty_out {
  bool filter;
  bool held_c2; /* a 0xC2 ended the last chunk: maybe the start of a C1 */
  int cont;     /* continuation bytes still due in a multibyte character */
} cr_tty_out;

void cr_tty_init(cr_tty_out *t, int fd, bool raw);
void cr_tty_write(cr_tty_out *t, int fd, const char *p, size_t n);
/* Writes what a chunk boundary held back. */
void cr_tty_flush(cr_tty_out *t, int fd);
/* A whole line of ours that quotes the program (an error message, a hint),
 * through the same filter. */
void cr_tty_printf(cr_tty_out *t, int fd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

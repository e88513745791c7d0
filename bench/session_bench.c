/* Session round trip and idle footprint (issue: stateful sessions).
 *
 *   1. the round trip of a trivial cell (`1+1`) in a warm Python session,
 *      median and p99 over N cells (default 1000), through the C API;
 *   2. side by side, in the same run: the raw pipe round trip to a bare
 *      python3 REPL loop (eval a line, print the result), the floor;
 *   3. the PSS of an idle session: the sandbox's own processes (PID 1 and
 *      the driver), from /proc/PID/smaps_rollup.
 * Prints a table; with --json, one JSON object. Needs root (sandboxes). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session/session.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i];
}

static long pss_kb(int pid) {
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/%d/smaps_rollup", pid);
  FILE *f = fopen(p, "r");
  if (!f)
    return -1;
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Pss: %ld kB", &kb) == 1)
      break;
  fclose(f);
  return kb;
}

static int children(int pid, int *out, int max) {
  char p[96];
  snprintf(p, sizeof p, "/proc/%d/task/%d/children", pid, pid);
  FILE *f = fopen(p, "r");
  if (!f)
    return 0;
  int n = 0;
  while (n < max && fscanf(f, "%d", &out[n]) == 1)
    n++;
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  int n = 1000;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else
      n = atoi(argv[i]);
  }
  if (n < 10)
    n = 10;
  double *sess = calloc((size_t)n, sizeof *sess), *bare = calloc((size_t)n, sizeof *bare);

  /* The floor: a bare python3 REPL loop over pipes. */
  int to[2], from[2];
  if (pipe(to) < 0 || pipe(from) < 0)
    return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execl("/usr/bin/python3", "python3", "-u", "-c",
          "import sys\nfor line in sys.stdin:\n    sys.stdout.write(repr(eval(line)) + '\\n')\n",
          (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  char buf[64];
  for (int i = -50; i < n; i++) {
    double t0 = now_us();
    if (write(to[1], "1+1\n", 4) != 4 || read(from[0], buf, sizeof buf) <= 0)
      return 1;
    if (i >= 0)
      bare[i] = now_us() - t0;
  }
  close(to[1]);
  close(from[0]);
  waitpid(pid, NULL, 0);

  /* corral: a warm Python session. */
  cr_session_opts o;
  cr_session_opts_init(&o);
  cr_session *s;
  cr_err err = {0};
  double t_open = now_us();
  if (cr_session_open(&o, &s, &err) < 0) {
    fprintf(stderr, "session: %s\n", err.msg);
    return 1;
  }
  t_open = now_us() - t_open;
  for (int i = -50; i < n; i++) {
    cr_result r;
    double t0 = now_us();
    if (cr_session_execute(s, "1+1", 3, 0, NULL, &r, &err) < 0 || r.status != CR_ST_OK) {
      fprintf(stderr, "execute failed: %s\n", err.msg);
      return 1;
    }
    if (i >= 0)
      sess[i] = now_us() - t0;
    cr_result_free(&r);
  }
  /* Idle footprint: PID 1 of the sandbox (our child) and its children. */
  usleep(200000);
  int kids[16], nk = children((int)getpid(), kids, 16);
  long pss = 0;
  int procs = 0;
  for (int i = 0; i < nk; i++) {
    long k = pss_kb(kids[i]);
    if (k > 0) {
      pss += k;
      procs++;
    }
    int gk[16], ng = children(kids[i], gk, 16);
    for (int j = 0; j < ng; j++) {
      k = pss_kb(gk[j]);
      if (k > 0) {
        pss += k;
        procs++;
      }
    }
  }
  cr_session_close(s);

  double bm = pct(bare, n, 0.5), b99 = pct(bare, n, 0.99);
  double sm = pct(sess, n, 0.5), s99 = pct(sess, n, 0.99);
  if (json) {
    json_t *j = json_pack("{s:i, s:{s:f, s:f}, s:{s:f, s:f, s:f}, s:f, s:{s:f, s:i}}", "cells", n,
                          "bare_repl_us", "median", bm, "p99", b99, "session_us", "median", sm,
                          "p99", s99, "ratio_median", sm / bm, "session_open_ms", t_open / 1000,
                          "idle_session", "pss_mib", (double)pss / 1024, "processes", procs);
    json_dumpf(j, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(j);
  } else {
    printf("cell round trip, %d cells after 50 warm-up\n", n);
    printf("  %-34s median %8.1f us   p99 %8.1f us\n", "bare python3 REPL over pipes", bm, b99);
    printf("  %-34s median %8.1f us   p99 %8.1f us   (%.1fx the bare REPL)\n",
           "corral session (python, 1+1)", sm, s99, sm / bm);
    printf("session open (sandbox + driver ready): %.1f ms\n", t_open / 1000);
    printf("idle session PSS: %.1f MiB over %d processes (PID 1 + driver)\n", (double)pss / 1024,
           procs);
  }
  free(sess);
  free(bare);
  return 0;
}

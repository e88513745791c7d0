/* bench-alternate: times commands run by run, alternating between them.
 *
 *   bench-alternate RUNS WARMUP OUT.json NAME ARGC ARG... [NAME ARGC ARG...]...
 *
 * Each round runs every command once, starting with a different one each
 * round, so that a slow phase of a shared machine hits all commands alike
 * (hyperfine runs each command many times in a row). No shell sits between
 * the runner and the command: fork, execvp, wait4. Per run it records the
 * wall time (fork to reap) and the CPU time of the command's whole process
 * tree (user + system of everything it waited for, from wait4's rusage),
 * which is less noisy than wall time where CPUs are shared.
 *
 * Writes {"results": [{"command": NAME, "times": [s...], "cpu_times": [s...]}]}
 * (hyperfine's layout, which bench/run.sh summarises). A command that exits
 * non-zero stops the benchmark with its name. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct cmd {
  const char *name;
  char **argv;
  double *wall, *cpu;
} cmd;

static double tv_s(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static int run_once(const cmd *c, int devnull, double *wall, double *cpu) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t p = fork();
  if (p < 0)
    return -1;
  if (p == 0) {
    dup2(devnull, 1);
    dup2(devnull, 2);
    execvp(c->argv[0], c->argv);
    _exit(127);
  }
  int st;
  struct rusage ru;
  while (wait4(p, &st, 0, &ru) < 0)
    if (errno != EINTR)
      return -1;
  clock_gettime(CLOCK_MONOTONIC, &b);
  *wall = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  *cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static void put_list(FILE *f, const double *v, int n) {
  fputc('[', f);
  for (int i = 0; i < n; i++)
    fprintf(f, "%s%.9f", i ? "," : "", v[i]);
  fputc(']', f);
}

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    if ((unsigned char)*s >= 0x20)
      fputc(*s, f);
  }
  fputc('"', f);
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: %s RUNS WARMUP OUT.json NAME ARGC ARG... [NAME ARGC ARG...]...\n",
            argv[0]);
    return 2;
  }
  int runs = atoi(argv[1]), warmup = atoi(argv[2]);
  const char *out = argv[3];
  if (runs < 1 || warmup < 0) {
    fprintf(stderr, "bench-alternate: RUNS must be >= 1 and WARMUP >= 0\n");
    return 2;
  }
  cmd cmds[16];
  int nc = 0;
  for (int i = 4; i < argc;) {
    if (nc == 16 || i + 2 >= argc) {
      fprintf(stderr, "bench-alternate: malformed command list at '%s'\n", argv[i]);
      return 2;
    }
    int n = atoi(argv[i + 1]);
    if (n < 1 || i + 2 + n > argc) {
      fprintf(stderr, "bench-alternate: command '%s' has a bad argument count\n", argv[i]);
      return 2;
    }
    cmd *c = &cmds[nc++];
    c->name = argv[i];
    c->argv = calloc((size_t)n + 1, sizeof *c->argv);
    c->wall = calloc((size_t)runs, sizeof *c->wall);
    c->cpu = calloc((size_t)runs, sizeof *c->cpu);
    if (!c->argv || !c->wall || !c->cpu) {
      fprintf(stderr, "bench-alternate: out of memory\n");
      return 1;
    }
    memcpy(c->argv, argv + i + 2, sizeof(char *) * (size_t)n);
    i += 2 + n;
  }
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) {
    perror("bench-alternate: /dev/null");
    return 1;
  }
  for (int r = -warmup; r < runs; r++) {
    for (int k = 0; k < nc; k++) {
      int rot = r < 0 ? 0 : r;
      const cmd *c = &cmds[(k + rot) % nc];
      double w, u;
      int rc = run_once(c, devnull, &w, &u);
      if (rc != 0) {
        fprintf(stderr, "bench-alternate: '%s' %s\n", c->name,
                rc < 0 ? strerror(errno) : "failed (non-zero exit)");
        return 1;
      }
      if (r >= 0) {
        c->wall[r] = w;
        c->cpu[r] = u;
      }
    }
  }
  FILE *f = fopen(out, "w");
  if (!f) {
    perror("bench-alternate: writing the result");
    return 1;
  }
  fputs("{\"results\": [", f);
  for (int k = 0; k < nc; k++) {
    fputs(k ? ", {\"command\": " : "{\"command\": ", f);
    put_str(f, cmds[k].name);
    fputs(", \"times\": ", f);
    put_list(f, cmds[k].wall, runs);
    fputs(", \"cpu_times\": ", f);
    put_list(f, cmds[k].cpu, runs);
    fputc('}', f);
  }
  fputs("]}\n", f);
  return fclose(f) == 0 ? 0 : 1;
}

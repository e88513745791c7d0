/* bench-nsfloor: the kernel's floor under any launcher with corral's
 * namespaces, as an anchor for bench/run.sh.
 *
 *   bench-nsfloor PROGRAM [ARG...]
 *
 * One process that starts PROGRAM in fresh user, mount, pid, network, ipc,
 * uts and cgroup namespaces and waits for it; nothing else: no root of its
 * own, no cgroups, no seccomp, no Landlock, no id maps, no output capture.
 * It is not a sandbox (the program sees the host's files); it measures what
 * a launcher pays before building a single wall: one more process and exec,
 * the namespaces' creation and their teardown. The gap between this row and
 * corral's is what corral's walls and its own work cost.
 *
 * Linked statically, so that its own dynamic loading does not count against
 * the floor. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char stack[64 * 1024] __attribute__((aligned(16)));

static int child(void *argv) {
  execv(((char **)argv)[0], (char **)argv);
  fprintf(stderr, "bench-nsfloor: execv %s: %s\n", ((char **)argv)[0], strerror(errno));
  return 127;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] != '/') {
    fprintf(stderr, "usage: %s /ABSOLUTE/PROGRAM [ARG...]\n", argv[0]);
    return 2;
  }
  int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
              CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD;
  pid_t pid = clone(child, stack + sizeof stack, flags, argv + 1);
  if (pid < 0) {
    fprintf(stderr, "bench-nsfloor: clone with new namespaces: %s\n", strerror(errno));
    return 125;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "bench-nsfloor: waitpid: %s\n", strerror(errno));
      return 125;
    }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

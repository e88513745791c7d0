/* cr_sb_stop must never wait for PID 1: with its control socket full (PID 1
 * reads nothing: here it is stopped with SIGSTOP), the stop takes the hard
 * way at once. A real sandbox running /usr/bin/sleep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

static volatile sig_atomic_t g_hung;
static volatile pid_t g_init;

/* The guard against a stop that blocks: ends PID 1 (so nothing is left
 * behind) and records the failure the test then asserts against. */
static void on_alarm(int sig) {
  (void)sig;
  g_hung = 1;
  if (g_init > 0)
    kill(g_init, SIGKILL);
}

static void test_stop_with_full_control_socket(void **state) {
  (void)state;
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  assert_true(devnull >= 0);
  const char *argv[] = {"/usr/bin/sleep", "600", NULL};
  const char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  cr_sb_config cfg = {.argv = argv, .envp = envp, .stdin_fd = -1, .stdout_fd = devnull,
                      .stderr_fd = devnull,
                      .limits = {.memory_bytes = 64u << 20, .pids = 16, .nofile = 64,
                                 .tmp_bytes = 1u << 20, .workspace_bytes = 1u << 20}};
  cr_sb sb;
  cr_err err = {0};
  if (cr_sb_start(&cfg, &sb, &err) < 0)
    fail_msg("starting the sandbox: %s", err.msg);
  close(devnull);
  /* Up and running: READY comes once the program was started. */
  cr_ctl_msg m;
  for (;;) {
    struct pollfd pf = {.fd = sb.ctl_fd, .events = POLLIN};
    assert_int_equal(poll(&pf, 1, -1), 1);
    int r = cr_sb_read_ctl(&sb, &m, &err);
    assert_true(r == 1 || (r < 0 && err.errnum == EAGAIN));
    if (r == 1 && m.type == CR_CTL_READY)
      break;
    assert_true(r != 1 || m.type != CR_CTL_FAIL);
  }

  g_init = sb.init_pid;
  assert_int_equal(kill(sb.init_pid, SIGSTOP), 0);
  int st;
  assert_int_equal(waitpid(sb.init_pid, &st, WUNTRACED), sb.init_pid);
  assert_true(WIFSTOPPED(st));
  /* Fill the socket with commands PID 1 will not read (signal 0 to the
   * program: harmless), then give it back its blocking mode. */
  int fl = fcntl(sb.ctl_fd, F_GETFL);
  assert_int_equal(fcntl(sb.ctl_fd, F_SETFL, fl | O_NONBLOCK), 0);
  memset(&m, 0, sizeof m);
  m.type = CR_CTL_SIGNAL;
  size_t sent = 0;
  while (send(sb.ctl_fd, &m, sizeof m, MSG_NOSIGNAL) == (ssize_t)sizeof m)
    sent++;
  assert_int_equal(errno, EAGAIN);
  assert_true(sent > 0);
  assert_int_equal(fcntl(sb.ctl_fd, F_SETFL, fl), 0);

  struct sigaction sa = {.sa_handler = on_alarm};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  alarm(10);
  cr_sb_stop(&sb);
  alarm(0);
  /* Reaped and released before any assertion, so that a failure leaves
   * no sandbox (or cgroup) behind. */
  cr_sb_stats stats;
  int reaped = cr_sb_reap(&sb, &stats, &err);
  g_init = 0;
  cr_sb_release(&sb);
  assert_false(g_hung); /* cr_sb_stop blocked on the full socket */
  assert_int_equal(reaped, 0);
  assert_true(WIFSIGNALED(stats.init_status));
  assert_int_equal(WTERMSIG(stats.init_status), SIGKILL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stop_with_full_control_socket),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

"""Shared helpers for the integration tests: run build/corral, parse its JSON
result, check the invariants every result must keep, and fence the test
process in a pids cgroup before hostile code runs.

Run with Debian's interpreter (it has numpy/pandas for the tests that compare
against them):  /usr/bin/python3 -m pytest -q tests/integration
or fenced:      tests/run-hostile-fenced.sh
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# CORRAL in the environment selects another build (the ASan one, say).
CORRAL = Path(os.environ["CORRAL"]) if os.environ.get("CORRAL") else REPO / "build" / "corral"

STATUSES = {"ok", "error", "timeout", "memory_limit", "output_limit",
            "wrong_answer", "interrupted", "sandbox_error"}
CATEGORIES = {"syntax_error", "runtime_error", "module_not_found", "timeout",
              "memory_limit", "output_limit", "permission_denied",
              "network_blocked", "sandbox_error"}
# CLI exit code per status when the program did not simply exit (docs/cli.md).
STATUS_EXIT = {"timeout": 124, "memory_limit": 137, "output_limit": 123,
               "wrong_answer": 122, "interrupted": 130, "sandbox_error": 125}

MiB = 1 << 20

# pids of every corral this test run started (leftovers are attributed by them)
OUR_CORRAL_PIDS = set()


def corral_path() -> str:
    """The binary under test; a missing binary is a failure, never a skip."""
    if not CORRAL.is_file() or not os.access(CORRAL, os.X_OK):
        pytest.fail(f"{CORRAL} does not exist or is not executable: build corral first "
                    f"(meson setup build && ninja -C build)", pytrace=False)
    return str(CORRAL)


@dataclass
class Run:
    rc: int                   # exit code of the corral CLI
    out: bytes                # raw stdout of the CLI
    err: bytes                # raw stderr of the CLI
    wall_s: float             # wall time of the whole CLI invocation
    res: dict = field(default_factory=dict)   # parsed result (json mode)

    def __getitem__(self, k):
        return self.res[k]

    def why(self) -> str:
        """Context for assertion messages."""
        r = dict(self.res)
        for k in ("stdout", "stderr"):
            if isinstance(r.get(k), str) and len(r[k]) > 1500:
                r[k] = r[k][:700] + f"...<{len(r[k])} chars>..." + r[k][-700:]
        return (f"\n  cli rc={self.rc} wall={self.wall_s:.2f}s\n  result={json.dumps(r, indent=1)[:6000]}"
                f"\n  cli stderr={self.err[-2000:]!r}")


def check_invariants(run: Run) -> None:
    """What every --json result must satisfy, whatever the program did."""
    r = run.res
    assert isinstance(r, dict), run.why()
    assert r.get("status") in STATUSES, "unknown status" + run.why()
    for k in ("stdout", "stderr"):
        assert isinstance(r.get(k), str), f"{k} is not a string" + run.why()
    for k in ("stdout_truncated", "stderr_truncated"):
        assert isinstance(r.get(k), bool), f"{k} is not a bool" + run.why()
    for k in ("stdout_dropped_bytes", "stderr_dropped_bytes", "memory_peak_bytes"):
        assert isinstance(r.get(k), int) and not isinstance(r.get(k), bool) and r[k] >= 0, \
            f"{k} is not a non-negative int" + run.why()
    for k in ("duration_ms", "cpu_ms"):
        assert isinstance(r.get(k), (int, float)) and r[k] >= 0, f"{k} is not a number" + run.why()
    assert r.get("exit_code") is None or isinstance(r["exit_code"], int), run.why()
    assert r.get("signal") is None or isinstance(r["signal"], int), run.why()
    assert isinstance(r.get("results"), list), run.why()
    assert isinstance(r.get("files"), list), run.why()
    for f in r["files"]:
        assert set(f) >= {"path", "size", "change"}, run.why()
        assert f["change"] in ("created", "modified", "deleted"), run.why()
        assert not f["path"].startswith("/") and ".." not in f["path"].split("/"), run.why()
    assert isinstance(r.get("limits"), dict), run.why()
    err = r.get("error")
    if r["status"] == "ok":
        assert err is None, "status ok with an error object" + run.why()
    if err is not None:
        assert set(err) >= {"category", "name", "message", "retryable", "hint"}, run.why()
        assert err["category"] in CATEGORIES, run.why()
        assert isinstance(err["retryable"], bool), run.why()
    # truncation flags agree with the counters
    for s in ("stdout", "stderr"):
        assert r[f"{s}_truncated"] == (r[f"{s}_dropped_bytes"] > 0), \
            f"{s}_truncated disagrees with {s}_dropped_bytes" + run.why()
    # the CLI's exit code follows the status (docs/cli.md, "Exit code")
    st = r["status"]
    if st in STATUS_EXIT:
        assert run.rc == STATUS_EXIT[st], f"CLI exit code for {st}" + run.why()
    elif st in ("ok", "error"):
        if r["signal"] is not None:
            assert r["exit_code"] is None, run.why()
            assert run.rc == 128 + r["signal"], "CLI exit code after a signal" + run.why()
        else:
            assert isinstance(r["exit_code"], int), run.why()
            assert run.rc == r["exit_code"], "CLI exit code != program exit code" + run.why()
            assert (st == "ok") == (r["exit_code"] == 0), run.why()


def run_corral(args, *, input=None, env=None, timeout=None, json_mode=True, subcommand="run") -> Run:
    """Run `corral run --json ARGS` and parse the result; fails the test when
    the output is not one valid UTF-8 JSON object, or when corral outlives
    its own --timeout by more than 20 s."""
    args = [str(a) for a in args]
    if timeout is None:
        limit = 30.0
        for flag in ("--timeout", "-t"):
            if flag in args:
                try:
                    limit = float(args[args.index(flag) + 1])
                except (ValueError, IndexError):
                    pass
        timeout = limit + 20
    cmd = [corral_path(), subcommand] + (["--json"] if json_mode else []) + args
    if isinstance(input, str):
        input = input.encode()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    OUR_CORRAL_PIDS.add(p.pid)
    try:
        out, err = p.communicate(input if input is not None else b"", timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"corral did not finish within {timeout} s (killed): {cmd!r}\n"
                    f"stdout={out[-500:]!r}\nstderr={err[-1000:]!r}")
    run = Run(rc=p.returncode, out=out, err=err, wall_s=time.monotonic() - t0)
    if json_mode and subcommand == "run":
        try:
            text = out.decode("utf-8")          # strict: the result must be valid UTF-8
        except UnicodeDecodeError as e:
            pytest.fail(f"corral --json printed invalid UTF-8 ({e}); rc={p.returncode}; "
                        f"stderr={err[-1000:]!r}")
        try:
            run.res = json.loads(text)
        except ValueError as e:
            pytest.fail(f"corral --json did not print one JSON object ({e}); rc={p.returncode}\n"
                        f"stdout={text[:1000]!r}\nstderr={err[-1000:]!r}")
        check_invariants(run)
    return run


@pytest.fixture(scope="session")
def corral_bin():
    """Only the path (for tests of the command line that need no sandbox)."""
    return corral_path()


_smoke = {}


@pytest.fixture(scope="session")
def corral():
    """The binary, after one smoke run: when corral cannot run print(1) at all
    (missing, hangs, no JSON), every test that needs it fails at once with
    that reason instead of each waiting for its own timeout."""
    path = corral_path()
    if "error" not in _smoke:
        try:
            p = subprocess.run([path, "run", "--json", "--timeout", "10", "-c", "print(1)"],
                               capture_output=True, timeout=40)
            res = json.loads(p.stdout.decode("utf-8"))
            _smoke["error"] = None if res.get("stdout") == "1\n" else \
                f"smoke run `corral run --json -c 'print(1)'` did not print 1: {res!r:.1500}"
        except subprocess.TimeoutExpired:
            _smoke["error"] = "smoke run `corral run --json -c 'print(1)'` hung for 40 s"
        except ValueError as e:
            _smoke["error"] = (f"smoke run printed no JSON ({e}): rc={p.returncode} "
                               f"stdout={p.stdout[:500]!r} stderr={p.stderr[-1000:]!r}")
    if _smoke["error"]:
        pytest.fail(_smoke["error"], pytrace=False)
    return path


# ---------------------------------------------------------------- pids fence

PIDS_ROOT = "/sys/fs/cgroup/pids"


def own_pids_cgroup() -> str:
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if "pids" in ctrls.split(","):
                return path
    return ""


def fenced_by() -> str:
    """The pids cgroup directory (absolute) that limits this process, or ''."""
    rel = own_pids_cgroup()
    if not rel:
        return ""
    d = os.path.normpath(PIDS_ROOT + rel)
    while d.startswith(PIDS_ROOT) and d != PIDS_ROOT:
        try:
            with open(os.path.join(d, "pids.max")) as f:
                if f.read().strip() != "max":
                    return d
        except OSError:
            pass
        d = os.path.dirname(d)
    return ""


def cgroup_procs_recursive(d: str):
    pids = []
    for root, dirs, files in os.walk(d):
        try:
            with open(os.path.join(root, "cgroup.procs")) as f:
                pids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return pids


@pytest.fixture(scope="session")
def pids_fence():
    """Hostile code runs with this process inside a pids cgroup (pids.max 2000),
    so a wall that fails during development costs a red test, not a host that
    cannot fork. tests/run-hostile-fenced.sh sets one up for the whole run; when
    pytest was started without it, the fence is made here for this process."""
    existing = fenced_by()
    if existing:
        yield existing
        return
    if not os.path.isdir(PIDS_ROOT):
        pytest.fail(f"{PIDS_ROOT} is missing: cannot fence the hostile tests in a pids cgroup")
    orig = own_pids_cgroup()
    fence = os.path.normpath(f"{PIDS_ROOT}{orig}/ctest-fence-{os.getpid()}")
    try:
        os.mkdir(fence)
        with open(os.path.join(fence, "pids.max"), "w") as f:
            f.write("2000")
        with open(os.path.join(fence, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except OSError as e:
        pytest.fail(f"cannot create the pids fence {fence}: {e} (run as root, or use tests/run-hostile-fenced.sh)")
    try:
        yield fence
    finally:
        with open(os.path.normpath(f"{PIDS_ROOT}{orig}/cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        # Whatever is still inside was started by this test run: end it by pid.
        for _ in range(50):
            left = cgroup_procs_recursive(fence)
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.1)
        for root, dirs, files in os.walk(fence, topdown=False):
            try:
                os.rmdir(root)
            except OSError:
                pass


# ------------------------------------------------------------ shared helpers

def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes_with_env(needle: bytes):
    """Pids whose environment holds needle (a sandbox started with env {K: V}
    shows K=V in /proc/PID/environ on the host)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                if needle in f.read():
                    found.append(int(p))
        except OSError:
            pass
    return found


def wait_no_env(needle: bytes, seconds: float):
    """Waits until no process carries needle in its environment; returns the
    survivors (empty when all are gone)."""
    deadline = time.monotonic() + seconds
    while True:
        left = processes_with_env(needle)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@contextlib.contextmanager
def serving(args, ready: bytes, timeout=30.0):
    """`corral serve ARGS`, once its stderr has said `ready`; on exit SIGTERM,
    and it must end with status 0."""
    p = subprocess.Popen([corral_path(), "serve", *args], stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    seen = b""
    while ready not in seen:
        if time.monotonic() > deadline or p.poll() is not None:
            p.kill()
            pytest.fail(f"corral serve did not start: {seen!r}")
        seen += p.stderr.readline()
    try:
        yield p
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0

"""Sessions through `corral session --json` (one result JSON line per cell)
and through the C API test binary: state between cells, the agent's
fail-then-fix loop, rich results, interrupts, timeouts that restart a stuck
interpreter, the hostile corpus inside a session, and sessions that cannot
see or signal each other."""

import base64
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import CORRAL, REPO, corral_path

SHARED_HOSTILE = Path(os.path.normpath(REPO / ".." / "shared" / "hostile"))
OWN_HOSTILE = REPO / "tests" / "hostile"
LANG_OF = {".py": "python", ".js": "node", ".sh": "bash"}


class Session:
    """A `corral session --json` process fed one cell at a time."""

    def __init__(self, lang="python", *args, timeout=2):
        self.p = subprocess.Popen(
            [corral_path(), "session", "--json", "--lang", lang, "--timeout", str(timeout), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""

    def send(self, code: str):
        # a cell ends at a blank line; blank lines inside the code would split it
        lines = [l for l in code.split("\n") if l.strip()]
        self.p.stdin.write(("\n".join(lines) + "\n\n").encode())
        self.p.stdin.flush()

    def result(self, within=30.0) -> dict:
        deadline = time.monotonic() + within
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"no result within {within} s; stderr so far: {self.stderr_now()!r}")
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 1 << 20)
                if not chunk:
                    pytest.fail(f"corral session ended early: {self.stderr_now()!r}")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, code: str, within=30.0) -> dict:
        self.send(code)
        return self.result(within)

    def stderr_now(self) -> bytes:
        try:
            os.set_blocking(self.p.stderr.fileno(), False)
            return self.p.stderr.read() or b""
        except Exception:
            return b""

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def main_text(r):
    for x in r["results"]:
        if x.get("main"):
            return x["mime"].get("text/plain")
    return None


@pytest.fixture
def py():
    s = Session("python")
    yield s
    assert s.close() == 0


def test_state_persists(py):
    assert py.run("x = 1")["status"] == "ok"
    r = py.run("x + 1")
    assert r["status"] == "ok" and main_text(r) == "2", r


def test_dataframe_between_cells(py):
    r = py.run("import pandas as pd\n"
               "open('sales.csv','w').write('region,amount\\nnorth,10\\nsouth,32\\nnorth,5\\n')\n"
               "df = pd.read_csv('sales.csv')")
    assert r["status"] == "ok", r
    assert {"path": "sales.csv", "size": 40, "change": "created"} in r["files"], r["files"]
    r = py.run("df.groupby('region')['amount'].sum()['north']")
    assert main_text(r) == "15", r
    r = py.run("df.head()")
    html = [x["mime"].get("text/html", "") for x in r["results"] if x.get("main")]
    assert html and "<table" in html[0], r


def test_cell_cpu_is_the_drivers_even_with_orphans_around(py):
    # An orphan from an earlier cell is re-parented to PID 1 before the
    # restarted driver: the CPU figure must still be the driver's.
    r = py.run("import subprocess\nsubprocess.Popen(['sleep', '100'], start_new_session=True)")
    assert r["status"] == "ok", r
    assert py.run("import os; os._exit(0)")["status"] == "error"
    r = py.run("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass")
    assert r["status"] == "ok", r
    assert r["cpu_ms"] >= 200, f"cpu_ms {r['cpu_ms']} is not the busy driver's: {r}"


def test_fail_then_fix_keeps_state(py):
    assert py.run("data = [23, 45, 12, 67, 89, 34, 56]")["status"] == "ok"
    r = py.run("import statistics\nstatistics.mean(dataa)")
    assert r["status"] == "error", r
    assert r["error"]["category"] == "runtime_error" and r["error"]["name"] == "NameError", r
    assert r["error"]["retryable"] is True
    assert "NameError" in r["stderr"], r
    r = py.run("statistics.mean(data)")
    assert r["status"] == "ok" and main_text(r) == "46.57142857142857", r


def test_matplotlib_figure_is_png(py):
    r = py.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\nplt.title('t')")
    assert r["status"] == "ok", r
    pngs = [x["mime"]["image/png"] for x in r["results"] if "image/png" in x["mime"]]
    assert len(pngs) == 1, r["results"]
    data = base64.b64decode(pngs[0])
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, len(data)
    # shown explicitly, then nothing left open for the next cell
    r = py.run("plt.figure(); plt.bar([1], [2]); plt.show()")
    assert sum("image/png" in x["mime"] for x in r["results"]) == 1, r["results"]
    r = py.run("1")
    assert not any("image/png" in x["mime"] for x in r["results"]), r["results"]


def test_module_not_found_names_installed_packages(py):
    r = py.run("import surely_not_installed_pkg")
    assert r["error"]["category"] == "module_not_found", r
    assert "numpy" in r["error"]["hint"], r


def test_interrupt_keeps_state():
    s = Session("python", timeout=30)
    try:
        assert s.run("kept = 'yes'")["status"] == "ok"
        s.send("while True:\n    pass")
        time.sleep(1.0)
        s.p.send_signal(signal.SIGINT)   # corral session turns Ctrl-C into an interrupt
        r = s.result(10)
        assert r["status"] == "interrupted", r
        assert main_text(s.run("kept")) == "'yes'"
    finally:
        assert s.close() == 0


def test_timeout_interrupts_and_keeps_state():
    s = Session("python", timeout=1)
    try:
        s.run("counter = 41")
        r = s.run("while True:\n    counter = 41")
        assert r["status"] == "timeout" and r["error"]["category"] == "timeout", r
        assert "kept" in r["error"]["hint"], r
        assert main_text(s.run("counter + 1")) == "42"
    finally:
        assert s.close() == 0


def test_stuck_cell_restarts_interpreter_and_says_so():
    s = Session("python", timeout=1)
    try:
        s.run("lost = 1")
        t0 = time.monotonic()
        r = s.run("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                  "while True:\n    time.sleep(0.05)", within=20)
        assert r["status"] == "timeout" and r["error"]["category"] == "timeout", r
        assert "restarted" in r["error"]["hint"] and "gone" in r["error"]["hint"], r
        assert time.monotonic() - t0 < 10
        r = s.run("lost")
        assert r["status"] == "error" and r["error"]["name"] == "NameError", r
        assert s.run("print('alive')")["stdout"] == "alive\n"
    finally:
        assert s.close() == 0


def test_driver_that_hangs_while_starting_does_not_wedge_the_session():
    # A cell plants a usercustomize.py that hangs the next interpreter's
    # start once. That start fails after its deadline; the hung driver must
    # be killed, so that the start after it works.
    s = Session("python", timeout=5)
    try:
        r = s.run("import site, os\n"
                  "p = site.getusersitepackages()\n"
                  "os.makedirs(p, exist_ok=True)\n"
                  "open(os.path.join(p, 'usercustomize.py'), 'w').write("
                  "'import os, time\\nm = \"/workspace/hung_once\"\\n"
                  "if not os.path.exists(m):\\n    open(m, \"w\").close()\\n    while True: time.sleep(1)\\n')\n"
                  "print(site.ENABLE_USER_SITE)")
        assert r["status"] == "ok" and r["stdout"] == "True\n", r
        r = s.run("import os\nos._exit(0)", within=60)      # the driver ends; its successor hangs
        assert r["status"] == "error", r
        r = s.run("print('back')", within=60)
        assert r["status"] == "ok" and r["stdout"] == "back\n", \
            f"the session stayed wedged after a driver hung while starting: {r}"
    finally:
        s.close()


def test_events_written_in_one_burst_do_not_stall_the_cell(py):
    # More frames than one wakeup handles (256), in a single write together
    # with the driver's own "done": the cell must end when it is done, not
    # at its time limit (then it would be a timeout). The cell wraps the
    # driver's frame writer so that "done" leaves in the same write.
    r = py.run("import _corral_session as d\n"
               "orig = d.frame\n"
               "noise = b'{\"type\":\"noise\",\"id\":0}'\n"
               "def burst(ev):\n"
               "    data = orig(ev)\n"
               "    if ev.get('type') == 'done':\n"
               "        d.frame = orig\n"
               "        return (b'%d\\n' % len(noise) + noise) * 300 + data\n"
               "    return data\n"
               "d.frame = burst\n"
               "print('after')", within=60)
    assert r["status"] == "ok" and r["stdout"] == "after\n", r
    r = py.run("print('next')")
    assert r["status"] == "ok" and r["stdout"] == "next\n", r


def test_interpreter_that_exits_between_cells_is_reported(py):
    r = py.run("keep = 1\nimport threading, os\nthreading.Timer(0.3, os._exit, [0]).start()")
    assert r["status"] == "ok", r
    time.sleep(1.2)
    r = py.run("print(keep)")
    assert r["status"] == "error" and r["error"]["name"] == "NameError", r
    assert "restarted" in r["stderr"] and "restarted" in r["error"]["hint"], r
    r = py.run("print(2)")
    assert r["status"] == "ok" and "restarted" not in r["stderr"], r


def test_memory_limit_restarts_and_keeps_files():
    s = Session("python", "--memory", "128", timeout=10)
    try:
        s.run("open('keep.txt', 'w').write('kept'); v = 1")
        r = s.run("big = bytearray(512 * 2**20)\nbig[::4096] = b'x' * (512 * 256)")
        assert r["status"] == "memory_limit" and r["error"]["category"] == "memory_limit", r
        r = s.run("print(open('keep.txt').read())")
        assert r["stdout"] == "kept\n", r
        assert s.run("v")["error"]["name"] == "NameError"
    finally:
        assert s.close() == 0


def test_node_session():
    s = Session("node")
    try:
        assert s.run("let a = 20; const f = (x) => x * 2;")["status"] == "ok"
        assert main_text(s.run("f(a) + 2")) == "42"
        r = s.run("await new Promise(r => setTimeout(() => r(5), 10))")
        assert main_text(r) == "5", r
        r = s.run("console.log('hi'); notDefined")
        assert r["status"] == "error" and r["stdout"] == "hi\n", r
        assert r["error"]["name"] == "ReferenceError", r
    finally:
        assert s.close() == 0


def test_bash_session():
    s = Session("bash")
    try:
        assert s.run("mkdir -p d && cd d && X=7 && f() { echo \"f$1\"; }")["status"] == "ok"
        r = s.run("pwd; echo $X; f 1")
        assert r["stdout"] == "/workspace/d\n7\nf1\n", r
        r = s.run("false")
        assert r["status"] == "error" and r["exit_code"] == 1, r
    finally:
        assert s.close() == 0


def test_bad_input():
    p = subprocess.run([corral_path(), "session", "--lang", "cobol"], capture_output=True,
                       timeout=30)
    assert p.returncode == 125 and b"unknown language 'cobol'" in p.stderr, p


def test_session_c_api():
    """State, FIFO queueing from threads, the manager's maximum and TTL reaper,
    and 50 sessions opened and closed leaving no process, cgroup or fd."""
    exe = Path(CORRAL).parent / "test_session_api"
    assert exe.is_file(), f"{exe} missing: build it (ninja -C build)"
    p = subprocess.run([str(exe)], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stdout.decode()[-4000:] + p.stderr.decode()[-2000:]


def hostile_files():
    out = []
    for d in (SHARED_HOSTILE, OWN_HOSTILE):
        for f in sorted(d.iterdir()) if d.is_dir() else []:
            if f.suffix in LANG_OF:
                out.append(f)
    return out


@pytest.mark.parametrize("probe", hostile_files(), ids=lambda p: p.name)
def test_hostile_corpus_in_a_session(probe):
    """Every probe, run as a cell of a live session, stays contained; the
    session answers afterwards (or was restarted and says so)."""
    text = probe.read_text()
    if "CORRAL_HOST_PORT" in text or "expect-status" in text:
        # needs the one-shot harness's host listener, or ends on a limit
        # that the one-shot suite asserts; here: contained and alive
        pass
    lang = LANG_OF[probe.suffix]
    limits = {}
    for line in text.splitlines()[:8]:
        if "limits:" in line:
            for kv in line.split("limits:", 1)[1].split():
                k, _, v = kv.partition("=")
                limits[k] = v
    args = []
    if "memory_mb" in limits:
        args += ["--memory", limits["memory_mb"]]
    if "disk_mb" in limits:
        args += ["--disk", limits["disk_mb"]]
    if "pids" in limits:
        args += ["--pids", limits["pids"]]
    s = Session(lang, *args, timeout=float(limits.get("timeout_s", 5)))
    try:
        r = s.run(text, within=60)
        assert "ESCAPED" not in r["stdout"], r
        alive = s.run({"python": "print('alive')", "node": "console.log('alive')",
                       "bash": "echo alive"}[lang], within=30)
        assert alive["stdout"] == "alive\n", alive
    finally:
        s.close()


def test_sessions_cannot_see_or_signal_each_other():
    a, b = Session("python"), Session("python")
    try:
        ra = a.run("import os\nopen('/tmp/a-was-here', 'w').write('x')\nos.getpid()")
        assert ra["status"] == "ok"
        rb = b.run("import os, signal\n"
                   "seen = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
                   "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
                   "(os.path.exists('/tmp/a-was-here'), os.path.exists('/workspace/../tmp/a-was-here'), seen)")
        assert rb["status"] == "ok", rb
        exists_a, exists_b, seen = eval(main_text(rb))
        assert not exists_a and not exists_b, rb
        assert len(seen) <= 3, seen          # init, the driver, at most a helper
        assert a.run("print('a alive')")["stdout"] == "a alive\n"
    finally:
        a.close()
        b.close()

"""The session drivers (src/runtime/drivers/), driven directly over pipes
with the file descriptors of docs/session-protocol.md, without corral.

Run with Debian's interpreter (the drivers' tests need its pandas and
matplotlib):   /usr/bin/python3 -m pytest -q tests/drivers
CORRAL_DRIVERS_DIR in the environment tests drivers from another directory.

Every wait has a deadline (select on the pipes), so a hung driver fails its
test instead of hanging the run; every driver's process group is killed at
teardown.
"""

import base64
import fcntl
import json
import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DRIVERS = Path(os.environ.get("CORRAL_DRIVERS_DIR") or REPO / "src" / "runtime" / "drivers")
COMMANDS = {  # as the supervisor starts them (src/runtime/runtime.c)
    "python": ["/usr/bin/python3", "-u", str(DRIVERS / "driver.py")],
    "node": ["/usr/bin/node", "--expose-internals", str(DRIVERS / "driver.js")],
    "bash": ["/usr/bin/bash", str(DRIVERS / "driver.sh")],
}
LANGS = list(COMMANDS)
MiB = 1 << 20
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Cell:
    """What one execute request produced."""

    def __init__(self, events, out, err):
        self.events, self.out, self.err = events, out, err
        self.done = events[-1]

    def of(self, kind):
        return [e for e in self.events if e["type"] == kind]

    @property
    def status(self):
        return self.done["status"]

    @property
    def result(self):
        results = self.of("result")
        assert len(results) <= 1, self.events
        return results[0]["mime"] if results else None

    @property
    def error(self):
        errors = self.of("error")
        assert len(errors) == 1, self.events
        return errors[0]


class Driver:
    def __init__(self, lang, workdir, sigint=signal.SIG_DFL):
        self.lang = lang
        req_r, self.req_w = os.pipe()
        self.ev_r, ev_w = os.pipe()

        def child_fds():
            # fd 3: requests, fd 4: events. Copies above 10 first, so that
            # neither dup2 can overwrite the other's source.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (req_r, ev_w)]
            for target, fd in zip((3, 4), high):
                os.dup2(fd, target)
                os.close(fd)
            # Whoever started the tests may have left SIGINT ignored; the
            # interrupt tests try both dispositions.
            signal.signal(signal.SIGINT, sigint)

        env = {"HOME": str(workdir), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
               "CORRAL_SESSION": "1",
               # corral_mpl is imported from the source tree: no __pycache__ there
               "PYTHONDONTWRITEBYTECODE": "1"}
        # close_fds=False: fds 3 and 4 are made in preexec_fn, after the
        # parent's pipes (all close-on-exec) are chosen; close_fds would
        # close them.
        self.proc = subprocess.Popen(
            COMMANDS[lang], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=workdir, env=env, preexec_fn=child_fds,
            close_fds=False, start_new_session=True)
        os.close(req_r)
        os.close(ev_w)
        self.out_fd, self.err_fd = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        for fd in (self.ev_r, self.out_fd, self.err_fd):
            os.set_blocking(fd, False)
        self.evbuf = bytearray()
        self.out, self.err = bytearray(), bytearray()
        self.eof = set()
        self.next_id = 0

    # -- plumbing ---------------------------------------------------------

    def send(self, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        os.write(self.req_w, b"%d\n" % len(body) + body)

    def _drain(self, fd):
        sink = {self.ev_r: self.evbuf, self.out_fd: self.out, self.err_fd: self.err}[fd]
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                return
            if not chunk:
                self.eof.add(fd)
                return
            sink += chunk

    def _frame(self):
        """One complete event from the buffer, checked against the protocol."""
        nl = self.evbuf.find(b"\n")
        if nl < 0:
            assert len(self.evbuf) < 10, f"bad frame header {bytes(self.evbuf[:20])!r}"
            return None
        head = bytes(self.evbuf[:nl])
        assert head.isdigit(), f"bad frame header {head!r}"
        assert int(head) <= 64 * MiB, f"a {int(head)}-byte frame: over the protocol's limit"
        end = nl + 1 + int(head)
        if len(self.evbuf) < end:
            return None
        event = json.loads(bytes(self.evbuf[nl + 1:end]).decode("utf-8"))
        del self.evbuf[:end]
        assert isinstance(event, dict) and isinstance(event.get("type"), str), event
        return event

    def event(self, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            event = self._frame()
            if event is not None:
                return event
            assert self.ev_r not in self.eof, (
                f"{self.lang} driver closed its event pipe (exit {self.proc.poll()}); "
                f"stderr: {bytes(self.err)[-2000:]!r}")
            left = deadline - time.monotonic()
            assert left > 0, f"no event from the {self.lang} driver within {timeout} s"
            fds = [fd for fd in (self.ev_r, self.out_fd, self.err_fd) if fd not in self.eof]
            for fd in select.select(fds, [], [], left)[0]:
                self._drain(fd)

    # -- requests ---------------------------------------------------------

    def ready(self):
        event = self.event(timeout=15)
        assert event["type"] == "ready", event
        return event

    def start_cell(self, code):
        self.next_id += 1
        self.out.clear()
        self.err.clear()
        self.send({"type": "execute", "id": self.next_id,
                   "code_b64": base64.b64encode(code.encode()).decode()})
        return self.next_id

    def finish_cell(self, cid, timeout=10):
        events = []
        while not events or events[-1]["type"] != "done":
            event = self.event(timeout)
            assert event.get("id") == cid, (cid, event)
            assert event["type"] in {"display", "result", "error", "done"}, event
            events.append(event)
        # The protocol: everything the cell printed is in the pipes when
        # "done" arrives. Read what is there now, without waiting.
        self._drain(self.out_fd)
        self._drain(self.err_fd)
        return Cell(events, bytes(self.out), bytes(self.err))

    def run(self, code, timeout=10):
        return self.finish_cell(self.start_cell(code), timeout)

    def ok(self, code, timeout=10):
        cell = self.run(code, timeout)
        assert cell.status == "ok", (cell.events, cell.err)
        return cell

    def ping(self, timeout=5):
        self.next_id += 1
        self.send({"type": "ping", "id": self.next_id})
        assert self.event(timeout) == {"type": "pong", "id": self.next_id}

    def sigint(self):
        os.killpg(self.proc.pid, signal.SIGINT)

    def wait_exit(self, timeout=5):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the {self.lang} driver did not exit within {timeout} s")

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(5)
        for fd in (self.req_w, self.ev_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def start(tmp_path):
    drivers = []

    def start(lang, sigint=signal.SIG_DFL):
        d = Driver(lang, tmp_path, sigint)
        drivers.append(d)
        d.ready()
        return d

    yield start
    for d in drivers:
        d.kill()


def text(cell):
    return cell.result["text/plain"]


# ---- every language -------------------------------------------------------

@pytest.mark.parametrize("lang,version", [("python", r"3\.11\.\d+"), ("node", r"20\.\d+\.\d+"),
                                          ("bash", r"5\.\d+\.\d+")])
def test_ready_names_language_and_version(tmp_path, lang, version):
    d = Driver(lang, tmp_path)
    try:
        ready = d.ready()
        assert ready["language"] == lang
        assert re.fullmatch(version, ready["version"]), ready
    finally:
        d.kill()


@pytest.mark.parametrize("lang", LANGS)
def test_ping_before_and_after_a_cell(start, lang):
    d = start(lang)
    d.ping()
    d.ok({"python": "x = 1", "node": "let x = 1", "bash": "x=1"}[lang])
    d.ping()


OUTPUT = {
    "python": "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n"
              "sys.stdout.write('no newline')",
    "node": "console.log('to stdout'); console.error('to stderr'); "
            "process.stdout.write('no newline')",
    "bash": "echo to stdout; echo to stderr >&2; printf 'no newline'",
}


@pytest.mark.parametrize("lang", LANGS)
def test_output_is_in_the_pipes_when_done_arrives(start, lang):
    d = start(lang)
    cell = d.ok(OUTPUT[lang])
    assert cell.out.endswith(b"to stdout\nno newline"), cell.out
    assert b"to stderr\n" in cell.err


UNICODE = {
    "python": "s = 'héllo ✓ 世界 🎉'\nprint(s)\ns",
    "node": "const s = 'héllo ✓ 世界 🎉'; console.log(s); s",
    "bash": "s='héllo ✓ 世界 🎉'; echo \"$s\"",
}


@pytest.mark.parametrize("lang", LANGS)
def test_unicode_code_output_and_result(start, lang):
    d = start(lang)
    cell = d.ok(UNICODE[lang])
    assert cell.out == "héllo ✓ 世界 🎉\n".encode()
    if lang != "bash":
        assert "héllo ✓ 世界 🎉" in text(cell)


ONE_MIB = {
    "python": "import sys\nsys.stdout.write('x' * (1 << 20))",
    "node": "process.stdout.write('x'.repeat(1 << 20)); undefined",
    "bash": "head -c 1048576 /dev/zero | tr '\\0' x",
}


@pytest.mark.parametrize("lang", LANGS)
def test_one_mib_of_output_arrives_whole(start, lang):
    d = start(lang)
    cell = d.ok(ONE_MIB[lang], timeout=20)
    assert cell.out == b"x" * MiB
    d.ping()


LOOPS = {
    "python": ["import time\nwhile True: time.sleep(0.1)", "while True: pass"],
    "node": ["while (true) {}", "for (;;) { Math.random(); }"],
    "bash": ["while true; do :; done", "sleep 100", "for i in 1 2 3; do sleep 100; done; echo after"],
}
STATE = {
    "python": ("kept = 41", "kept + 1", lambda c: text(c) == "42"),
    "node": ("let kept = 41", "kept + 1", lambda c: text(c) == "42"),
    "bash": ("kept=41", "echo $((kept + 1))", lambda c: c.out == b"42\n"),
}


@pytest.mark.parametrize("sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["default", "ignored"])
@pytest.mark.parametrize("lang,loop", [(lang, loop) for lang in LANGS for loop in LOOPS[lang]])
def test_sigint_interrupts_the_cell_and_keeps_state(start, lang, loop, sigint):
    """`sigint`: the disposition the driver inherits; an ignored SIGINT must
    not make the driver uninterruptible."""
    d = start(lang, sigint)
    setup, check, good = STATE[lang]
    d.ok(setup)
    cid = d.start_cell(loop)
    time.sleep(0.5)
    t0 = time.monotonic()
    d.sigint()
    cell = d.finish_cell(cid, timeout=2)
    assert time.monotonic() - t0 < 2
    assert cell.status == "interrupted", cell.events
    assert b"after" not in cell.out
    if lang == "python":
        assert cell.error["name"] == "KeyboardInterrupt"
        assert "KeyboardInterrupt" in cell.err.decode()
    elif lang == "bash":
        assert cell.done["exit_code"] == 130
    after = d.ok(check)
    assert good(after), after.events


@pytest.mark.parametrize("lang", LANGS)
def test_sigint_between_cells_is_ignored(start, lang):
    d = start(lang)
    setup, check, good = STATE[lang]
    d.ok(setup)
    d.sigint()
    time.sleep(0.3)
    assert d.proc.poll() is None
    d.ping()
    assert good(d.ok(check))


@pytest.mark.parametrize("lang", LANGS)
def test_shutdown_ends_the_driver(start, lang):
    d = start(lang)
    d.next_id += 1
    d.send({"type": "shutdown", "id": d.next_id})
    assert d.wait_exit() == 0


@pytest.mark.parametrize("lang", LANGS)
def test_closed_request_pipe_ends_the_driver(start, lang):
    d = start(lang)
    os.close(d.req_w)
    assert d.wait_exit() == 0


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("garbage", [b"abc\n{}", b"2\n[]", b'12\n{"type":"x"}'])
def test_malformed_frame_is_fatal(start, lang, garbage):
    d = start(lang)
    os.write(d.req_w, garbage)
    assert d.wait_exit() != 0


FD4_IN_CHILD = {
    "python": "import subprocess\nprint(subprocess.run('ls /proc/self/fd', shell=True, "
              "close_fds=False, capture_output=True, text=True).stdout.split())",
    "node": "console.log(require('child_process').execSync('ls /proc/self/fd').toString()"
            ".split('\\n').filter(Boolean))",
    "bash": "ls /proc/self/fd | tr '\\n' ' '",
}


@pytest.mark.parametrize("lang", LANGS)
def test_processes_a_cell_starts_do_not_get_the_protocol_pipes(start, lang):
    """A child holding fd 4 would keep the event pipe open after the driver
    died; one reading fd 3 could steal requests. (fd 3 inside the child is
    ls's own directory handle, hence: no fd 4.)"""
    d = start(lang)
    out = d.ok(FD4_IN_CHILD[lang]).out.decode()
    assert re.search(r"\b0\b", out) and not re.search(r"\b4\b", out), out


HUGE = {  # an error with a 40 MiB message, then a value whose text is 3 MiB
    "python": ("raise ValueError('<' + 'x' * (40 << 20) + '>')", "'<' + 'y' * (3 << 20) + '>'"),
    # (util.inspect shortens a long string itself; a custom inspection does not)
    "node": ("throw new Error('<' + 'x'.repeat(40 << 20) + '>')",
             "({ [require('util').inspect.custom]: () => '<' + 'y'.repeat(3 << 20) + '>' })"),
}


@pytest.mark.parametrize("lang", HUGE)
def test_long_error_and_result_texts_are_cut_in_the_middle(start, lang):
    # docs/session-protocol.md: over 2 MiB, cut in the middle. Whole, the
    # error event would be over the 64 MiB frame limit (message + traceback).
    d = start(lang)
    d.ok(STATE[lang][0])
    raise_huge, huge_value = HUGE[lang]
    cell = d.run(raise_huge, timeout=60)
    assert cell.status == "error"
    for key in ("value", "traceback"):
        t = cell.error[key]
        assert len(t) < 2 * MiB + 100, (key, len(t))
        assert re.search(r"x\n\.\.\. \[\d+ characters\] \.\.\.\nx", t), key
        assert t.rstrip().endswith("x>" if key == "value" else t.rstrip()[-1]), key
    assert cell.error["value"].startswith("<x")
    shown = text(d.ok(huge_value, timeout=60))
    shown = shown.strip("'")  # Python's repr of a str
    assert len(shown) < 2 * MiB + 100 and shown.startswith("<y") and shown.endswith("y>"), len(shown)
    assert re.search(r"y\n\.\.\. \[\d+ characters\] \.\.\.\ny", shown)
    assert STATE[lang][2](d.ok(STATE[lang][1]))


# ---- python ---------------------------------------------------------------

def test_python_state_persists(start):
    d = start("python")
    assert d.ok("x = 1").result is None
    assert text(d.ok("x + 1")) == "2"
    d.ok("import math\ndef area(r):\n    return math.pi * r * r")
    assert text(d.ok("round(area(1), 5)")) == "3.14159"


def test_python_none_and_semicolon_give_no_result(start):
    d = start("python")
    assert d.ok("None").result is None
    assert d.ok("print('x')").result is None
    assert d.ok("1 + 1;").result is None
    assert d.ok("1 + 1  # comment").result == {"text/plain": "2"}


def test_python_error_names_the_exception_and_shows_the_cell_source(start):
    d = start("python")
    d.ok("kept = 'earlier'")
    cell = d.run("def f(n):\n    return n / 0\n\nf(5)")
    assert cell.status == "error"
    err = cell.error
    assert err["name"] == "ZeroDivisionError"
    assert err["value"] == "division by zero"
    tb = err["traceback"]
    assert tb.startswith("Traceback (most recent call last):")
    assert 'File "<cell-' in tb and "line 4" in tb and "line 2, in f" in tb
    assert "return n / 0" in tb  # the source line, through linecache
    assert "driver.py" not in tb
    assert tb in cell.err.decode()  # printed on the cell's stderr too
    # the session goes on: the fixed cell sees the earlier state
    assert text(d.ok("def f(n):\n    return n / 1\n(f(4), kept)")) == "(4.0, 'earlier')"


def test_python_syntax_error(start):
    d = start("python")
    cell = d.run("x = = 2")
    assert cell.status == "error"
    assert cell.error["name"] == "SyntaxError"
    assert "x = = 2" in cell.error["traceback"]
    assert text(d.ok("3")) == "3"


def test_python_sys_exit_ends_the_cell_not_the_session(start):
    d = start("python")
    d.ok("kept = 7")
    cell = d.run("import sys\nprint('before')\nsys.exit(3)\nprint('after')")
    assert cell.status == "error"
    assert cell.error["name"] == "SystemExit"
    assert cell.error["value"] == "3"
    assert cell.out == b"before\n"
    assert d.proc.poll() is None
    d.ping()
    assert text(d.ok("kept")) == "7"


def test_python_interrupt_caught_by_the_cell_is_its_own_business(start):
    d = start("python")
    cid = d.start_cell("import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n"
                       "    print('caught')\n'finished'")
    time.sleep(0.5)
    d.sigint()
    cell = d.finish_cell(cid, timeout=2)
    assert cell.status == "ok"
    assert cell.out == b"caught\n" and text(cell) == "'finished'"


def test_python_interrupt_never_cuts_an_event_frame(start):
    """The SIGINT lands while the driver is blocked writing a display frame
    (nobody reads the event pipe during the sleep): the frame must still
    come out whole, and the interrupt take effect after it."""
    d = start("python")
    d.ok("kept = 1")
    cid = d.start_cell("while True:\n    display('x' * 300000)")
    time.sleep(0.5)
    d.sigint()
    cell = d.finish_cell(cid, timeout=5)  # every frame is parsed and checked
    assert cell.status == "interrupted"
    assert cell.error["name"] == "KeyboardInterrupt"
    assert all(e["mime"]["text/plain"] == "'" + "x" * 300000 + "'" for e in cell.of("display"))
    assert text(d.ok("kept")) == "1"


def test_python_dataframe_result_has_html_table(start):
    d = start("python")
    cell = d.ok("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\n"
                "df.head()")
    mime = cell.result
    assert "<table" in mime["text/html"] and "<td>y</td>" in mime["text/html"]
    assert "a  b" in mime["text/plain"]


def png_of(display):
    data = base64.b64decode(display["mime"]["image/png"], validate=True)
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 2000, len(data)  # a rendered plot, not an empty image
    assert display["mime"]["text/plain"].startswith("<Figure size")
    return data


def test_python_figure_left_open_comes_back_as_png(start):
    d = start("python")
    cell = d.ok("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nNone")
    (display,) = cell.of("display")
    png_of(display)
    # sent once: the figure was closed at the end of the cell
    assert d.ok("plt.get_fignums()").result["text/plain"] == "[]"


def test_python_plt_show_sends_each_figure_once(start):
    d = start("python")
    cell = d.ok("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n"
                "print('after show')\nplt.figure()\nplt.bar([1, 2], [3, 4])\nNone")
    first, second = cell.of("display")
    assert png_of(first) != png_of(second)
    assert cell.out == b"after show\n"


def test_python_figure_as_last_value_is_the_result(start):
    d = start("python")
    cell = d.ok("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                "ax.plot([0, 1])\nfig")
    assert cell.of("display") == []  # not a second time as a display
    png_of(cell.of("result")[0])


def test_python_matplotlib_backend_is_ours_and_does_not_leak(start):
    d = start("python")
    cell = d.ok("import os, subprocess, matplotlib\n"
                "child = subprocess.run(['/usr/bin/python3', '-c', 'import matplotlib.pyplot as p; "
                "print(p.get_backend())'], capture_output=True, text=True)\n"
                "(matplotlib.get_backend(), os.environ.get('MPLBACKEND'), child.stdout.strip(), "
                "child.returncode)")
    assert text(cell) == "('module://corral_mpl', None, 'agg', 0)"


def test_python_repr_methods_give_their_mime_types(start):
    d = start("python")
    d.ok("class Rich:\n"
         "    def _repr_markdown_(self): return '**bold**'\n"
         "    def _repr_svg_(self): return '<svg xmlns=\"http://www.w3.org/2000/svg\"/>'\n"
         "    def _repr_json_(self): return {'a': [1, 2]}\n"
         "    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\n-bytes'\n"
         "    def _repr_html_(self): return None\n"
         "    def _repr_latex_(self): raise ValueError('broken')\n"
         "    def __repr__(self): return 'Rich()'\n")
    mime = d.ok("Rich()").result
    assert mime["text/markdown"] == "**bold**"
    assert mime["image/svg+xml"].startswith("<svg")
    assert json.loads(mime["application/json"]) == {"a": [1, 2]}
    assert base64.b64decode(mime["image/png"]) == PNG_MAGIC + b"-bytes"
    assert mime["text/plain"] == "Rich()"
    assert "text/html" not in mime and "text/latex" not in mime
    # the class itself is not rendered through its unbound methods
    assert set(d.ok("Rich").result) == {"text/plain"}


def test_python_display_helper_sends_displays_in_order(start):
    d = start("python")
    cell = d.ok("class H:\n    def _repr_html_(self): return '<b>h</b>'\n"
                "display(1)\nprint('between')\ndisplay(H(), 'two')\n3")
    assert [e["mime"] for e in cell.of("display")] == [
        {"text/plain": "1"}, {"text/html": "<b>h</b>", "text/plain": cell.of("display")[1]["mime"]["text/plain"]},
        {"text/plain": "'two'"}]
    assert text(cell) == "3"
    assert [e["type"] for e in cell.events] == ["display", "display", "display", "result", "done"]


def test_python_top_level_await(start):
    d = start("python")
    d.ok("import asyncio\nasync def twice(x):\n    await asyncio.sleep(0.01)\n    return 2 * x")
    assert text(d.ok("v = await twice(21)\nv")) == "42"
    assert text(d.ok("v")) == "42"


def test_python_classes_from_cells_pickle(start):
    d = start("python")
    d.ok("import pickle\nclass Point:\n    def __init__(self, x): self.x = x")
    assert text(d.ok("pickle.loads(pickle.dumps(Point(3))).x")) == "3"


def test_python_forked_child_does_not_become_a_second_driver(start):
    d = start("python")
    cell = d.ok("import os\npid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\npid > 0")
    assert text(cell) == "True"
    assert len(cell.of("result")) == 1
    d.ping()
    d.ping()


def test_python_thread_output_and_input_eof(start):
    d = start("python")
    cell = d.ok("import threading\nt = threading.Thread(target=print, args=('from thread',))\n"
                "t.start(); t.join()\ntry:\n    input()\nexcept EOFError:\n    print('eof')")
    assert cell.out == b"from thread\neof\n"


# Exceptions that raise again when the driver reads them (__str__, a
# property the traceback module reads, a metaclass's __name__). Before the
# driver guarded its reads, reporting them raised inside the driver, which
# died with the session's state. (cell, expected value)
PY_HOSTILE_RAISES = {
    "str-raises-SystemExit": ("class E(Exception):\n    def __str__(self): raise SystemExit(3)\n"
                              "raise E('x')", "<E; its str() failed>"),
    "str-raises-KeyboardInterrupt": ("class E(Exception):\n    def __str__(self): raise KeyboardInterrupt\n"
                                     "raise E('x')", "<E; its str() failed>"),
    "metaclass-name": ("class M(type):\n    @property\n    def __name__(cls): raise RuntimeError('no')\n"
                       "class E(Exception, metaclass=M): pass\nraise E('x')", "x"),
    "notes-property": ("class E(Exception):\n    @property\n    def __notes__(self): raise RuntimeError('no')\n"
                       "raise E('x')", "x"),
    "cause-property": ("class E(Exception):\n    @property\n    def __cause__(self): raise RuntimeError('no')\n"
                       "raise E('x')", "x"),
    "traceback-property": ("class E(Exception):\n    @property\n"
                           "    def __traceback__(self): raise RuntimeError('no')\nraise E('x')", "x"),
    "class-property": ("class E(Exception):\n    @property\n    def __class__(self): raise RuntimeError('no')\n"
                       "raise E('x')", "x"),
    "group-exceptions-property": ("class E(ExceptionGroup):\n    @property\n"
                                  "    def exceptions(self): raise RuntimeError('no')\n"
                                  "raise E('x', [ValueError(1)])", "x (1 sub-exception)"),
    "syntax-error-lineno-property": ("class E(SyntaxError):\n    @property\n"
                                     "    def lineno(self): raise RuntimeError('no')\nraise E('x')", "x"),
}


@pytest.mark.parametrize("case", PY_HOSTILE_RAISES)
def test_python_error_that_cannot_be_read_still_ends_the_cell(start, case):
    code, value = PY_HOSTILE_RAISES[case]
    d = start("python")
    d.ok("kept = 41")
    cell = d.run(code)
    assert cell.status == "error", cell.events
    assert (cell.error["name"], cell.error["value"]) == ("E", value), cell.error
    # the frames are kept even when the exception itself cannot be shown
    assert "<cell-" in cell.error["traceback"] and "E: " in cell.error["traceback"], cell.error
    assert "E: " in cell.err.decode()
    d.ping()
    assert text(d.ok("kept + 1")) == "42"


def test_python_stdout_whose_flush_raises_does_not_end_the_session(start):
    # the driver flushes the cell's streams before "done"
    d = start("python")
    d.ok("kept = 41")
    d.ok("import sys\nclass Out:\n    def write(self, s): return len(s)\n"
         "    def flush(self): raise SystemExit('no flush')\nsys.stdout = Out()")
    d.ping()
    assert text(d.ok("kept + 1")) == "42"


# Values whose display runs code that raises. What fails costs its MIME
# type, never the cell. (setup, expected text/plain)
NO_NAME = "class M(type):\n    @property\n    def __name__(cls): raise RuntimeError('no name')\n"
PY_HOSTILE_VALUES = {
    "repr-and-metaclass-name": (NO_NAME + "class R(metaclass=M):\n"
                                "    def __repr__(self): raise RuntimeError('no repr')\n",
                                "<R object; its repr failed: RuntimeError('no repr')>"),
    "repr-raises-unprintable": ("class X(Exception):\n    def __repr__(self): raise X()\n"
                                "class R:\n    def __repr__(self): raise X()\n",
                                "<R object; its repr failed: <an exception that cannot be displayed>>"),
    "class-property": ("class R:\n    @property\n    def __class__(self): raise RuntimeError('no')\n"
                       "    def __repr__(self): return 'R!'\n", "R!"),
    "mimebundle-key-str-raises": ("class K:\n    def __str__(self): raise RuntimeError('no')\n"
                                  "class R:\n    def _repr_mimebundle_(self): return {K(): 'x'}\n"
                                  "    def __repr__(self): return 'R!'\n", "R!"),
    "repr-html-tuple-len-raises": ("class T(tuple):\n    def __len__(self): raise RuntimeError('no')\n"
                                   "class R:\n    def _repr_html_(self): return T(('a', 'b'))\n"
                                   "    def __repr__(self): return 'R!'\n", "R!"),
}


@pytest.mark.parametrize("shown_by", ["result", "display"])
@pytest.mark.parametrize("case", PY_HOSTILE_VALUES)
def test_python_value_whose_display_raises_is_shown_as_far_as_it_can(start, case, shown_by):
    setup, plain = PY_HOSTILE_VALUES[case]
    d = start("python")
    d.ok("kept = 41")
    d.ok(setup)
    cell = d.ok("R()" if shown_by == "result" else "display(R())")
    mime = cell.result if shown_by == "result" else cell.of("display")[0]["mime"]
    assert mime == {"text/plain": plain}, cell.events
    d.ping()
    assert text(d.ok("kept + 1")) == "42"


# ---- node -----------------------------------------------------------------

def test_node_declarations_persist(start):
    d = start("node")
    d.ok("let a = 1; const b = 2; var c = 3; function add(x, y) { return x + y }\n"
         "class Box { constructor(v) { this.v = v } }")
    assert text(d.ok("add(a, b) + c + new Box(4).v")) == "10"
    # declared again, as when a cell is fixed and run again
    d.ok("let a = 10; class Box { constructor(v) { this.v = -v } }")
    assert text(d.ok("a + new Box(1).v")) == "9"


def test_node_completion_value_is_the_result(start):
    d = start("node")
    assert text(d.ok("1 + 1")) == "2"
    assert text(d.ok("({ a: [1, 'two'] })")) == "{ a: [ 1, 'two' ] }"
    assert text(d.ok("'str'")) == "'str'"
    assert d.ok("undefined").result is None
    assert d.ok("let q = 5").result is None
    assert text(d.ok("Promise.resolve(7)")) == "7"  # a promise is awaited


def test_node_top_level_await(start):
    d = start("node")
    assert text(d.ok("await new Promise(r => setTimeout(() => r(5), 10))")) == "5"
    d.ok("const first = await Promise.resolve(1)\nlet second = first + 1")
    assert text(d.ok("first + second")) == "3"


def test_node_console_goes_to_the_streams(start):
    d = start("node")
    cell = d.ok("console.log('a', {b: 1}); console.error('oops'); 5")
    assert cell.out == b"a { b: 1 }\n"
    assert cell.err == b"oops\n"
    assert text(cell) == "5"


def test_node_error_event_and_session_goes_on(start):
    d = start("node")
    d.ok("let kept = 'earlier'")
    cell = d.run("function f(o) {\n  return o.missing.field;\n}\nf({})")
    assert cell.status == "error"
    err = cell.error
    assert err["name"] == "TypeError"
    assert "reading 'field'" in err["value"]
    assert "<cell-" in err["traceback"] and "driver.js" not in err["traceback"]
    assert "return o.missing.field;" in err["traceback"]
    assert "TypeError" in cell.err.decode()
    assert text(d.ok("kept")) == "'earlier'"


def test_node_lone_surrogates_become_replacement_characters(start):
    # JSON.stringify would write them as \ud800 escapes, which the
    # supervisor's JSON parser refuses (it then kills the driver).
    d = start("node")
    cell = d.run("throw new Error('a\\ud800b\\udc00c')")
    assert cell.status == "error" and cell.error["value"] == "a\ufffdb\ufffdc", cell.error
    assert text(d.ok("'x\\ud83d\\ude00y'")) == "'x\U0001F600y'"   # a real pair stays


def test_node_cell_globals_do_not_replace_the_drivers_own(start):
    # A common idiom makes setTimeout/setImmediate globals of the promise
    # kind; the driver's own waiting must not use them.
    d = start("node")
    d.ok("const { setTimeout, setImmediate } = require('timers/promises')")
    d.ok("await setTimeout(5)")
    cell = d.ok("40 + 2")
    assert text(cell) == "42"
    d.ping()


def test_node_syntax_error(start):
    d = start("node")
    cell = d.run("let = = 2")
    assert cell.status == "error" and cell.error["name"] == "SyntaxError"
    assert text(d.ok("3")) == "3"


def test_node_unhandled_rejection_is_the_cells_error(start):
    d = start("node")
    cell = d.run("Promise.reject(new RangeError('nobody caught me')); 1")
    assert cell.status == "error"
    assert cell.error["name"] == "RangeError" and cell.error["value"] == "nobody caught me"
    cell = d.run("setTimeout(() => { throw new Error('from a timer') }, 5);\n"
                 "await new Promise(r => setTimeout(r, 5000))")
    assert cell.status == "error" and cell.error["value"] == "from a timer"
    d.ping()


def test_node_require_builtin_modules(start):
    d = start("node")
    assert text(d.ok("const path = require('path'); path.join('a', 'b')")) == "'a/b'"
    assert text(d.ok("require('node:crypto').createHash('sha1').update('x').digest('hex')")) == \
        "'11f6ad8ec52a2984abaafd7c3b516503785c2072'"
    assert text(d.ok("(await import('node:os')).EOL")) == "'\\n'"
    assert d.ok("1").err == b""  # no experimental-feature warning


def test_node_interrupt_while_awaiting(start):
    d = start("node")
    d.ok("let kept = 3")
    cid = d.start_cell("await new Promise(r => setTimeout(r, 100000))")
    time.sleep(0.5)
    d.sigint()
    assert d.finish_cell(cid, timeout=2).status == "interrupted"
    assert text(d.ok("kept")) == "3"


def test_node_process_exit_ends_the_cell_not_the_session(start):
    d = start("node")
    d.ok("let kept = 1")
    cell = d.run("console.log('before'); process.exit(3); console.log('after')")
    assert cell.status == "error" and cell.error["name"] == "ProcessExit"
    assert cell.out == b"before\n"
    assert text(d.ok("kept")) == "1"


# Values a cell throws that throw again when the driver reads them (a
# getter, a Proxy trap, toString/Symbol.toPrimitive, an inspect method, a
# revoked Proxy that throws on any access). Before the driver guarded its
# reads, reporting them threw inside the driver: no "done", and no request
# was served after it (the supervisor would have killed the driver, and the
# session's state with it). (cell, expected name, expected value)
REVOKED = "const r = Proxy.revocable({}, {}); r.revoke(); "
NODE_HOSTILE_THROWS = {
    "name-getter": ("const e = new Error('x');\n"
                    "Object.defineProperty(e, 'name', { get() { throw new Error('no') } }); throw e",
                    "Error", "x"),
    "revoked-proxy": (REVOKED + "throw r.proxy", "Uncaught", "<Revoked Proxy>"),
    "stack-getter": ("const e = new Error('x');\n"
                     "Object.defineProperty(e, 'stack', { get() { throw new Error('no') } }); throw e",
                     "Error", "x"),
    "message-getter": ("const e = new Error('x');\n"
                       "Object.defineProperty(e, 'message', { get() { throw new Error('no') } }); throw e",
                       "Error", "<an exception that cannot be displayed>"),
    "message-toString": ("const e = new Error('x'); e.message = { toString() { throw new Error('no') } }; throw e",
                         "Error", "<an exception that cannot be displayed>"),
    "name-toPrimitive": ("const e = new Error('x');\n"
                         "e.name = { [Symbol.toPrimitive]() { throw new Error('no') } }; throw e",
                         "Error", "x"),
    "code-getter": ("const e = new Error('x');\n"
                    "Object.defineProperty(e, 'code', { get() { throw new Error('no') }, enumerable: true });\n"
                    "throw e", "Error", "x"),
    "stack-getter-on-object": ("throw { get stack() { throw new Error('no') } }", "Uncaught", "{ stack: [Getter] }"),
    "inspect-custom": ("throw { [require('util').inspect.custom]() { throw new Error('no') } }",
                       "Uncaught", "<an exception that cannot be displayed>"),
    "proxy-traps": ("throw new Proxy(new Error('x'), { get() { throw new Error('trap') } })",
                    "Error", "<an exception that cannot be displayed>"),
    "rejected-with-revoked-proxy": (REVOKED + "Promise.reject(r.proxy)", "Uncaught", "<Revoked Proxy>"),
    "revoked-proxy-from-a-timer": (REVOKED + "setTimeout(() => { throw r.proxy }, 1);\n"
                                   "await new Promise((done) => setTimeout(done, 5000))",
                                   "Uncaught", "<Revoked Proxy>"),
}


@pytest.mark.parametrize("case", NODE_HOSTILE_THROWS)
def test_node_error_that_cannot_be_read_still_ends_the_cell(start, case):
    code, name, value = NODE_HOSTILE_THROWS[case]
    d = start("node")
    d.ok("let kept = 41")
    cell = d.run(code)
    assert cell.status == "error", cell.events
    assert (cell.error["name"], cell.error["value"]) == (name, value), cell.error
    assert value in cell.err.decode()  # printed to the cell's stderr too
    d.ping()
    assert text(d.ok("kept + 1")) == "42"


@pytest.mark.parametrize("thrown", ["new Error('no')", "r.proxy"])
def test_node_value_whose_inspection_throws_is_shown_as_such(start, thrown):
    # like a Python __repr__ that raises: the value loses its display, the
    # cell does not fail
    d = start("node")
    d.ok("let kept = 41")
    cell = d.ok(REVOKED + f"({{ [require('util').inspect.custom]() {{ throw {thrown} }} }})")
    assert text(cell).startswith("<a value that cannot be displayed: util.inspect threw "), text(cell)
    d.ping()
    assert text(d.ok("kept + 1")) == "42"


def test_node_cell_that_breaks_process_stderr_still_gets_its_error(start):
    # the driver prints the traceback to process.stderr before the event
    d = start("node")
    d.ok("let kept = 41")
    cell = d.run("process.stderr.write = () => { throw new Error('no') }; throw new Error('x')")
    assert cell.status == "error" and cell.error["value"] == "x", cell.events
    d.ping()
    assert text(d.ok("kept + 1")) == "42"


def test_node_event_that_cannot_be_sent_does_not_stop_the_driver(start):
    # A stand-in for any failure inside the driver's protocol code: the
    # cell's own JSON.stringify (the driver uses the global JSON) throws
    # once, when the driver writes the cell's error event. The cell still
    # ends with "done", and the requests after it are served.
    d = start("node")
    d.ok("let kept = 41")
    cell = d.run("const real = JSON.stringify;\n"
                 "JSON.stringify = function () { JSON.stringify = real; throw new Error('once') };\n"
                 "throw new Error('x')")
    assert cell.status == "error" and cell.of("error") == [], cell.events
    d.ping()
    d._drain(d.err_fd)  # the driver says why on stderr (synchronous for a pipe), before the pong
    assert b"corral node driver: request %d: once" % cell.done["id"] in d.err, d.err
    assert text(d.ok("kept + 1")) == "42"


# ---- bash -----------------------------------------------------------------

def test_bash_state_persists(start, tmp_path):
    d = start("bash")
    (tmp_path / "sub").mkdir()
    cell = d.ok("greeting=hello\ngreet() { echo \"$greeting, $1\"; }\ndeclare -a list=(a b c)\n"
                "cd sub")
    assert cell.done["exit_code"] == 0 and cell.of("result") == []
    cell = d.ok("greet world; echo ${#list[@]}; pwd")
    assert cell.out == f"hello, world\n3\n{tmp_path / 'sub'}\n".encode()


def test_bash_exit_status_is_reported(start):
    d = start("bash")
    cell = d.run("echo partial; (exit 7)")
    assert (cell.status, cell.done["exit_code"]) == ("error", 7)
    assert cell.out == b"partial\n" and cell.of("error") == []
    cell = d.run("no_such_command_here")
    assert (cell.status, cell.done["exit_code"]) == ("error", 127)
    assert b"not found" in cell.err
    assert d.ok("true").done["exit_code"] == 0


def test_bash_syntax_error_keeps_the_shell(start):
    d = start("bash")
    d.ok("kept=1")
    cell = d.run("if then fi")
    assert cell.status == "error" and cell.done["exit_code"] == 2
    assert d.ok("echo $kept").out == b"1\n"


def test_bash_stray_break_ends_only_the_cell(start):
    d = start("bash")
    cell = d.ok("echo one; break; echo two")
    assert cell.out == b"one\n"
    d.ping()


def test_bash_user_options_do_not_break_the_driver(start):
    d = start("bash")
    d.ok("set -u -o pipefail")
    cell = d.run("echo $undefined_variable")
    assert cell.status == "error" and b"unbound variable" in cell.err
    d.ok("set +u")
    d.ping()
    d.ok("set -x")
    cell = d.ok("echo traced")
    assert cell.out == b"traced\n" and b"echo traced" in cell.err
    assert b"__corral" not in cell.err  # the driver's own commands are not traced
    d.ok("set +x")


def test_bash_exit_ends_the_driver(start):
    """Documented: `exit N` ends the shell; the supervisor starts a new one."""
    d = start("bash")
    d.start_cell("exit 3")
    assert d.wait_exit() == 3

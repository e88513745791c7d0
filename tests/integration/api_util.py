"""Helpers for the HTTP API tests (tests/integration/test_api.py): start
`corral serve` on a free loopback port, talk to it with the standard library
only (http.client), read NDJSON streams line by line as they arrive, and stop
the server checking that it exits 0 and leaves no process and no cgroup
behind.

    srv = Server(["--max-concurrent", "1"]).start()
    status, headers, body = srv.json("POST", "/v1/execute", {"code": "print(1)"})
    with srv.stream("/v1/execute", {"code": "print(1)"}) as st:
        for t, obj in st: ...
    srv.stop()
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import OUR_CORRAL_PIDS, corral_path, free_port

CGROUP_ROOT = "/sys/fs/cgroup"
READY_LINE = b"corral serve: listening on"
STATUSES = {"ok", "error", "timeout", "memory_limit", "output_limit",
            "wrong_answer", "interrupted", "sandbox_error"}


# ------------------------------------------------------------------ /proc views

def proc_stat(pid):
    """(ppid, starttime) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[1]), rest[19]
    except (OSError, IndexError, ValueError):
        return None


def describe(pid):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        cmd = "?"
    st = proc_stat(pid)
    return f"pid {pid} ppid={st[0] if st else '?'} cmd={cmd!r}"


def descendants(root: int) -> dict:
    """{pid: starttime} of every process whose parent chain leads to root."""
    parent, start = {}, {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            st = proc_stat(p)
            if st:
                parent[int(p)] = st[0]
                start[int(p)] = st[1]
    children = {}
    for pid, pp in parent.items():
        children.setdefault(pp, []).append(pid)
    out, todo = {}, [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out[c] = start[c]
                todo.append(c)
    return out


def alive(pid: int, starttime: str) -> bool:
    st = proc_stat(pid)
    return st is not None and st[1] == starttime


def corral_cgroups_of(pid: int):
    """cgroup directories `corral-PID-N` (src/sandbox/cgroup.c) of one server,
    under every hierarchy of /sys/fs/cgroup."""
    found = []
    prefix = f"corral-{pid}-"
    if not os.path.isdir(CGROUP_ROOT):
        return found
    for ctrl in sorted(os.listdir(CGROUP_ROOT)):
        root = os.path.join(CGROUP_ROOT, ctrl)
        if os.path.islink(root) or not os.path.isdir(root):
            continue
        for d, dirs, _ in os.walk(root):
            for name in dirs:
                if name.startswith(prefix):
                    found.append(os.path.join(d, name))
    return found


# ------------------------------------------------------------------- results

def check_result(r, why=""):
    """What every result object (docs/result.md) must satisfy."""
    ctx = f"{why}\nresult={json.dumps(r)[:3000] if isinstance(r, dict) else r!r}"
    assert isinstance(r, dict), ctx
    assert r.get("status") in STATUSES, "unknown status" + ctx
    for k in ("stdout", "stderr"):
        assert isinstance(r.get(k), str), f"{k} is not a string" + ctx
    for k in ("stdout_truncated", "stderr_truncated"):
        assert isinstance(r.get(k), bool), f"{k} is not a bool" + ctx
    for k in ("stdout_dropped_bytes", "stderr_dropped_bytes", "memory_peak_bytes"):
        assert isinstance(r.get(k), int) and not isinstance(r.get(k), bool) and r[k] >= 0, k + ctx
    for k in ("duration_ms", "cpu_ms"):
        assert isinstance(r.get(k), (int, float)) and r[k] >= 0, k + ctx
    assert r.get("exit_code") is None or isinstance(r["exit_code"], int), ctx
    assert r.get("signal") is None or isinstance(r["signal"], int), ctx
    assert isinstance(r.get("results"), list), ctx
    assert isinstance(r.get("files"), list), ctx
    assert isinstance(r.get("limits"), dict), ctx
    assert r.get("language") in ("python", "node", "bash"), ctx
    if r["status"] == "ok":
        assert r.get("error") is None, "status ok with an error object" + ctx
    elif r["status"] not in ("interrupted",):
        assert isinstance(r.get("error"), dict), f"status {r['status']} without an error object" + ctx
    return r


def check_error(status, body, want_status, want_code=None, ctx=""):
    """An error response: the status and {"error": {"code", "message"}}."""
    msg = f": {ctx}\n  got status {status}, body {body!r:.1500}"
    assert status == want_status, f"expected {want_status}" + msg
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), "error body is not JSON {error: {...}}" + msg
    err = body["error"]
    assert isinstance(err.get("code"), str) and err["code"], "error.code missing" + msg
    assert isinstance(err.get("message"), str) and err["message"], "error.message missing" + msg
    if want_code is not None:
        assert err["code"] == want_code, f"expected error code {want_code!r}" + msg
    return err


# -------------------------------------------------------------------- stream

class Stream:
    """An NDJSON response read line by line: iterating yields (arrival_time,
    obj) with arrival_time from time.monotonic() when the line was read.
    `close()` drops the connection at once (shutdown + close), as a client
    that goes away would."""

    def __init__(self, conn, sock, resp, t0):
        self.conn, self.sock, self.resp, self.t0 = conn, sock, resp, t0
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}
        self.lines = []          # every (t, obj) read so far
        self.raw_lines = []

    def body_json(self):
        """For a non-200 answer: the JSON error body."""
        data = self.resp.read()
        try:
            return json.loads(data)
        except ValueError:
            return data

    def __iter__(self):
        while True:
            line = self.resp.readline()
            t = time.monotonic()
            if not line:
                return
            self.raw_lines.append(line)
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                pytest.fail(f"stream line is not JSON: {line[:500]!r} (after {len(self.lines)} lines)")
            assert isinstance(obj, dict) and isinstance(obj.get("type"), str), \
                f"stream line is not an object with a type: {line[:500]!r}"
            self.lines.append((t, obj))
            yield t, obj

    def read_all(self):
        """Every remaining line; returns the list of (t, obj) of the whole stream."""
        for _ in self:
            pass
        return self.lines

    def result(self):
        """Reads to the end; the last line must be the result; returns it."""
        lines = self.read_all()
        assert lines, f"empty stream (status {self.status}, headers {self.headers})"
        t, last = lines[-1]
        assert last.get("type") == "result", f"the last line is not the result: {last!r:.1000}"
        for _, o in lines[:-1]:
            assert o.get("type") != "result", "a result line before the last line"
        return last["result"]

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.resp.close()
        except Exception:
            pass
        self.conn.close()
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


# -------------------------------------------------------------------- server

class Server:
    def __init__(self, extra_args=(), env=None, listen=None, name="corral serve"):
        self.extra_args = [str(a) for a in extra_args]
        self.env = env
        self.port = free_port()
        self.listen = listen or f"127.0.0.1:{self.port}"
        self.host = "127.0.0.1"
        self.name = name
        self.proc = None
        self.key = None               # default bearer key for requests
        self._err = bytearray()
        self._err_lock = threading.Lock()
        self._ready = threading.Event()
        self._seen = {}               # every descendant ever seen: pid -> starttime
        self._stop_watch = threading.Event()
        self.stopped = False

    # ---- life cycle

    def start(self, timeout=20.0):
        cmd = [corral_path(), "serve", "--listen", self.listen] + self.extra_args
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=self.env)
        OUR_CORRAL_PIDS.add(self.proc.pid)
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                rc = self.proc.poll()
                if rc is None:
                    self.proc.kill()
                    self.proc.wait()
                time.sleep(0.1)
                pytest.fail(f"{self.name} ({' '.join(cmd)}) did not print {READY_LINE.decode()!r} within "
                            f"{timeout} s (exit code {rc})\nstderr:\n{self.stderr_text()[-4000:]}", pytrace=False)
        threading.Thread(target=self._watch, daemon=True).start()
        return self

    def _drain_stderr(self):
        for line in iter(self.proc.stderr.readline, b""):
            with self._err_lock:
                self._err += line
                if len(self._err) > (4 << 20):          # keep the last 4 MiB
                    del self._err[:len(self._err) - (4 << 20)]
            if READY_LINE in line:
                self._ready.set()

    def _watch(self):
        """Records every descendant of the server while it runs, so that one
        that outlives it (reparented to init) can still be found by pid."""
        while not self._stop_watch.is_set() and self.proc.poll() is None:
            try:
                self._seen.update(descendants(self.proc.pid))
            except Exception:
                pass
            self._stop_watch.wait(0.2)

    @property
    def pid(self):
        return self.proc.pid

    def stderr_text(self):
        with self._err_lock:
            return bytes(self._err).decode(errors="replace")

    def sandbox_pids(self):
        """Descendants of the server now."""
        d = descendants(self.proc.pid)
        self._seen.update(d)
        return d

    def sigterm(self):
        self._seen.update(descendants(self.proc.pid))
        self.proc.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout=20.0):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=20.0, check=True):
        """SIGTERM, wait, then: exit code 0, no process it started alive, no
        corral-PID-* cgroup left. Returns a list of problems (asserted empty
        when check)."""
        if self.stopped:
            return []
        self.stopped = True
        problems = []
        if self.proc.poll() is None:
            self.sigterm()
        rc = self.wait_exit(timeout)
        if rc is None:
            problems.append(f"did not exit within {timeout} s of SIGTERM (killed)")
            self.proc.kill()
            rc = self.proc.wait()
        self._stop_watch.set()
        if rc != 0:
            problems.append(f"exit code {rc} after SIGTERM (want 0)")
        deadline = time.monotonic() + 3
        left = [p for p, st in self._seen.items() if alive(p, st)]
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = [p for p, st in self._seen.items() if alive(p, st)]
        if left:
            problems.append("processes outlived the server: " + "; ".join(describe(p) for p in left))
            for p in left:               # they were started by this server: end them by pid
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        cgs = corral_cgroups_of(self.proc.pid)
        if cgs:
            problems.append(f"cgroups left behind: {cgs}")
        if check:
            assert not problems, f"{self.name} on {self.listen}:\n  - " + "\n  - ".join(problems) + \
                f"\nstderr (last 3000 chars):\n{self.stderr_text()[-3000:]}"
        return problems

    # ---- requests

    def connect(self, timeout=60.0):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _headers(self, headers, key):
        h = {}
        key = self.key if key is None else key
        if key:
            h["Authorization"] = f"Bearer {key}"
        h.update(headers or {})
        return h

    def raw(self, method, path, body=None, headers=None, key=None, timeout=60.0):
        """(status, headers (lower-case names), body bytes)."""
        conn = self.connect(timeout)
        try:
            if isinstance(body, str):
                body = body.encode()
            conn.request(method, path, body=body, headers=self._headers(headers, key))
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def json(self, method, path, body=None, headers=None, key=None, timeout=60.0):
        """(status, headers, parsed JSON body, or the raw bytes when it is not JSON).
        body: a Python object (sent as JSON), or bytes/str sent as they are."""
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        h.update(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body).encode()
        status, hdrs, data = self.raw(method, path, body, h, key, timeout)
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = data
        return status, hdrs, parsed

    def get(self, path, **kw):
        return self.json("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.json("POST", path, {} if body is None else body, **kw)

    def delete(self, path, **kw):
        return self.json("DELETE", path, **kw)

    def stream(self, path, body, key=None, timeout=60.0, method="POST"):
        """Sends a streaming request (Accept: application/x-ndjson); returns a
        Stream whose iteration yields (arrival_time, obj) per line."""
        conn = self.connect(timeout)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        t0 = time.monotonic()
        conn.request(method, path, body=data,
                     headers=self._headers({"Content-Type": "application/json",
                                            "Accept": "application/x-ndjson"}, key))
        sock = conn.sock
        resp = conn.getresponse()
        return Stream(conn, sock, resp, t0)

    def healthz(self):
        st, _, body = self.json("GET", "/healthz", key="")
        assert st == 200, f"/healthz answered {st}: {body!r:.500}\nserver stderr:\n{self.stderr_text()[-2000:]}"
        return body

    def wait_running(self, pred, seconds):
        """Polls /healthz until pred(running) holds; returns the last body."""
        deadline = time.monotonic() + seconds
        while True:
            h = self.healthz()
            if pred(h.get("running")) or time.monotonic() > deadline:
                return h
            time.sleep(0.05)

    def execute(self, body, **kw):
        """POST /v1/execute that must answer 200 with a valid result."""
        st, _, r = self.post("/v1/execute", body, **kw)
        assert st == 200, f"POST /v1/execute {body!r:.300} answered {st}: {r!r:.1500}"
        return check_result(r, f"POST /v1/execute {body!r:.300}")

    def open_session(self, body=None, **kw):
        st, _, r = self.post("/v1/sessions", body or {}, **kw)
        assert st == 201, f"POST /v1/sessions {body!r} answered {st}: {r!r:.1500}"
        assert isinstance(r, dict) and isinstance(r.get("id"), str) and r["id"], r
        return r

    def cell(self, sid, code, timeout_s=None, **kw):
        body = {"code": code}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        st, _, r = self.post(f"/v1/sessions/{sid}/execute", body, **kw)
        assert st == 200, f"session execute {code!r:.200} answered {st}: {r!r:.1500}"
        return check_result(r, f"session cell {code!r:.200}")

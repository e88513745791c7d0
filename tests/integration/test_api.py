"""The HTTP API (`corral serve`, docs/api.md) tested against the real server
on loopback: every endpoint, streaming (events arrive as they happen, a
keepalive in silence), a client that disconnects interrupts its run, API keys
and tenant isolation, every kind of bad input, 429 after the queue, 413 over
the body limit, the hostile corpus through /v1/execute, and SIGTERM draining.

Each server is stopped with SIGTERM at the end of its tests and must then
exit 0 and leave no process and no corral-PID-* cgroup behind (api_util.py).

Run:  /usr/bin/python3 -m pytest -q tests/integration/test_api.py
"""

import base64
import datetime
import http.client
import json
import os
import re
import secrets
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from api_util import Server, check_error, check_result, corral_cgroups_of
from conftest import REPO, corral_path, free_port, processes_with_env, wait_no_env

MiB = 1 << 20
SECRET = "canary" + secrets.token_hex(16)          # in the server's own environment only
MARK_VAR = "CORRAL_API_MARK"                         # marker given to sandboxes through `env`
EVENT_TYPES = {"stdout", "stderr", "display", "file", "keepalive", "result"}
K1 = "k1-" + secrets.token_hex(12)                   # the server wants keys of 8+ characters
K2 = "k2-" + secrets.token_hex(12)
SHARED_HOSTILE = os.path.normpath(os.path.join(str(REPO), "..", "shared", "hostile"))


def mark():
    return f"m{secrets.token_hex(8)}"


def marker_env(m):
    return {MARK_VAR: m}


def needle(m):
    return f"{MARK_VAR}={m}\0".encode()


def parse_time(s):
    assert isinstance(s, str) and s, f"not a timestamp: {s!r}"
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def main_text(res):
    """text/plain of the result flagged main (the last expression's value)."""
    mains = [r for r in res["results"] if r.get("main")]
    assert len(mains) == 1, f"expected one main result: {res['results']!r}"
    return mains[0]["mime"]["text/plain"]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ------------------------------------------------------------------ servers

def server_env():
    """corral serve runs with secrets in its own environment; no sandbox may see them."""
    return dict(os.environ, CORRAL_CANARY_SECRET=SECRET, OPENAI_API_KEY="sk-" + SECRET,
                AWS_SECRET_ACCESS_KEY=SECRET)


@pytest.fixture(scope="module")
def srv(pids_fence):
    s = Server(env=server_env(), name="main server (no keys)").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def keys_srv(pids_fence, tmp_path_factory):
    f = tmp_path_factory.mktemp("keys") / "api-keys"
    f.write_text(f"# keys of the test tenants\n{K1} alice\n\n{K2} bob\n")
    s = Server(["--api-keys", str(f)], name="server with --api-keys").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def narrow_srv(pids_fence):
    s = Server(["--max-concurrent", "1", "--queue", "1", "--max-sessions", "2"],
               name="server with --max-concurrent 1 --queue 1 --max-sessions 2").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def small_srv(pids_fence):
    s = Server(["--max-body", "1000"], name="server with --max-body 1000").start()
    yield s
    s.stop()


# --------------------------------------------------------------- start-up

def test_says_loopback_only_without_keys(srv):
    err = srv.stderr_text()
    assert "loopback" in err.split("listening on")[0], \
        f"without --api-keys the server must say at start that it serves loopback only:\n{err[:2000]}"
    assert f"listening on http://127.0.0.1:{srv.port}" in err, err[:2000]


def test_refuses_non_loopback_without_keys(pids_fence):
    import subprocess
    port = free_port()
    p = subprocess.Popen([corral_path(), "serve", "--listen", f"0.0.0.0:{port}"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"corral serve --listen 0.0.0.0 without --api-keys kept running: {err[-2000:]!r}")
    assert p.returncode != 0, f"exit 0 on a non-loopback address without keys: {err!r}"
    assert b"listening on" not in err, err
    assert b"--api-keys" in err or b"loopback" in err, f"the refusal does not say why: {err!r}"


def test_refuses_more_sandboxes_than_a_process_can_run(pids_fence):
    import subprocess
    p = subprocess.run([corral_path(), "serve", "--listen", f"127.0.0.1:{free_port()}",
                        "--max-sessions", "600"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=10)
    assert p.returncode == 2, p.stderr
    assert b"listening on" not in p.stderr
    assert b"512" in p.stderr and b"--max-sessions" in p.stderr, p.stderr


# ------------------------------------------------------------ plain endpoints

def test_healthz(srv):
    st, hdrs, body = srv.get("/healthz")
    assert st == 200 and hdrs.get("content-type", "").startswith("application/json"), (st, hdrs)
    assert body["status"] == "ok", body
    for k in ("sessions", "running"):
        assert isinstance(body.get(k), int) and body[k] >= 0, body


def test_openapi(srv):
    st, hdrs, doc = srv.get("/openapi.json")
    assert st == 200, (st, doc)
    assert str(doc.get("openapi", "")).startswith("3.1"), doc.get("openapi")
    paths = {re.sub(r"\{[^}]*\}", "{}", p) for p in doc.get("paths", {})}
    want = {"/v1/execute", "/v1/sessions", "/v1/sessions/{}", "/v1/sessions/{}/execute",
            "/v1/sessions/{}/interrupt", "/v1/sessions/{}/restart", "/v1/sessions/{}/files",
            "/v1/sessions/{}/files/{}", "/v1/grade", "/v1/runtimes", "/healthz", "/metrics"}
    assert want <= paths, f"paths missing from /openapi.json: {sorted(want - paths)}"


def test_runtimes(srv):
    st, _, body = srv.get("/v1/runtimes")
    assert st == 200, body
    rts = {r["language"]: r for r in body["runtimes"]}
    assert {"python", "node", "bash"} <= set(rts), body
    for lang, r in rts.items():
        assert isinstance(r.get("version"), str) and r["version"], r
        assert isinstance(r.get("interpreter"), str) and r["interpreter"], r
        assert isinstance(r.get("packages"), list), r
    assert "numpy" in rts["python"]["packages"], rts["python"]["packages"]
    assert "3." in rts["python"]["version"], rts["python"]
    assert rts["node"]["version"].lstrip("v")[:1].isdigit(), rts["node"]


# --------------------------------------------------------------- execute

def test_execute_default_python(srv):
    st, hdrs, r = srv.post("/v1/execute", {"code": "print(6*7)"})
    assert st == 200, r
    assert hdrs.get("content-type", "").startswith("application/json"), hdrs
    check_result(r)
    assert r["status"] == "ok" and r["stdout"] == "42\n" and r["exit_code"] == 0, r
    assert r["language"] == "python" and r["results"] == [], r
    assert r["limits"]["timeout_s"] == 30 and r["limits"]["memory_bytes"] == 256 * MiB, r["limits"]


@pytest.mark.parametrize("lang,code,out", [
    ("python", "import sys; print(sys.version_info[0])", "3\n"),
    ("node", "console.log(20 + 22)", "42\n"),
    ("bash", "echo $((40 + 2))", "42\n"),
])
def test_execute_languages(srv, lang, code, out):
    r = srv.execute({"language": lang, "code": code})
    assert r["status"] == "ok" and r["stdout"] == out and r["language"] == lang, r


def test_execute_stdin_files_env(srv):
    blob = bytes(range(256)) * 4
    code = ("import hashlib, os, sys\n"
            "line = sys.stdin.read()\n"
            "data = open('data/in.bin', 'rb').read()\n"
            "print(line.strip(), len(data), hashlib.sha256(data).hexdigest(), os.environ['GREETING'])\n"
            "open('out.txt', 'w').write('hello')\n")
    import hashlib
    r = srv.execute({"code": code, "stdin": "from stdin\n", "files": {"data/in.bin": b64(blob)},
                     "env": {"GREETING": "bonjour"}})
    assert r["status"] == "ok", r
    assert r["stdout"] == f"from stdin {len(blob)} {hashlib.sha256(blob).hexdigest()} bonjour\n", r
    made = [f for f in r["files"] if f["path"] == "out.txt"]
    assert made and made[0]["size"] == 5 and made[0]["change"] == "created", r["files"]


def test_execute_expected_output(srv):
    r = srv.execute({"code": "print('yes')", "expected_output": "yes\n"})
    assert r["status"] == "ok", r
    r = srv.execute({"code": "print('no')", "expected_output": "yes\n"})
    assert r["status"] == "wrong_answer" and r["exit_code"] == 0 and r["stdout"] == "no\n", r


def test_execute_error_and_limits(srv):
    r = srv.execute({"code": "1/0"})
    assert r["status"] == "error" and r["exit_code"] == 1, r
    assert r["error"]["name"] == "ZeroDivisionError", r["error"]
    t0 = time.monotonic()
    r = srv.execute({"code": "import time\ntime.sleep(30)", "timeout_s": 1})
    assert r["status"] == "timeout" and r["limits"]["timeout_s"] == 1, r
    assert time.monotonic() - t0 < 6, "a 1 s timeout took too long"
    r = srv.execute({"code": "x = bytearray(400 * 2**20)\nprint(len(x))", "memory_mb": 64})
    assert r["status"] == "memory_limit" and r["limits"]["memory_bytes"] == 64 * MiB, r


def test_no_secret_reaches_a_sandbox(srv):
    r = srv.execute({"code": "import os\nprint(sorted(os.environ.items()))"})
    assert r["status"] == "ok", r
    assert SECRET not in r["stdout"] and "OPENAI_API_KEY" not in r["stdout"], r["stdout"]


# --------------------------------------------------------------- sessions

def test_session_lifecycle(srv):
    t_before = datetime.datetime.now(datetime.timezone.utc)
    st, hdrs, s = srv.post("/v1/sessions", {"language": "python", "ttl_s": 600, "timeout_s": 20,
                                            "memory_mb": 256, "env": {"GREETING": "hi"}})
    assert st == 201, s
    assert set(s) >= {"id", "language", "created_at", "expires_at"} and s["language"] == "python", s
    sid = s["id"]
    created, expires = parse_time(s["created_at"]), parse_time(s["expires_at"])
    assert abs((created - t_before).total_seconds()) < 30, s
    assert abs((expires - created).total_seconds() - 600) < 5, f"expires_at is not created_at + ttl_s: {s}"
    try:
        st, _, lst = srv.get("/v1/sessions")
        assert st == 200 and sid in [x["id"] for x in lst["sessions"]], lst
        st, _, info = srv.get(f"/v1/sessions/{sid}")
        assert st == 200, info
        assert set(info) >= {"id", "language", "created_at", "expires_at", "last_activity", "status",
                             "executions"}, info
        assert info["id"] == sid and info["executions"] == 0, info

        r = srv.cell(sid, "x = 41")
        assert r["status"] == "ok" and r["exit_code"] == 0, r
        r = srv.cell(sid, "x + 1")
        assert r["status"] == "ok" and main_text(r) == "42", r
        r = srv.cell(sid, "import os\nprint(os.environ['GREETING'])")
        assert r["stdout"] == "hi\n", r
        assert r["limits"]["memory_bytes"] == 256 * MiB, r["limits"]
        r = srv.cell(sid, "1/0")
        assert r["status"] == "error" and r["exit_code"] == 1 and r["error"]["name"] == "ZeroDivisionError", r
        r = srv.cell(sid, "print(x)")
        assert r["stdout"] == "41\n", r
        st, _, info = srv.get(f"/v1/sessions/{sid}")
        assert info["executions"] == 5, info
        assert parse_time(info["last_activity"]) >= created, info
        assert srv.healthz()["sessions"] >= 1
    finally:
        st, _, d = srv.delete(f"/v1/sessions/{sid}")
    assert st == 200 and d == {"id": sid, "closed": True}, (st, d)
    for method, path in [("GET", ""), ("DELETE", ""), ("POST", "/execute"), ("POST", "/interrupt"),
                         ("POST", "/restart"), ("GET", "/files"), ("GET", "/files/x.txt")]:
        body = {"code": "print(1)"} if path == "/execute" else ({} if method == "POST" else None)
        st, _, b = srv.json(method, f"/v1/sessions/{sid}{path}", body)
        check_error(st, b, 404, "not_found", f"{method} {path} on a closed session")
    st, _, lst = srv.get("/v1/sessions")
    assert sid not in [x["id"] for x in lst["sessions"]], lst


def test_session_interrupt_and_restart(srv):
    sid = srv.open_session({"timeout_s": 30})["id"]
    try:
        srv.cell(sid, "x = 5\nopen('keep.txt', 'w').write('kept')")
        st, _, b = srv.post(f"/v1/sessions/{sid}/interrupt")
        assert st == 200 and b == {"interrupted": False}, (st, b)

        with srv.stream(f"/v1/sessions/{sid}/execute",
                        {"code": "print('go')\nimport time\nwhile True: time.sleep(0.1)"}) as s:
            assert s.status == 200, s.body_json()
            it = iter(s)
            t, first = next(it)
            assert first["type"] == "stdout" and "go" in first["text"], first
            st, _, b = srv.post(f"/v1/sessions/{sid}/interrupt")
            assert st == 200 and b == {"interrupted": True}, (st, b)
            res = s.result()
        check_result(res)
        assert res["status"] == "interrupted", res
        assert time.monotonic() - t < 5, "the interrupted cell took more than 5 s to end"
        assert srv.cell(sid, "print(x)")["stdout"] == "5\n"

        st, _, b = srv.post(f"/v1/sessions/{sid}/restart")
        assert st == 200 and b == {"id": sid, "restarted": True}, (st, b)
        r = srv.cell(sid, "print(x)")
        assert r["status"] == "error" and r["error"]["name"] == "NameError", r
        r = srv.cell(sid, "print(open('keep.txt').read())")
        assert r["stdout"] == "kept\n", "restart must keep /workspace: " + repr(r)

        # A restart asked for while a cell runs stops that cell instead of
        # waiting for its time limit.
        with srv.stream(f"/v1/sessions/{sid}/execute",
                        {"code": "print('stuck')\nimport time\ntime.sleep(25)", "timeout_s": 28}) as s:
            t, first = next(iter(s))
            assert first["type"] == "stdout" and "stuck" in first["text"], first
            t0 = time.monotonic()
            st, _, b = srv.post(f"/v1/sessions/{sid}/restart")
            took = time.monotonic() - t0
            assert st == 200 and b == {"id": sid, "restarted": True}, (st, b)
            assert took < 10, f"the restart waited {took:.1f} s for the running cell"
            res = s.result()
        assert res["status"] == "interrupted", res
    finally:
        srv.delete(f"/v1/sessions/{sid}")


def test_session_timeouts(srv):
    sid = srv.open_session({"timeout_s": 2})["id"]
    try:
        srv.cell(sid, "x = 'state'")
        t0 = time.monotonic()
        r = srv.cell(sid, "import time\nwhile True: time.sleep(0.1)")
        assert r["status"] == "timeout" and time.monotonic() - t0 < 6, r
        assert srv.cell(sid, "print(x)")["stdout"] == "state\n", "the timed-out cell lost the state"
        t0 = time.monotonic()
        r = srv.cell(sid, "import time\ntime.sleep(10)", timeout_s=1)
        assert r["status"] == "timeout" and time.monotonic() - t0 < 4, ("a call may lower the timeout", r)
        # a call may not raise it: either refused, or still cut at the session's 2 s
        t0 = time.monotonic()
        st, _, r = srv.post(f"/v1/sessions/{sid}/execute",
                            {"code": "import time\ntime.sleep(5)\nprint('late')", "timeout_s": 100})
        if st == 200:
            assert r["status"] == "timeout" and "late" not in r["stdout"], \
                f"a call raised the session's timeout: {r!r:.1000}"
            assert time.monotonic() - t0 < 4.9
        else:
            check_error(st, r, 400, "invalid_request", "raising the session timeout")
    finally:
        srv.delete(f"/v1/sessions/{sid}")


@pytest.mark.parametrize("lang,cells,want", [
    ("node", ["let y = 20", "y * 2 + 2"], ("main", "42")),
    ("bash", ["Z=42", "echo $Z"], ("stdout", "42\n")),
])
def test_session_other_languages(srv, lang, cells, want):
    s = srv.open_session({"language": lang})
    assert s["language"] == lang, s
    try:
        for c in cells[:-1]:
            assert srv.cell(s["id"], c)["status"] == "ok"
        r = srv.cell(s["id"], cells[-1])
        assert r["status"] == "ok" and r["language"] == lang, r
        got = main_text(r) if want[0] == "main" else r["stdout"]
        assert got == want[1], r
    finally:
        srv.delete(f"/v1/sessions/{s['id']}")


def test_session_ttl_expires(srv):
    m = mark()
    s = srv.open_session({"ttl_s": 1, "env": marker_env(m)})
    sid = s["id"]
    assert abs((parse_time(s["expires_at"]) - parse_time(s["created_at"])).total_seconds() - 1) < 1, s
    srv.cell(sid, "pass")
    assert processes_with_env(needle(m)), "the session's driver was not visible on the host (marker env)"
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        st, _, lst = srv.get("/v1/sessions")
        if sid not in [x["id"] for x in lst["sessions"]]:
            break
        time.sleep(0.25)
    st, _, b = srv.get(f"/v1/sessions/{sid}")
    check_error(st, b, 404, "not_found", "a session past its ttl_s (1 s) after 8 s")
    assert not wait_no_env(needle(m), 3), "the expired session's processes are still alive"


# ------------------------------------------------------------------ files

def test_files_api(srv):
    sid = srv.open_session()["id"]
    base = f"/v1/sessions/{sid}/files"
    blob = bytes(range(256)) * 10
    try:
        st, _, b = srv.raw("PUT", f"{base}/a/b/c.bin", blob, {"Content-Type": "application/octet-stream"})
        assert st == 201 and json.loads(b) == {"path": "a/b/c.bin", "size": len(blob)}, (st, b)
        st, _, b = srv.raw("PUT", f"{base}/empty.txt", b"")
        assert st == 201 and json.loads(b)["size"] == 0, (st, b)

        st, _, ls = srv.get(f"{base}?path=a/b")
        assert st == 200 and ls["path"] == "a/b", ls
        assert {"name": "c.bin", "path": "a/b/c.bin", "type": "file", "size": len(blob)} in \
            [{k: e.get(k) for k in ("name", "path", "type", "size")} for e in ls["entries"]], ls
        st, _, ls = srv.get(f"{base}?path=a")
        assert st == 200 and [(e["name"], e["type"]) for e in ls["entries"]] == [("b", "dir")], ls
        st, _, ls = srv.get(base)
        assert st == 200, ls
        names = {e["name"]: e["type"] for e in ls["entries"]}
        assert names.get("a") == "dir" and names.get("empty.txt") == "file", ls

        st, hdrs, data = srv.raw("GET", f"{base}/a/b/c.bin")
        assert st == 200 and data == blob, (st, data[:100])
        assert hdrs.get("content-type", "").startswith("application/octet-stream"), hdrs

        # the sandbox sees the upload, and the API sees what the sandbox writes
        r = srv.cell(sid, "print(open('a/b/c.bin', 'rb').read() == bytes(range(256)) * 10)\n"
                          "open('a/made.txt', 'w').write('from the cell')")
        assert r["stdout"] == "True\n", r
        st, _, data = srv.raw("GET", f"{base}/a/made.txt")
        assert st == 200 and data == b"from the cell", (st, data)

        st, _, b = srv.raw("PUT", f"{base}/a/b/c.bin", b"short")
        assert st == 201 and json.loads(b)["size"] == 5, (st, b)
        assert srv.raw("GET", f"{base}/a/b/c.bin")[2] == b"short"

        st, _, b = srv.delete(f"{base}/a/b/c.bin")
        assert st == 200 and b == {"path": "a/b/c.bin", "deleted": True}, (st, b)
        for method in ("GET", "DELETE"):
            st, _, b = srv.json(method, f"{base}/a/b/c.bin")
            check_error(st, b, 404, "not_found", f"{method} of a deleted file")
        st, _, b = srv.get(f"{base}?path=no/such/dir")
        check_error(st, b, 404, "not_found", "listing a missing directory")
    finally:
        srv.delete(f"/v1/sessions/{sid}")


def test_files_symlinks_pointing_out(srv):
    sid = srv.open_session()["id"]
    base = f"/v1/sessions/{sid}/files"
    host_shadow = open("/etc/shadow", "rb").read() if os.path.exists("/etc/shadow") else b"\0none"
    host_passwd = open("/etc/passwd", "rb").read()
    planted = f"/etc/corral-api-test-{secrets.token_hex(4)}"
    try:
        r = srv.cell(sid, "import os\nos.symlink('/etc/shadow', 'leak')\nos.symlink('/etc', 'etcdir')\n"
                          "os.symlink('/', 'root')\nprint('ok')")
        assert r["stdout"] == "ok\n", r
        st, _, ls = srv.get(base)
        assert st == 200 and {e["name"]: e["type"] for e in ls["entries"]}.get("leak") == "symlink", ls
        for path, host in [("leak", host_shadow), ("etcdir/passwd", host_passwd),
                           ("root/etc/passwd", host_passwd), ("etcdir/shadow", host_shadow)]:
            st, _, data = srv.raw("GET", f"{base}/{path}")
            assert st in (400, 404), f"GET files/{path} through a symlink out of the workspace: {st} {data[:200]!r}"
            assert host not in data and (len(host) < 16 or host[:16] not in data), f"host bytes leaked via {path}"
            check_error(st, json.loads(data), st)
        for q in ("etcdir", "root", "root/etc"):
            st, _, b = srv.get(f"{base}?path={q}")
            assert st in (400, 404), f"listing {q} (a symlink out) answered {st}: {b!r:.500}"
        st, _, b = srv.raw("PUT", f"{base}/etcdir/{os.path.basename(planted)}", b"planted")
        assert st in (400, 404), f"PUT through a symlink out answered {st}: {b!r:.300}"
        assert not os.path.exists(planted), f"a PUT through a symlink wrote {planted} on the host"
        st, _, b = srv.raw("DELETE", f"{base}/etcdir/passwd")
        assert st in (400, 404), f"DELETE through a symlink out answered {st}"
        assert os.path.exists("/etc/passwd")
    finally:
        if os.path.exists(planted):
            os.remove(planted)
        srv.delete(f"/v1/sessions/{sid}")


BAD_PATHS = ["../../etc/passwd", "a/../../x", "a/..", "..", "/etc/passwd", "%2e%2e/%2e%2e/etc/passwd",
             "a%2f..%2f..%2fetc%2fpasswd", "%2fetc%2fpasswd", "x%00y", "%00", "a/%2e%2e/%2e%2e/x"]


def test_files_bad_paths(srv):
    sid = srv.open_session()["id"]
    base = f"/v1/sessions/{sid}/files"
    try:
        assert srv.raw("PUT", f"{base}/x", b"in the workspace")[0] == 201
        problems = []
        for p in BAD_PATHS:
            for method, body in (("GET", None), ("PUT", b"evil"), ("DELETE", None)):
                st, _, data = srv.raw(method, f"{base}/{p}", body)
                if st != 400:
                    problems.append(f"{method} files/{p} -> {st} {data[:120]!r}")
                elif b"root:" in data:
                    problems.append(f"{method} files/{p} returned host bytes")
                else:
                    try:
                        check_error(st, json.loads(data), 400)
                    except (AssertionError, ValueError) as e:
                        problems.append(f"{method} files/{p}: not a JSON error: {e}")
        for q in ("..", "../..", "/etc", "a/../..", "%2e%2e", "%00", "x%00y", "/"):
            st, _, data = srv.raw("GET", f"{base}?path={q}")
            if st != 400:
                problems.append(f"GET files?path={q} -> {st} {data[:120]!r}")
        # the absolute-looking form of the issue: files//etc/passwd
        st, _, data = srv.raw("GET", f"{base}//etc/passwd")
        if st != 400:
            problems.append(f"GET files//etc/passwd -> {st} {data[:120]!r}")
        assert not problems, "bad paths not refused with 400:\n  " + "\n  ".join(problems)
        st, _, data = srv.raw("GET", f"{base}/x")
        assert st == 200 and data == b"in the workspace", "a bad-path request changed a workspace file"
    finally:
        srv.delete(f"/v1/sessions/{sid}")


# --------------------------------------------------------------- streaming

def check_stream_lines(lines):
    for _, o in lines:
        assert o["type"] in EVENT_TYPES, f"unknown event type: {o!r:.300}"
        if o["type"] in ("stdout", "stderr"):
            assert isinstance(o.get("text"), str), o


def test_stream_oneshot_events_before_result(srv):
    code = "import time\nprint('first', flush=True)\ntime.sleep(1)\nprint('second', flush=True)\n" \
           "open('made.txt', 'w').write('abc')"
    with srv.stream("/v1/execute", {"code": code}) as s:
        assert s.status == 200, s.body_json()
        assert s.headers.get("content-type", "").startswith("application/x-ndjson"), s.headers
        res = s.result()
        lines = s.lines
    check_stream_lines(lines)
    check_result(res)
    assert res["status"] == "ok" and res["stdout"] == "first\nsecond\n", res
    t_first = next(t for t, o in lines if o["type"] == "stdout" and "first" in o["text"])
    t_result = lines[-1][0]
    assert t_result - t_first >= 0.7, \
        f"the first line arrived only {t_result - t_first:.2f} s before the result: not streamed"
    assert "".join(o["text"] for _, o in lines if o["type"] == "stdout") == res["stdout"]
    # the issue lists file events: one per file the run changed, before the result
    fev = [o for _, o in lines if o["type"] == "file"]
    assert [(o.get("path"), o.get("size"), o.get("change")) for o in fev] == [("made.txt", 3, "created")], \
        f"file events {fev!r} (result files {res['files']!r})"


def test_stream_session_cell(srv):
    sid = srv.open_session()["id"]
    try:
        code = "import sys, time\nprint('first')\nprint('err', file=sys.stderr)\ntime.sleep(1)\n" \
               "print('second')\ndisplay({'a': 1})\n6 * 7"
        with srv.stream(f"/v1/sessions/{sid}/execute", {"code": code}) as s:
            assert s.status == 200, s.body_json()
            res = s.result()
            lines = s.lines
        check_stream_lines(lines)
        check_result(res)
        assert res["status"] == "ok" and res["stdout"] == "first\nsecond\n" and "err" in res["stderr"], res
        assert main_text(res) == "42", res
        t_first = next(t for t, o in lines if o["type"] == "stdout" and "first" in o["text"])
        assert lines[-1][0] - t_first >= 0.7, "the session cell's first line was not streamed"
        types = [o["type"] for _, o in lines]
        assert "stderr" in types and "display" in types, types
        disp = next(o for _, o in lines if o["type"] == "display")
        assert "text/plain" in disp["mime"], disp
        # the same session, not streamed, still has the state of the streamed cell
        assert srv.cell(sid, "print(sys.version_info[0])")["stdout"] == "3\n"
    finally:
        srv.delete(f"/v1/sessions/{sid}")


def test_stream_keepalive(srv):
    with srv.stream("/v1/execute", {"code": "import time\ntime.sleep(6.5)\nprint('done')", "timeout_s": 20}) as s:
        assert s.status == 200, s.body_json()
        res = s.result()
        lines = s.lines
    kas = [t - s.t0 for t, o in lines if o["type"] == "keepalive"]
    assert kas, f"no keepalive line in 6.5 s of silence: {[o for _, o in lines]!r:.1000}"
    assert 4.0 <= kas[0] <= 6.5, f"first keepalive after {kas[0]:.2f} s (want about 5 s)"
    assert res["status"] == "ok" and res["stdout"] == "done\n", res


def test_stream_bad_request_is_a_json_error(srv):
    with srv.stream("/v1/execute", {"code": 5}) as s:
        body = s.body_json()
        check_error(s.status, body, 400, "invalid_request", "a streaming request with code: 5")
    # found only when the spec is checked as a whole (an input named like
    # the program): still a 400 before the stream, not a sandbox_error in it
    with srv.stream("/v1/execute", {"code": "print(1)", "files": {"main.py": b64(b"x")}}) as s:
        body = s.body_json()
        check_error(s.status, body, 400, "invalid_request", "a streaming request with files main.py")
        assert "main.py" in body["error"]["message"], body


# --------------------------------------------------------------- disconnects

def test_disconnect_kills_oneshot(srv):
    m = mark()
    code = "import time\nprint('started', flush=True)\nwhile True: time.sleep(0.1)"
    s = srv.stream("/v1/execute", {"code": code, "timeout_s": 30, "env": marker_env(m)})
    try:
        assert s.status == 200, s.body_json()
        t, first = next(iter(s))
        assert first["type"] == "stdout" and "started" in first["text"], first
        assert processes_with_env(needle(m)), "the sandboxed program is not visible on the host"
    finally:
        s.close()
    t0 = time.monotonic()
    h = srv.wait_running(lambda n: n == 0, 5)
    assert h["running"] == 0, f"/healthz still shows {h['running']} running 5 s after the client left"
    left = wait_no_env(needle(m), max(0.5, 5 - (time.monotonic() - t0)))
    assert not left, f"the one-shot sandbox outlived its client: pids {left}"


def test_disconnect_interrupts_session_cell(srv):
    sid = srv.open_session({"timeout_s": 15})["id"]
    try:
        srv.cell(sid, "x = 'still here'")
        s = srv.stream(f"/v1/sessions/{sid}/execute",
                       {"code": "import time\nprint('started')\nwhile True: time.sleep(0.1)"})
        try:
            assert s.status == 200, s.body_json()
            t, first = next(iter(s))
            assert first["type"] == "stdout" and "started" in first["text"], first
        finally:
            s.close()
        h = srv.wait_running(lambda n: n == 0, 5)
        assert h["running"] == 0, f"the cell still runs 5 s after its client left ({h})"
        t0 = time.monotonic()
        r = srv.cell(sid, "print(x)", timeout_s=5)
        assert r["stdout"] == "still here\n", f"the session lost its state: {r!r:.1000}"
        assert time.monotonic() - t0 < 4, "the next cell waited: the disconnected cell was not interrupted"
        st, _, info = srv.get(f"/v1/sessions/{sid}")
        assert st == 200, info
    finally:
        srv.delete(f"/v1/sessions/{sid}")


def test_disconnect_while_queued_leaves_the_running_cell_alone(srv):
    # A streamed request waiting for its turn loses its client: its own code
    # must not run later, and the cell that runs meanwhile (another
    # client's) must not be interrupted.
    sid = srv.open_session({"timeout_s": 15})["id"]
    try:
        # A streams, so that B is sent only once A's code is running (its
        # first line came): B then surely waits behind it.
        a = srv.stream(f"/v1/sessions/{sid}/execute",
                       {"code": "print('a started', flush=True)\nimport time\ntime.sleep(2.5)\n"
                                "print('a done')", "timeout_s": 10})
        assert a.status == 200, a.body_json()
        events = iter(a)
        for _, ev in events:
            if ev.get("type") == "stdout":
                break
        s = srv.stream(f"/v1/sessions/{sid}/execute",
                       {"code": "open('b_ran', 'w').write('x')\nprint('b ran')"})
        assert s.status == 200, s.body_json()
        time.sleep(0.5)   # B is queued behind A
        s.close()
        r = None
        for _, ev in events:
            if ev.get("type") == "result":
                r = ev["result"]
        assert r and r["status"] == "ok" and r["stdout"] == "a started\na done\n", \
            f"another client's disconnect interrupted this cell: {r!r:.1000}"
        time.sleep(0.5)
        r = srv.cell(sid, "import os\nprint(os.path.exists('b_ran'))", timeout_s=5)
        assert r["stdout"] == "False\n", f"the withdrawn request's code ran after all: {r!r:.1000}"
    finally:
        srv.delete(f"/v1/sessions/{sid}")


# ------------------------------------------------------------------- grade

def test_grade_verdicts_in_parallel(srv):
    code = "import time\nn = int(input())\ntime.sleep(1)\nif n == 3:\n    time.sleep(60)\nprint(n * 2)"
    t0 = time.monotonic()
    st, _, g = srv.post("/v1/grade", {"language": "python", "code": code, "timeout_s": 1.5, "memory_mb": 128,
                                      "tests": [{"stdin": "2\n", "expected_output": "4\n"},
                                                {"stdin": "5\n", "expected_output": "11\n"},
                                                {"stdin": "3\n", "expected_output": "6\n"}]})
    wall = time.monotonic() - t0
    assert st == 200, g
    assert [t["verdict"] for t in g["tests"]] == ["accepted", "wrong_answer", "timeout"], g
    assert g["verdict"] == "wrong_answer" and g["passed"] == 1 and g["total"] == 3, g
    t = g["tests"]
    assert t[0]["status"] == "ok" and t[0]["stdout"] == "4\n", t[0]
    assert t[1]["status"] == "wrong_answer" and t[1]["stdout"] == "10\n", t[1]
    assert t[2]["status"] == "timeout" and t[2]["error"] is not None, t[2]
    for x in t:
        assert set(x) >= {"verdict", "status", "stdout", "stderr", "duration_ms", "error"}, x
    assert wall < 3.2, f"grading took {wall:.2f} s: the tests did not run in parallel (sequential >= 3.5 s)"


def test_grade_many_tests_on_a_narrow_server(narrow_srv):
    # 30 tests on a server that runs one execution at a time with a queue of
    # one: they take their turns; none is refused.
    tests = [{"stdin": f"{i}\n", "expected_output": f"{2 * i}\n"} for i in range(30)]
    st, _, g = narrow_srv.post("/v1/grade", {"code": "print(2 * int(input()))", "tests": tests},
                               timeout=120)
    assert st == 200, g
    bad = [(i, t["verdict"], t["error"]) for i, t in enumerate(g["tests"]) if t["verdict"] != "accepted"]
    assert not bad and g["verdict"] == "accepted" and g["passed"] == 30, bad[:5]


def test_grade_memory_and_error(srv):
    code = "import sys\nw = sys.stdin.read().strip()\nif w == 'mem':\n    x = bytearray(500 * 2**20)\n" \
           "elif w == 'err':\n    raise ValueError('bad')\nprint(w)"
    st, _, g = srv.post("/v1/grade", {"code": code, "memory_mb": 64, "timeout_s": 10,
                                      "tests": [{"stdin": "ok", "expected_output": "ok\n"},
                                                {"stdin": "mem", "expected_output": "mem\n"},
                                                {"stdin": "err", "expected_output": "err\n"}]})
    assert st == 200, g
    assert [t["verdict"] for t in g["tests"]] == ["accepted", "memory_limit", "error"], g
    assert g["verdict"] == "memory_limit" and g["passed"] == 1 and g["total"] == 3, g
    st, _, g = srv.post("/v1/grade", {"code": "print(input())",
                                      "tests": [{"stdin": "a\n", "expected_output": "a\n"}]})
    assert st == 200 and g["verdict"] == "accepted" and g["passed"] == g["total"] == 1, g


# ------------------------------------------------------------------ metrics

def parse_prom(text):
    types, samples = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            assert len(parts) == 4, f"bad TYPE line {line!r}"
            types[parts[2]] = parts[3]
        elif not line.strip() or line.startswith("#"):
            continue
        else:
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$', line)
            assert m, f"not a Prometheus sample line: {line!r}"
            labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            samples.append((m.group(1), labels, float(m.group(3))))
    return types, samples


def family_samples(samples, family, suffixes=("", "_total")):
    return [(n, l, v) for n, l, v in samples if n in {family + s for s in suffixes}]


def metrics(s):
    st, hdrs, data = s.raw("GET", "/metrics")
    assert st == 200, data[:500]
    assert hdrs.get("content-type", "").startswith("text/plain"), hdrs
    return parse_prom(data.decode())


def exec_counter(types, samples):
    fams = [f for f, t in types.items() if t == "counter" and "execution" in f
            and any({"status", "language"} <= set(l) for _, l, _ in family_samples(samples, f))]
    assert fams, f"no counter of executions by status and language in /metrics: {sorted(types)}"
    return fams[0]


def count(samples, fam, **labels):
    return sum(v for _, l, v in family_samples(samples, fam) if all(l.get(k) == x for k, x in labels.items()))


def test_metrics(srv):
    types, before = metrics(srv)
    fam = exec_counter(types, before)
    sb = [f for f, t in types.items() if t == "counter" and "sandbox" in f]
    assert sb, f"no counter of sandboxes started: {sorted(types)}"
    hists = [f for f, t in types.items() if t == "histogram"]
    assert hists, f"no latency histogram: {sorted(types)}"
    assert [f for f, t in types.items() if t == "counter" and "reject" in f], f"no rejected counter: {types}"
    gauges = [f for f, t in types.items() if t == "gauge" and "session" in f]
    assert gauges, f"no live-sessions gauge: {sorted(types)}"

    srv.execute({"code": "print(1)"})
    srv.execute({"code": "print(2)"})
    srv.execute({"language": "bash", "code": "sleep 5", "timeout_s": 1})
    sid = srv.open_session()["id"]
    try:
        types, after = metrics(srv)
        h = srv.healthz()
    finally:
        srv.delete(f"/v1/sessions/{sid}")
    assert count(after, fam, status="ok", language="python") - count(before, fam, status="ok", language="python") >= 2
    assert count(after, fam, status="timeout", language="bash") - count(before, fam, status="timeout", language="bash") >= 1
    assert sum(count(after, f) for f in sb) - sum(count(before, f) for f in sb) >= 3, "sandboxes started did not grow"
    grew = False
    for hf in hists:
        buckets = [(l["le"], v) for n, l, v in after if n == hf + "_bucket" and "le" in l]
        assert buckets and any(le == "+Inf" for le, _ in buckets), f"histogram {hf} without a +Inf bucket"
        cnt = [v for n, l, v in after if n == hf + "_count"]
        assert cnt and [n for n, _, _ in after if n == hf + "_sum"], f"histogram {hf} without _count/_sum"
        grew |= sum(cnt) > sum(v for n, l, v in before if n == hf + "_count")
    assert grew, "no histogram counted the new executions"
    assert sum(count(after, g) for g in gauges) >= 1 and \
        any(count(after, g) == h["sessions"] for g in gauges), (gauges, h)


# ------------------------------------------------------------- auth/tenants

def test_auth_required(keys_srv):
    s = keys_srv
    assert "listening on" in s.stderr_text()
    st, _, b = s.get("/healthz", key="")
    assert st == 200, b
    for auth in (None, "Bearer", "Bearer ", "Bearer k3-" + "0" * 24, "Bearer alice", "Bearer " + K1 + "x",
                 "Bearer " + K1[:-1], "Basic " + K1, K1, f"Bearer {K1} {K2}", "Bearer " + K1.upper()):
        hdrs = {"Authorization": auth} if auth is not None else {}
        for method, path, body in (("POST", "/v1/execute", {"code": "print(1)"}), ("GET", "/v1/sessions", None),
                                   ("GET", "/v1/runtimes", None), ("POST", "/v1/sessions", {})):
            st, _, b = s.json(method, path, body, headers=hdrs, key="")
            check_error(st, b, 401, "unauthorized", f"{method} {path} with Authorization {auth!r}")
    for key in (K1, K2):
        st, _, r = s.post("/v1/execute", {"code": "print('in')"}, key=key)
        assert st == 200 and r["stdout"] == "in\n", (key, st, r)


def test_auth_refused_before_the_body_is_read(keys_srv):
    """Without a valid key the answer is 401 before the body: an unknown
    client must not make the server hold megabytes of it."""
    for path, hdr in (("/v1/execute", b""), ("/v1/sessions", b"Authorization: Bearer nope\r\n"),
                      ("/mcp", b"")):
        c = socket.create_connection(("127.0.0.1", keys_srv.port), timeout=5)
        try:
            c.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + hdr +
                      b"Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n" + b"{" * 100)
            try:
                data = c.recv(65536)
            except socket.timeout:
                pytest.fail(f"POST {path} without a valid key: no answer within 5 s while the body "
                            f"was still coming: the server reads bodies before checking keys")
            assert re.match(rb"HTTP/1\.[01] 401", data), (path, data[:300])
        finally:
            c.close()
    keys_srv.healthz()


def test_foreign_web_pages_are_refused_without_keys(srv):
    """A server without keys trusts local clients only: a request a web page
    made (another Origin, or a rebound host name) is refused, whatever its
    Content-Type; local names work."""
    body = json.dumps({"code": "open('pwned', 'w')\nprint('ran')"})
    for hdrs in ({"Origin": "http://evil.example"},
                 {"Origin": "null"},
                 {"Host": "evil.example"},
                 {"Host": "evil.example:" + str(srv.port), "Origin": "http://evil.example:" + str(srv.port)},
                 {"Host": "127.0.0.1.evil.example"}):
        st, _, b = srv.raw("POST", "/v1/execute", body, headers={"Content-Type": "text/plain", **hdrs})
        assert st == 403, (hdrs, st, b[:300])
        assert b"ran" not in b, (hdrs, b[:300])
        st, _, b = srv.raw("POST", "/v1/sessions", "{}", headers=hdrs)
        assert st == 403, (hdrs, st, b[:300])
    for host in ("localhost", f"localhost:{srv.port}", f"127.0.0.1:{srv.port}", "127.1.2.3", "[::1]:80"):
        st, _, r = srv.json("POST", "/v1/execute", {"code": "print(7)"},
                            headers={"Host": host, "Origin": "http://localhost:3000"})
        assert st == 200 and r["stdout"] == "7\n", (host, st, r)


def test_tenant_isolation(keys_srv):
    s = keys_srv
    a = s.open_session({}, key=K1)["id"]
    b = s.open_session({}, key=K2)["id"]
    try:
        assert s.cell(a, "x = 'alice'", key=K1)["status"] == "ok"
        assert s.raw("PUT", f"/v1/sessions/{a}/files/secret.txt", b"alice's", key=K1)[0] == 201
        ids1 = [x["id"] for x in s.get("/v1/sessions", key=K1)[2]["sessions"]]
        ids2 = [x["id"] for x in s.get("/v1/sessions", key=K2)[2]["sessions"]]
        assert a in ids1 and b not in ids1 and b in ids2 and a not in ids2, (ids1, ids2)

        st, _, unknown = s.get("/v1/sessions/s-doesnotexist0000", key=K2)
        check_error(st, unknown, 404, "not_found", "an unknown session")
        for method, path, body in (("GET", "", None), ("POST", "/execute", {"code": "print(x)"}),
                                   ("POST", "/interrupt", {}), ("POST", "/restart", {}),
                                   ("GET", "/files", None), ("GET", "/files/secret.txt", None),
                                   ("PUT", "/files/planted.txt", b"bob was here"),
                                   ("DELETE", "/files/secret.txt", None), ("DELETE", "", None)):
            if isinstance(body, bytes):
                st, _, raw = s.raw(method, f"/v1/sessions/{a}{path}", body, key=K2)
                data = json.loads(raw) if raw.startswith(b"{") else raw
            else:
                st, _, data = s.json(method, f"/v1/sessions/{a}{path}", body, key=K2)
            check_error(st, data, 404, "not_found", f"bob: {method} alice's session{path}")
            assert b"alice" not in json.dumps(data).encode(), data
        # alice's session is untouched
        r = s.cell(a, "print(x)", key=K1)
        assert r["status"] == "ok" and r["stdout"] == "alice\n", r
        assert s.raw("GET", f"/v1/sessions/{a}/files/secret.txt", key=K1)[2] == b"alice's"
        assert s.raw("GET", f"/v1/sessions/{a}/files/planted.txt", key=K1)[0] == 404
        st, _, info = s.get(f"/v1/sessions/{a}", key=K1)
        assert st == 200 and info["id"] == a, info
    finally:
        s.delete(f"/v1/sessions/{a}", key=K1)
        s.delete(f"/v1/sessions/{b}", key=K2)


# -------------------------------------------------------------- bad input

def bad(srv, method, path, body, status=400, code="invalid_request", mentions=(), ctx=""):
    if isinstance(body, (dict, list)) or body is None:
        st, hdrs, b = srv.json(method, path, body)
    else:
        st, hdrs, b = srv.json(method, path, body if isinstance(body, bytes) else body.encode())
    err = check_error(st, b, status, code, ctx or f"{method} {path} {body!r:.200}")
    for word in mentions:
        assert word in err["message"], f"the message does not name {word!r}: {err['message']!r} ({ctx or body!r:.200})"
    return err


def test_bad_json(srv):
    for body in (b'{"code": "print(1)"', b"not json", b"{'code': 1}", b'{"code": "\xff\xfe"}',
                 b'{"code": NaN}', b"[" * 100000, b"", b"\x00\x01\x02"):
        st, _, b = srv.json("POST", "/v1/execute", body)
        check_error(st, b, 400, None, f"malformed body {body[:40]!r}")
        assert b["error"]["code"] in ("invalid_json", "invalid_request"), b
    bad(srv, "POST", "/v1/execute", b'{"code": "print(1)"', code="invalid_json")
    st, _, b = srv.json("POST", "/v1/execute", b"[1, 2]")
    check_error(st, b, 400, None, "a JSON array body")
    srv.healthz()


def test_wrong_types(srv):
    cases = [({"code": 5}, "code"), ({"code": "print(1)", "timeout_s": "10"}, "timeout_s"),
             ({"code": "print(1)", "memory_mb": [1]}, "memory_mb"), ({"code": "print(1)", "stdin": 5}, "stdin"),
             ({"code": "print(1)", "env": {"A": 1}}, "env"), ({"code": "print(1)", "env": ["A=1"]}, "env"),
             ({"code": "print(1)", "files": {"x": 5}}, "files"), ({"code": "print(1)", "files": "x"}, "files"),
             ({"code": "print(1)", "language": 3}, "language"),
             ({"code": "print(1)", "expected_output": False}, "expected_output"),
             ({"code": None}, "code"), ({}, "code")]
    for body, field in cases:
        bad(srv, "POST", "/v1/execute", body, mentions=(field,))
    bad(srv, "POST", "/v1/execute", {"code": "print(1)", "language": "cobol"}, mentions=("cobol",))
    bad(srv, "POST", "/v1/execute", {"code": "print(1)", "files": {"x": "!!not base64!!"}})
    for p in ("../x", "/etc/x", "a/../../x"):
        bad(srv, "POST", "/v1/execute", {"code": "print(1)", "files": {p: "aGk="}}, ctx=f"files path {p!r}")
    # a NUL in a key: the JSON parser may refuse it (invalid_json) or the validation (invalid_request)
    bad(srv, "POST", "/v1/execute", {"code": "print(1)", "files": {"x\u0000y": "aGk="}}, code=None)
    for body in ({"ttl_s": "x"}, {"language": "cobol"}, {"memory_mb": -1}, {"env": {"A": None}}):
        bad(srv, "POST", "/v1/sessions", body)
    for body in ({"code": "x", "tests": "no"}, {"code": "x", "tests": [{"stdin": 1}]}, {"tests": []},
                 {"code": "x", "tests": [5]}):
        bad(srv, "POST", "/v1/grade", body)
    srv.healthz()


def test_unknown_fields_are_named(srv):
    sid = srv.open_session()["id"]
    try:
        for path, body in (("/v1/execute", {"code": "print(1)", "bogus_field": 1}),
                           ("/v1/sessions", {"language": "python", "bogus_field": 1}),
                           (f"/v1/sessions/{sid}/execute", {"code": "1", "bogus_field": 1}),
                           ("/v1/grade", {"code": "1", "tests": [], "bogus_field": 1}),
                           ("/v1/grade", {"code": "1", "tests": [{"stdin": "", "bogus_field": 1}]})):
            bad(srv, "POST", path, body, mentions=("bogus_field",))
        bad(srv, "POST", f"/v1/sessions/{sid}/execute", {"code": ""})
        bad(srv, "POST", f"/v1/sessions/{sid}/execute", {"code": 5}, mentions=("code",))
        bad(srv, "POST", f"/v1/sessions/{sid}/execute", {"code": "1", "timeout_s": 0})
    finally:
        srv.delete(f"/v1/sessions/{sid}")


def test_limits_above_maximum(srv):
    for body, field, maximum in (({"code": "1", "timeout_s": 301}, "timeout_s", "300"),
                                 ({"code": "1", "timeout_s": 1e300}, "timeout_s", "300"),
                                 ({"code": "1", "memory_mb": 4097}, "memory_mb", "4096")):
        bad(srv, "POST", "/v1/execute", body, mentions=(field, maximum))
    bad(srv, "POST", "/v1/sessions", {"timeout_s": 1000}, mentions=("timeout_s", "300"))
    bad(srv, "POST", "/v1/sessions", {"memory_mb": 100000}, mentions=("memory_mb", "4096"))
    bad(srv, "POST", "/v1/grade", {"code": "1", "tests": [{"stdin": ""}], "timeout_s": 301}, mentions=("300",))
    for body in ({"code": "1", "timeout_s": 0}, {"code": "1", "timeout_s": -1}, {"code": "1", "memory_mb": 0}):
        bad(srv, "POST", "/v1/execute", body)


def test_unknown_routes_methods_sessions(srv):
    problems = []

    def expect(method, path, body, status, code):
        try:
            bad(srv, method, path, body, status, code)
        except AssertionError as e:
            problems.append(str(e).split("\n")[0] + " | " + str(e).split("\n")[1].strip()[:200])

    for path in ("/v1/nope", "/nope", "/v1/sessions/abc/nope", "/v1"):
        expect("GET", path, None, 404, "not_found")
    for method, path in (("GET", "/v1/execute"), ("DELETE", "/v1/runtimes"), ("PUT", "/healthz"),
                         ("PATCH", "/v1/sessions"), ("POST", "/v1/runtimes"), ("DELETE", "/v1/sessions"),
                         ("GET", "/v1/grade"), ("POST", "/metrics"), ("DELETE", "/openapi.json")):
        expect(method, path, None if method in ("GET", "DELETE") else {}, 405, "method_not_allowed")
    sid = srv.open_session()["id"]          # (on an unknown session, 404 may come first)
    try:
        for method, path in (("PUT", ""), ("GET", "/execute"), ("DELETE", "/restart"), ("GET", "/interrupt"),
                             ("POST", "/files/a.txt"), ("PATCH", "/files/a.txt")):
            expect(method, f"/v1/sessions/{sid}{path}", None if method in ("GET", "DELETE") else {}, 405,
                   "method_not_allowed")
    finally:
        srv.delete(f"/v1/sessions/{sid}")
    for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/execute"), ("POST", "/interrupt"),
                         ("POST", "/restart"), ("GET", "/files"), ("GET", "/files/a.txt"), ("DELETE", "/files/a")):
        body = {"code": "1"} if path == "/execute" else ({} if method == "POST" else None)
        expect(method, f"/v1/sessions/s-0123456789abcdef01234567{path}", body, 404, "not_found")
    st, _, b = srv.raw("PUT", "/v1/sessions/s-0123456789abcdef01234567/files/a.txt", b"x")
    if st != 404:
        problems.append(f"PUT into an unknown session -> {st}")
    assert not problems, "wrong answers:\n  " + "\n  ".join(problems)


def test_garbage_http_keeps_server_up(srv):
    def send_raw(data, read=True):
        c = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        try:
            c.sendall(data)
            if read:
                try:
                    return c.recv(65536)
                except (socket.timeout, ConnectionResetError):
                    return b""
        finally:
            c.close()
    send_raw(b"GARBAGE\r\n\r\n")
    send_raw(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(200))       # a TLS hello
    send_raw(b"POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"co", read=False)
    resp = send_raw(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")
    assert not resp or re.match(rb"HTTP/1\.[01] (4\d\d|5\d\d)", resp), resp[:200]
    send_raw(b"POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", read=True)
    st, _, b = srv.post("/v1/execute", {"code": "print('alive')"})
    assert st == 200 and b["stdout"] == "alive\n", b


def test_body_too_large(small_srv):
    s = small_srv
    big = {"code": "print(1)\n" + "#" * 2000}
    bad(s, "POST", "/v1/execute", big, 413, "body_too_large")
    sid = s.open_session()["id"]
    try:
        st, _, b = s.raw("PUT", f"/v1/sessions/{sid}/files/big.bin", b"x" * 5000)
        check_error(st, json.loads(b), 413, "body_too_large", "a file upload over --max-body")
        assert s.raw("GET", f"/v1/sessions/{sid}/files/big.bin")[0] == 404
        # chunked, no Content-Length
        c = s.connect(10)
        try:
            c.request("POST", "/v1/execute", body=iter([b'{"code": "print(1)\\n', b"#" * 1500, b'"}']),
                      headers={"Content-Type": "application/json"}, encode_chunked=True)
            r = c.getresponse()
            check_error(r.status, json.loads(r.read()), 413, "body_too_large", "a chunked body over --max-body")
        finally:
            c.close()
    finally:
        s.delete(f"/v1/sessions/{sid}")
    r = s.execute({"code": "print('small ' + 'x' * 10)"})
    assert r["stdout"] == "small xxxxxxxxxx\n", r


def test_body_too_large_refused_before_reading(small_srv):
    """A Content-Length over the maximum gets 413 at once, not after the
    server has read (or waited for) the whole body."""
    c = socket.create_connection(("127.0.0.1", small_srv.port), timeout=5)
    try:
        c.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100000000000\r\n\r\n" + b"{" * 100)
        try:
            data = c.recv(65536)
        except socket.timeout:
            pytest.fail("no answer within 5 s to a request announcing a 100 GB body (--max-body 1000): "
                        "the server waits for the body instead of answering 413")
        assert re.match(rb"HTTP/1\.[01] 413", data), data[:300]
    finally:
        c.close()
    small_srv.healthz()


def test_too_many_requests(narrow_srv):
    s = narrow_srv
    out = {}

    def run(name, code):
        out[name] = s.post("/v1/execute", {"code": code}, timeout=60)

    t1 = threading.Thread(target=run, args=("a", "import time\ntime.sleep(2.5)\nprint('a')"))
    t1.start()
    h = s.wait_running(lambda n: n == 1, 10)
    assert h["running"] == 1, h
    t2 = threading.Thread(target=run, args=("b", "print('b')"))
    t2.start()
    time.sleep(0.5)                     # b waits in the queue (size 1)
    st, hdrs, body = s.post("/v1/execute", {"code": "print('c')"})
    check_error(st, body, 429, "too_many_requests", "a third execution with 1 running and 1 queued")
    ra = hdrs.get("retry-after", "")
    assert ra.isdigit(), f"429 without a Retry-After in seconds: {hdrs}"
    t1.join(30)
    t2.join(30)
    for name in ("a", "b"):
        st, _, r = out[name]
        assert st == 200 and r["stdout"] == f"{name}\n", (name, st, r)
    assert s.execute({"code": "print('d')"})["stdout"] == "d\n"
    types, samples = metrics(s)
    rej = [f for f, t in types.items() if "reject" in f]
    assert rej and sum(count(samples, f) for f in rej) >= 1, (rej, types)


def test_requests_queued_on_one_session_hold_no_slots(narrow_srv):
    # One execution at a time, a queue of one: two cells on one session,
    # the second waiting for the first, must not take the queue from another
    # client's one-shot run (a session runs one cell at a time anyway).
    s = narrow_srv
    sid = s.open_session()["id"]
    out = {}
    try:
        def cell(name, code):
            out[name] = s.post(f"/v1/sessions/{sid}/execute", {"code": code}, timeout=60)
        t1 = threading.Thread(target=cell, args=("a", "import time\ntime.sleep(2)\nprint('a')"))
        t1.start()
        time.sleep(0.7)
        t2 = threading.Thread(target=cell, args=("b", "print('b')"))
        t2.start()
        time.sleep(0.5)                    # b waits for the session's turn, not for a slot
        st, _, r = s.post("/v1/execute", {"code": "print('c')"}, timeout=60)
        assert st == 200 and r["stdout"] == "c\n", \
            f"a request queued on a busy session held the server's queue: {st} {r!r:.300}"
        t1.join(30)
        t2.join(30)
        for name in ("a", "b"):
            st, _, r = out[name]
            assert st == 200 and r["stdout"] == f"{name}\n", (name, st, r)
    finally:
        s.delete(f"/v1/sessions/{sid}")


def test_max_sessions(narrow_srv):
    s = narrow_srv
    ids = [s.open_session()["id"] for _ in range(2)]
    try:
        st, hdrs, b = s.post("/v1/sessions", {})
        check_error(st, b, 429, None, "a third session with --max-sessions 2")
        assert "2" in b["error"]["message"], b
        s.delete(f"/v1/sessions/{ids.pop()}")
        ids.append(s.open_session()["id"])
    finally:
        for i in ids:
            s.delete(f"/v1/sessions/{i}")


# ------------------------------------------------------------ hostile corpus

def parse_header(path):
    meta = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            t = line.strip()
            if t.startswith("#!"):
                continue
            if t.startswith("//"):
                t = t[2:]
            elif t.startswith("#"):
                t = t[1:]
            else:
                break
            m = re.match(r"\s*([a-z][a-z-]*)\s*:\s*(.*?)\s*$", t)
            if m:
                meta[m.group(1)] = m.group(2)
    return meta


def test_hostile_corpus(srv):
    assert os.path.isdir(SHARED_HOSTILE), f"hostile corpus missing: {SHARED_HOSTILE}"
    probes = sorted(n for n in os.listdir(SHARED_HOSTILE) if not n.startswith(("README", ".")))
    assert probes, "no probes"
    m = mark()

    def run(name):
        path = os.path.join(SHARED_HOSTILE, name)
        meta = parse_header(path)
        body = {"language": meta.get("lang"), "code": open(path, encoding="utf-8").read(),
                "env": marker_env(m), "timeout_s": 5, "memory_mb": 256}
        for tok in meta.get("limits", "").split():
            k, _, v = tok.partition("=")
            if k in ("timeout_s", "memory_mb"):
                body[k] = float(v) if "." in v else int(v)
        t0 = time.monotonic()
        st, _, r = srv.post("/v1/execute", body, timeout=body["timeout_s"] + 60)
        return name, meta, st, r, time.monotonic() - t0

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, probes))
    problems = []
    for name, meta, st, r, wall in results:
        if st != 200:
            problems.append(f"{name}: HTTP {st} {r!r:.300}")
            continue
        try:
            check_result(r, name)
        except AssertionError as e:
            problems.append(f"{name}: invalid result: {e}")
            continue
        if "ESCAPED" in r["stdout"]:
            problems.append(f"{name}: ESCAPED: {r['stdout'][-800:]!r}")
        if SECRET in json.dumps(r):
            problems.append(f"{name}: the server's secret appears in the result")
        if r["status"] == "sandbox_error":
            problems.append(f"{name}: sandbox_error {r['error']}")
        if meta.get("expect-status"):
            if r["status"] != meta["expect-status"]:
                problems.append(f"{name}: status {r['status']}, header expects {meta['expect-status']}")
        elif not re.search(r"(?m)^CONTAINED\b", r["stdout"]) and \
                r["status"] not in ("timeout", "memory_limit", "output_limit") and r["signal"] != 31:
            problems.append(f"{name}: no CONTAINED verdict and no limit (status {r['status']}): "
                            f"stdout={r['stdout'][-500:]!r} stderr={r['stderr'][-500:]!r}")
    left = wait_no_env(needle(m), 5)
    if left:
        problems.append(f"sandbox processes outlived their runs: {left}")
    h = srv.healthz()
    assert h["status"] == "ok" and h["running"] == 0, h
    assert not problems, "hostile corpus through /v1/execute:\n  " + "\n  ".join(problems)
    assert srv.execute({"code": "print('still fine')"})["stdout"] == "still fine\n"


# ------------------------------------------------------------------ SIGTERM

def test_sigterm_drains(pids_fence):
    s = Server(name="drain server").start()
    m = mark()
    out = {}
    try:
        sid = s.open_session({"env": marker_env(m)})["id"]
        s.cell(sid, "x = 1")

        def run(name, path, body):
            try:
                out[name] = s.post(path, body, timeout=60)
            except (OSError, http.client.HTTPException) as e:
                out[name] = e

        one = lambda code: {"code": code, "timeout_s": 120, "env": marker_env(m)}
        cell = f"/v1/sessions/{sid}/execute"
        ts = [threading.Thread(target=run, args=("short", "/v1/execute", one("import time\ntime.sleep(2)\nprint('finished')"))),
              threading.Thread(target=run, args=("long", "/v1/execute", one("import time\nwhile True: time.sleep(0.1)"))),
              threading.Thread(target=run, args=("cell", cell, {"code": "import time\nwhile True: time.sleep(0.1)"}))]
        for t in ts:
            t.start()
        h = s.wait_running(lambda n: n == 3, 10)
        assert h["running"] == 3, h
        # a cell queued behind the endless one on the same session
        tq = threading.Thread(target=run, args=("queued", cell, {"code": "print('queued ran')"}))
        tq.start()
        ts.append(tq)
        time.sleep(0.5)
        t0 = time.monotonic()
        s.sigterm()
        time.sleep(0.5)
        try:
            st, _, _ = s.get("/healthz", timeout=3)
        except (OSError, http.client.HTTPException):
            st = None
        assert st in (None, 503), f"a new request after SIGTERM was answered {st}"
        rc = s.wait_exit(25)
        elapsed = time.monotonic() - t0
        for t in ts:
            t.join(10)
        assert rc == 0, f"exit code {rc} after SIGTERM\n{s.stderr_text()[-2000:]}"
        assert elapsed < 16, f"draining took {elapsed:.1f} s with a 10 s grace period"
        short = out.get("short")
        assert isinstance(short, tuple) and short[0] == 200 and short[2]["status"] == "ok" and \
            short[2]["stdout"] == "finished\n", f"the running execution was not let finish: {short!r:.1000}"
        # Past the grace, what still runs is stopped and answered, not cut off;
        # what waits does not run and is told so.
        for name in ("long", "cell"):
            r = out.get(name)
            assert isinstance(r, tuple) and r[0] == 200 and r[2]["status"] == "interrupted", \
                f"the endless {name} was not stopped and answered: {r!r:.1000}"
        q = out.get("queued")
        assert isinstance(q, tuple) and q[0] == 409 and q[2]["error"]["code"] == "session_closed", \
            f"the queued cell: {q!r:.1000}"
        assert elapsed > 1.5, "the server exited before the short execution could finish"
        assert not wait_no_env(needle(m), 3), "sandbox processes outlived the drained server"
        assert not corral_cgroups_of(s.pid), f"cgroups left: {corral_cgroups_of(s.pid)}"
    finally:
        s.stop()

"""MCP: the official TypeScript SDK (@modelcontextprotocol/sdk, from npm,
installed by the test set-up into tests/mcp/node_modules) against `corral
mcp` over stdio and `corral serve` at /mcp, plus the protocol's error paths
by hand: malformed lines, unknown methods, invalid params, versions,
sessions, Origin."""

import http.client
import json
import os
import shutil
import subprocess
import threading
import time

import pytest

from conftest import REPO, corral_path, free_port, serving

MCP_DIR = REPO / "tests" / "mcp"


@pytest.fixture(scope="module")
def server():
    port = free_port()
    with serving(["--listen", f"127.0.0.1:{port}"], b"listening on"):
        yield port


def test_official_sdk_stdio_and_http(server):
    if not (MCP_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail("the MCP SDK is not installed: run `make test` (npm ci in tests/mcp)")
    node = shutil.which("node") or "/usr/bin/node"
    r = subprocess.run([node, "mcp-check.mjs"], cwd=MCP_DIR, capture_output=True, timeout=300,
                       env={**os.environ, "CORRAL": corral_path(),
                            "BASE": f"http://127.0.0.1:{server}"})
    out = r.stdout.decode()
    assert r.returncode == 0 and "FAIL" not in out, out + r.stderr.decode()[-3000:]
    assert "14 passed, 0 failed" in out, out


def stdio(lines, timeout=60):
    p = subprocess.run([corral_path(), "mcp"], input="".join(l + "\n" for l in lines).encode(),
                       capture_output=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return [json.loads(l) for l in p.stdout.decode().splitlines()]


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def test_stdio_errors_and_keeps_running():
    out = stdio([json.dumps(INIT), "this is not json", "[1, 2]",
                 json.dumps({"jsonrpc": "2.0", "id": 2, "method": "no/such"}),
                 json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "run_python", "arguments": {"code": 7}}}),
                 json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                             "params": {"arguments": {}}}),
                 json.dumps({"jsonrpc": "1.0", "id": 5, "method": "ping"}),
                 json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                 json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": 5}),
                 json.dumps({"jsonrpc": "2.0", "id": 7, "method": "notifications/cancelled"}),
                 json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"})])
    by_id = {m.get("id"): m for m in out}
    assert out[0]["result"]["serverInfo"]["name"] == "corral"
    assert "instructions" in out[0]["result"]
    errors = [m["error"]["code"] for m in out if "error" in m]
    assert -32700 in errors            # parse error
    assert -32600 in errors            # invalid request (array, jsonrpc 1.0)
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[3]["error"]["code"] == -32602 and "code" in by_id[3]["error"]["message"]
    assert by_id[4]["error"]["code"] == -32602
    assert by_id[6]["result"] == {}   # still answering after all that
    # a request (it has an id) named like a notification is still answered
    assert by_id[7]["error"]["code"] == -32601
    assert len(out) == 9               # the notifications got no answer, not even for bad params


@pytest.mark.parametrize("asked,answered", [("2025-06-18", "2025-06-18"),
                                            ("2024-11-05", "2024-11-05"),
                                            ("2025-03-26", "2025-03-26"),
                                            ("2025-11-25", "2025-11-25"),
                                            ("2099-01-01", "2025-11-25")])
def test_version_negotiation(asked, answered):
    init = json.loads(json.dumps(INIT))
    init["params"]["protocolVersion"] = asked
    assert stdio([json.dumps(init)])[0]["result"]["protocolVersion"] == answered


def post(port, body, headers=None, method="POST"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers or {})
    c.request(method, "/mcp", body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader("Mcp-Session-Id"), data


def test_http_sessions_origin_and_methods(server):
    st, sid, body = post(server, INIT)
    assert st == 200 and sid, body
    assert post(server, INIT, {"Origin": "http://evil.example"})[0] == 403
    assert post(server, {"jsonrpc": "2.0", "id": 2, "method": "ping"})[0] == 400   # no session id
    assert post(server, {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                {"Mcp-Session-Id": "nope"})[0] == 404
    assert post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"Mcp-Session-Id": sid})[0] == 202
    st, _, body = post(server, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                "params": {"name": "run_python", "arguments": {"code": "print(2+3)"}}},
                       {"Mcp-Session-Id": sid, "Origin": "http://localhost:6274"})
    assert st == 200 and json.loads(body)["result"]["structuredContent"]["stdout"] == "5\n"
    assert post(server, None, {"Mcp-Session-Id": sid}, method="GET")[0] == 405
    assert post(server, None, {"Mcp-Session-Id": sid}, method="DELETE")[0] == 200
    assert post(server, {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                {"Mcp-Session-Id": sid})[0] == 404


def call(sid, code, cid=9):
    return {"jsonrpc": "2.0", "id": cid, "method": "tools/call",
            "params": {"name": "run_python", "arguments": {"code": code}}}


def test_http_sessions_count_against_max_sessions_and_delete_stops_calls():
    port = free_port()
    with serving(["--listen", f"127.0.0.1:{port}", "--max-sessions", "2"], b"listening on"):
        sids = []
        for _ in range(2):
            st, sid, body = post(port, INIT)
            assert st == 200 and sid, body
            sids.append(sid)
        st, _, body = post(port, INIT)
        assert st == 429 and b"Too many sessions" in body, (st, body)
        # and against the API's sessions
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("POST", "/v1/sessions", body="{}", headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 429, (r.status, r.read())
        c.close()
        # DELETE while a call runs: the call stops instead of running on
        out = {}
        t = threading.Thread(target=lambda: out.update(r=post(port, call(sids[0], "import time\ntime.sleep(20)"),
                                                              {"Mcp-Session-Id": sids[0]})))
        t.start()
        time.sleep(1.5)
        t0 = time.monotonic()
        assert post(port, None, {"Mcp-Session-Id": sids[0]}, method="DELETE")[0] == 200
        t.join(30)
        assert not t.is_alive() and time.monotonic() - t0 < 8, "the call ran on after its session was deleted"
        # its session is gone, so a new MCP session opens under the maximum
        st, sid, body = post(port, INIT)
        assert st == 200 and sid, body


def test_http_initialize_as_a_notification_is_refused(server):
    note = {k: v for k, v in INIT.items() if k != "id"}
    st, sid, body = post(server, note)
    assert st == 400 and not sid and b"request" in body, (st, body)


def test_list_files_many_and_odd_names():
    code = ("import os\nos.makedirs('d')\n"
            "for i in range(1200): open(f'd/r\u00e9sum\u00e9_{i:04}.txt', 'w').close()\n"
            "open(b'd/bad\\xff\\xfename', 'w').close()\nprint('made')")
    out = stdio([json.dumps(INIT),
                 json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "run_python", "arguments": {"code": code}}}),
                 json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "list_files", "arguments": {"path": "d"}}}),
                 json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                             "params": {"name": "list_files", "arguments": {"path": "/workspace/"}}})])
    by_id = {m.get("id"): m for m in out}
    assert by_id[2]["result"]["structuredContent"]["stdout"] == "made\n", by_id[2]
    r = by_id[3]["result"]
    assert not r["isError"], r
    text = r["content"][0]["text"]
    lines = text.splitlines()
    assert len(lines) == 1001 and lines[-1] == "(201 more entries not listed)", lines[-3:]
    assert "r\u00e9sum\u00e9_0000.txt\t0 bytes" in lines, lines[:3]
    top = by_id[4]["result"]
    assert not top["isError"] and "d/\t" in top["content"][0]["text"], top


def stdio_cancel(code, delay):
    """Sends a call, cancels it after `delay` s, sends another: the answer
    that comes (which must be the second's) and the seconds it took."""
    p = subprocess.Popen([corral_path(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        def send(m):
            p.stdin.write((json.dumps(m) + "\n").encode())
            p.stdin.flush()
        send(INIT)
        assert json.loads(p.stdout.readline())["id"] == 1
        send(call(None, code, cid=5))
        time.sleep(delay)
        t0 = time.monotonic()
        send({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 5, "reason": "user pressed stop"}})
        send({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
              "params": {"name": "run_python", "arguments": {"code": "print('next')"}}})
        nxt = json.loads(p.stdout.readline())
        took = time.monotonic() - t0
    finally:
        p.stdin.close()
        p.wait(30)
    assert p.returncode == 0
    assert nxt["id"] == 6, f"the cancelled call was answered: {nxt}"
    assert nxt["result"]["structuredContent"]["stdout"] == "next\n", nxt
    return took


def test_stdio_cancelled_call_stops_and_is_not_answered():
    took = stdio_cancel("import time\nprint('start', flush=True)\ntime.sleep(30)", 1.5)
    assert took < 10, f"the cancelled call ran on for {took:.1f} s"


def test_stdio_cancel_before_the_sandbox_started():
    # Cancelled at once: the call is queued or still opening its sandbox
    # (the first call of a language), not running yet. It must not run on.
    took = stdio_cancel("import time\ntime.sleep(30)", 0)
    assert took < 15, f"the cancelled call ran on for {took:.1f} s"


def test_http_calls_queued_on_one_mcp_session_hold_no_slots():
    # One execution at a time and a queue of one: a second call waiting for
    # the first on the same MCP session must not take the queue from another
    # client's one-shot run; past the queue a call is 429.
    port = free_port()
    with serving(["--listen", f"127.0.0.1:{port}", "--max-concurrent", "1", "--queue", "1"],
                 b"listening on"):
        st, sid, _ = post(port, INIT)
        h = {"Mcp-Session-Id": sid}
        post(port, call(sid, "1"), h)        # the sandbox is up before the timing starts
        out = {}
        ta = threading.Thread(target=lambda: out.update(a=post(port, call(sid, "import time\ntime.sleep(3)\nprint('a')", 1), h)))
        ta.start()
        time.sleep(0.7)
        tb = threading.Thread(target=lambda: out.update(b=post(port, call(sid, "print('b')", 2), h)))
        tb.start()
        time.sleep(0.5)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("POST", "/v1/execute", body=json.dumps({"code": "print('c')"}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        c.close()
        assert r.status == 200 and json.loads(body)["stdout"] == "c\n", (r.status, body)
        ta.join(30)
        tb.join(30)
        for k in ("a", "b"):
            st, _, body = out[k]
            assert st == 200 and json.loads(body)["result"]["structuredContent"]["stdout"] == f"{k}\n", (k, st, body)
        # Past the queue: the running call holds the slot, a one-shot waits
        # in the queue, another MCP session's call is refused with 429.
        st, sid2, _ = post(port, INIT)
        post(port, call(sid2, "1"), {"Mcp-Session-Id": sid2})
        ta = threading.Thread(target=lambda: out.update(a=post(port, call(sid, "import time\ntime.sleep(3)", 3), h)))
        ta.start()
        time.sleep(0.7)
        def oneshot():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("POST", "/v1/execute", body=json.dumps({"code": "print(1)"}),
                      headers={"Content-Type": "application/json"})
            out["q"] = c.getresponse().status
            c.close()
        tq = threading.Thread(target=oneshot)
        tq.start()
        time.sleep(0.5)
        st, _, body = post(port, call(sid2, "print(2)", 4), {"Mcp-Session-Id": sid2})
        assert st == 429 and json.loads(body)["error"]["code"] == -32000, (st, body)
        ta.join(30)
        tq.join(30)
        assert out["q"] == 200, out

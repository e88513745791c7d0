# probe: kills PID 1 and every process it can signal (kill -1), then checks that the sandbox init survived
# lang: python
import ast, ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
wins, missing, notes = [], [], []


def sc(nr, *args):
    """Raw syscall (x86_64 numbers): (return value, errno)."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else ctypes.c_char_p(a) if isinstance(a, bytes) else a
            for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    return r, ctypes.get_errno()


def in_child(fn):
    """Run fn in a forked child, so a seccomp kill ends only the child.
    Returns what fn returned, ("sig", N) if it was killed, or ("exc", text)."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        try:
            out = repr(fn())
        except BaseException as e:
            out = repr(("exc", repr(e)))
        os.write(wr, out.encode())
        os._exit(0)
    os.close(wr)
    data = b""
    while True:
        chunk = os.read(rd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(rd)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        return ("sig", os.WTERMSIG(st))
    try:
        return ast.literal_eval(data.decode())
    except Exception:
        return ("exc", data.decode(errors="replace"))


def try_sc(label, nr, *args):
    """A syscall that must fail: a success (>= 0) is a win for the attacker."""
    res = in_child(lambda: ("ret",) + sc(nr, *args))
    if res[0] == "ret" and res[1] >= 0:
        wins.append(f"{label}={res[1]}")
    else:
        notes.append(f"{label}:{res[2] if res[0] == 'ret' else res}")
    return res


def host_like():
    """True when this process is in the host's user namespace (identity uid map)."""
    try:
        return open("/proc/self/uid_map").read().split()[:3] == ["0", "0", "4294967295"]
    except OSError:
        return True


def guard():
    """Attempts below could change the host if the walls were gone: do not make them then."""
    if host_like():
        print("ESCAPED: runs in the host's user namespace; destructive attempts skipped")
        raise SystemExit(0)


def verdict():
    if wins:
        print("ESCAPED", wins, missing)
    elif missing:
        print("WALL-MISSING", missing, notes)
    else:
        print("CONTAINED", notes)
import signal, time
guard()
pids = [p for p in os.listdir("/proc") if p.isdigit()]
if len(pids) > 8:       # not a small pid namespace: signalling everything would hit the host
    print("ESCAPED:", len(pids), "processes visible; kill(-1) skipped")
    raise SystemExit(0)
if os.getpid() == 1:
    missing.append("the program runs as PID 1: no init reaps orphans")
for sig in (signal.SIGKILL, signal.SIGSTOP):
    try:
        os.kill(1, sig)
        notes.append(f"kill(1,{sig}) returned 0")
    except OSError as e:
        notes.append(f"kill(1,{sig}):{e.errno}")
try:
    os.kill(-1, signal.SIGKILL)
except OSError as e:
    notes.append(f"kill(-1):{e.errno}")
time.sleep(0.2)
try:
    state = [l for l in open("/proc/1/status").read().splitlines() if l.startswith("State:")][0]
    if state.split()[1] in ("Z", "X", "T", "t"):
        wins.append(f"PID 1 is {state}")
except (OSError, IndexError):
    wins.append("PID 1 is gone")
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
notes.append(f"visible pids {pids}")
if len(pids) > 8:
    wins.append(f"{len(pids)} processes visible")
verdict()

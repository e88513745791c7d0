# probe: perf_event_open (allowed to users at paranoid 2), bpf, userfaultfd (user-mode-only is allowed to users), keyrings
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
import struct
attr = ctypes.create_string_buffer(struct.pack("<IIQQQQQ", 1, 64, 0, 0, 0, 0, 1 | 32 | 64) + b"\0" * 8, 64)
try_sc("perf_event_open(sw cpu-clock, self, user only)", 298, attr, 0, -1, -1, 0)
battr = ctypes.create_string_buffer(struct.pack("<IIII", 2, 4, 4, 1) + b"\0" * 112, 128)
try_sc("bpf(MAP_CREATE array)", 321, 0, battr, 128)
try_sc("userfaultfd(USER_MODE_ONLY)", 323, 0x80000 | 1)
try_sc("userfaultfd(0)", 323, 0x80000)
try:
    os.close(os.open("/dev/userfaultfd", os.O_RDWR))
    wins.append("/dev/userfaultfd opens")
except OSError:
    pass
try_sc("keyctl(JOIN_SESSION_KEYRING)", 250, 1, 0)
try_sc("keyctl(GET_KEYRING_ID user, create)", 250, 0, -4, 1)
try_sc("add_key(user, process keyring)", 248, b"user", b"corral-probe", b"data", 4, -2)
try_sc("request_key(user)", 249, b"user", b"corral-probe", 0, 0)
verdict()

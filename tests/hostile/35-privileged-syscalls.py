# probe: privileged kernel calls whose permission check comes before argument checks (errno tells whether it passed)
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
guard()
import time
EFAULT, ENOENT = 14, 2


def passed(label, nr, bad_errno, *args):
    """A call that fails with bad_errno got past the permission check."""
    res = in_child(lambda: ("ret",) + sc(nr, *args))
    if res[0] == "ret" and (res[1] >= 0 or res[2] == bad_errno):
        wins.append(f"{label}:{res[1:]}")
    else:
        notes.append(f"{label}:{res}")


passed("init_module", 175, EFAULT, 0, 0, b"")
passed("delete_module", 176, ENOENT, b"corral_no_such_module", 0o4000)
passed("swapoff", 168, ENOENT, b"/corral-no-such-swap")
passed("acct", 163, ENOENT, b"/corral-no-such-file")
try_sc("iopl(3)", 172, 3)
try_sc("ioperm(0x80)", 173, 0x80, 1, 1)
try_sc("syslog(SIZE_BUFFER)", 103, 10, 0, 0)
try_sc("reboot(CAD_OFF)", 169, 0xfee1dead, 672274793, 0, 0)
ts = (ctypes.c_long * 2)(int(time.time()), 0)
try_sc("clock_settime(REALTIME)", 227, 0, ts)


def shocker():
    # name_to_handle_at on "/", then open_by_handle_at: needs CAP_DAC_READ_SEARCH (the "shocker" breakout)
    fh = ctypes.create_string_buffer(8 + 128)
    ctypes.memmove(fh, (ctypes.c_uint32 * 1)(128), 4)
    mnt = ctypes.c_int(0)
    r, e = sc(303, -100, b"/", fh, ctypes.byref(mnt), 0)
    if r < 0:
        return ("ret", -1, e)
    fd = os.open("/", os.O_RDONLY)
    return ("ret",) + sc(304, fd, fh, 0)


res = in_child(shocker)
if res[0] == "ret" and res[1] >= 0:
    wins.append("open_by_handle_at")
else:
    notes.append(f"open_by_handle_at:{res}")
try:
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    if os.read(fd, 4096):
        wins.append("/dev/kmsg readable")
except OSError:
    pass
verdict()

# probe: looks for inherited file descriptors and for writable or suid-capable mounts outside /workspace and /tmp
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
fds = os.listdir("/proc/self/fd")
for fd in fds:
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue                             # the fd listdir itself used, already closed
    if int(fd) > 2:
        missing.append(f"inherited fd {fd} -> {target}")
    elif target.startswith(("/dev/pts", "/dev/tty", "/dev/console")):
        missing.append(f"fd {fd} is a host terminal {target}")
    elif target.startswith("/") and not target.startswith(("/dev/null", "/workspace", "/tmp")):
        wins.append(f"fd {fd} is a host file {target}")
WRITABLE = ("/workspace", "/tmp", "/proc", "/dev")
for line in open("/proc/self/mountinfo"):
    f = line.split()
    mp, opts = f[4], f[5].split(",")
    sep = f.index("-")
    fstype, source, super_opts = f[sep + 1], f[sep + 2], f[sep + 3].split(",")
    inside_writable = any(mp == w or mp.startswith(w + "/") for w in WRITABLE)
    if "rw" in opts and not inside_writable:
        missing.append(f"{mp} is mounted rw")
    if "nosuid" not in opts and mp not in ("/proc",) and not mp.startswith("/proc/"):
        missing.append(f"{mp} lacks nosuid")
    if mp in ("/workspace", "/tmp") and fstype != "tmpfs":
        wins.append(f"{mp} is {fstype} from {source}, not a private tmpfs")
verdict()

# probe: injects keystrokes into a terminal with TIOCSTI / TIOCLINUX (also with high bits set on the request)
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
import glob
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
ch = ctypes.c_char(b"#")
lin = ctypes.create_string_buffer(b"\x06\x00")     # TIOCL_GETSHIFTSTATE-ish subcommand byte

fds = {0: "fd0", 1: "fd1", 2: "fd2"}
for fd in (0, 1, 2):
    if os.isatty(fd):
        missing.append(f"fd {fd} is a terminal ({os.ttyname(fd)})")
for path in ["/dev/tty", "/dev/console", "/dev/tty0", "/dev/tty1"] + glob.glob("/dev/pts/[0-9]*"):
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        fds[fd] = path
        notes.append(f"opened {path}")
    except OSError as e:
        notes.append(f"{path}:{e.errno}")

for fd, what in fds.items():
    for req in (TIOCSTI, TIOCSTI | (1 << 32), TIOCSTI | (0xdead << 32)):
        res = in_child(lambda: ("ret",) + sc(16, fd, req, ctypes.byref(ch)))
        if res[0] == "ret" and res[1] >= 0:
            wins.append(f"TIOCSTI {hex(req)} on {what}")
    for req in (TIOCLINUX, TIOCLINUX | (1 << 32)):
        res = in_child(lambda: ("ret",) + sc(16, fd, req, lin))
        if res[0] == "ret" and res[1] >= 0:
            wins.append(f"TIOCLINUX {hex(req)} on {what}")
# a session leader without a controlling terminal cannot get one back from the host
if os.getsid(0) != os.getpid() and os.path.exists("/dev/tty"):
    try:
        os.close(os.open("/dev/tty", os.O_RDWR))
        wins.append("/dev/tty opens: the sandbox shares a controlling terminal")
    except OSError:
        pass
verdict()

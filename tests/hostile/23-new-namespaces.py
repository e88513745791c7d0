# probe: creates new namespaces with clone, clone3 and unshare (the first step of most container escapes)
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
NS = {"NEWUSER": 0x10000000, "NEWNET": 0x40000000, "NEWNS": 0x00020000, "NEWPID": 0x20000000,
      "NEWIPC": 0x08000000, "NEWUTS": 0x04000000, "NEWCGROUP": 0x02000000, "NEWTIME": 0x00000080}
SIGCHLD = 17


def raw_clone(flags):
    r, e = sc(56, flags | SIGCHLD, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)              # the new child: leave at once
    if r > 0:
        os.waitpid(r, 0)
    return ("ret", r, e)


def raw_clone3(flags):
    args = struct.pack("<8Q", flags, 0, 0, 0, SIGCHLD, 0, 0, 0)
    buf = ctypes.create_string_buffer(args, len(args))
    r, e = sc(435, buf, len(args))
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    return ("ret", r, e)


for name, flag in NS.items():
    res = in_child(lambda: ("ret",) + sc(272, flag))
    if res[0] == "ret" and res[1] == 0:
        wins.append(f"unshare(CLONE_{name})")
    for label, fn in (("clone", raw_clone), ("clone3", raw_clone3)):
        if label == "clone" and flag & 0xff:
            continue                 # CLONE_NEWTIME overlaps clone()'s exit-signal byte: clone3/unshare only
        res = in_child(lambda: fn(flag))
        if res[0] == "ret" and res[1] > 0:
            wins.append(f"{label}(CLONE_{name})")
        elif res[0] != "ret":
            notes.append(f"{label}(CLONE_{name}):{res}")

# util-linux unshare as well (what a shell-minded model would type)
rc = os.system("unshare --user --map-root-user true >/dev/null 2>&1")
if rc == 0:
    wins.append("unshare --user --map-root-user")
verdict()

# probe: writes past --disk in /workspace and /tmp (must stop with ENOSPC on the sandbox's own tmpfs, not the host disk)
# lang: python
# limits: timeout_s=5 memory_mb=256 disk_mb=16
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
import errno
LIMIT = 16 << 20
for d in ("/workspace", "/tmp"):
    written, err = 0, None
    try:
        with open(os.path.join(d, "fill.bin"), "wb") as f:
            chunk = b"\1" * (1 << 20)
            for _ in range(64):
                f.write(chunk)
                f.flush()
                written += len(chunk)
    except OSError as e:
        err = e.errno
    try:
        os.remove(os.path.join(d, "fill.bin"))
    except OSError:
        pass
    sv = os.statvfs(d)
    size = sv.f_blocks * sv.f_frsize
    if written > LIMIT + (1 << 20):
        wins.append(f"wrote {written >> 20} MiB to {d} with --disk 16")
    elif err not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):    # EFBIG: RLIMIT_FSIZE, the second line
        missing.append(f"{d}: stopped with errno {err}, not ENOSPC/EFBIG")
    if size > LIMIT + (1 << 20):
        missing.append(f"{d} is a {size >> 20} MiB filesystem, not 16 MiB")
    notes.append(f"{d}:{written >> 20}MiB errno={err} fs={size >> 20}MiB")
verdict()

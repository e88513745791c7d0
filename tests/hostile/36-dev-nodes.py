# probe: opens every device node it can find (kvm, mem, disks, loop, fuse, tun, consoles) beyond the minimal /dev
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
import stat
ALLOWED = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}
candidates = {"/dev/kvm", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/sda", "/dev/vda", "/dev/nvme0n1",
              "/dev/loop0", "/dev/loop-control", "/dev/fuse", "/dev/net/tun", "/dev/console", "/dev/tty0",
              "/dev/tty1", "/dev/hwrng", "/dev/cpu/0/msr", "/dev/btrfs-control", "/dev/autofs", "/dev/vsock",
              "/dev/vhost-vsock", "/dev/dri/card0", "/dev/uinput"}
for root, dirs, files in os.walk("/dev"):
    if root.startswith(("/dev/pts", "/dev/shm", "/dev/mqueue", "/dev/fd")):
        continue
    for f in files:
        candidates.add(os.path.join(root, f))
seen = []
for path in sorted(candidates):
    try:
        st = os.lstat(path)
    except OSError:
        continue
    if not (stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)):
        continue
    seen.append(path)
    if path in ALLOWED:
        continue
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        os.close(fd)
        wins.append(f"opened {path}")
    except OSError as e:
        notes.append(f"{path}:{e.errno}")
extra = [p for p in seen if p not in ALLOWED]
if extra and not wins:
    notes.append(f"device nodes present but closed: {extra}")
notes.append(f"nodes {seen}")
verdict()

# probe: reads kernel files of /proc and /sys that describe the host (kcore, keys, timer_list, kallsyms, kmsg, /sys)
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


def content(path, n=4096):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, n)
    finally:
        os.close(fd)


for path in ("/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/kmsg",
             "/proc/vmallocinfo", "/proc/slabinfo", "/proc/pagetypeinfo"):
    try:
        data = content(path)
        if data.strip():
            wins.append(f"{path}: {len(data)} bytes")
        else:
            notes.append(f"{path}: empty")
    except OSError as e:
        notes.append(f"{path}:{e.errno}")

# kernel addresses defeat KASLR: must be hidden (all zero) or unreadable
try:
    with open("/proc/kallsyms") as f:
        for i, line in enumerate(f):
            if int(line.split()[0], 16) != 0:
                wins.append("/proc/kallsyms shows kernel addresses")
                break
            if i > 2000:
                break
except OSError as e:
    notes.append(f"/proc/kallsyms:{e.errno}")

# /sys should not be there at all
try:
    entries = os.listdir("/sys")
    if entries:
        wins.append(f"/sys lists {sorted(entries)[:8]}")
except OSError as e:
    notes.append(f"/sys:{e.errno}")
for path in ("/sys/class/net", "/sys/kernel/debug", "/sys/firmware", "/sys/fs/cgroup"):
    if os.path.exists(path):
        wins.append(f"{path} exists")
verdict()

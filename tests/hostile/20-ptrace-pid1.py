# probe: ptrace, process_vm_readv, /proc/1/mem and /proc/1/environ against PID 1 (the sandbox init)
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

# a readable address inside PID 1, if its maps are visible at all
addr = 0x400000
try:
    for line in open("/proc/1/maps"):
        lo, perms = line.split()[0].split("-")[0], line.split()[1]
        if perms.startswith("r"):
            addr = int(lo, 16)
            break
except OSError as e:
    notes.append(f"maps:{e.errno}")

for name, req in (("PTRACE_ATTACH", 16), ("PTRACE_SEIZE", 0x4206)):
    try_sc(name, 101, req, 1, 0, 0)


class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def vm_readv():
    buf = ctypes.create_string_buffer(64)
    local = iovec(ctypes.addressof(buf), 64)
    remote = iovec(addr, 64)
    return ("ret",) + sc(310, 1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)


res = in_child(vm_readv)
# EFAULT means the permission check passed and only the address was wrong
if res[0] == "ret" and (res[1] >= 0 or res[2] == 14):
    wins.append(f"process_vm_readv(1)={res[1:]}")
else:
    notes.append(f"process_vm_readv:{res}")

try:
    fd = os.open("/proc/1/mem", os.O_RDONLY)
    wins.append("open(/proc/1/mem)")
    try:
        os.lseek(fd, addr, 0)
        os.read(fd, 16)
        wins.append("read(/proc/1/mem)")
    except OSError:
        pass
except OSError as e:
    notes.append(f"/proc/1/mem:{e.errno}")

# PID 1 must not carry the launcher's environment (an API key leaked that way under bubblewrap)
SANDBOX_VARS = {b"PATH", b"HOME", b"LANG", b"TMPDIR", b"MPLBACKEND", b"PYTHONDONTWRITEBYTECODE"}
try:
    env = open("/proc/1/environ", "rb").read()
    extra = [kv.split(b"=", 1)[0].decode(errors="replace") for kv in env.split(b"\0")
             if kv and kv.split(b"=", 1)[0] not in SANDBOX_VARS]
    if extra:
        wins.append(f"/proc/1/environ carries {extra[:10]}")
    else:
        notes.append(f"/proc/1/environ:{len(env)} bytes, sandbox variables only")
except OSError as e:
    notes.append(f"/proc/1/environ:{e.errno}")
verdict()

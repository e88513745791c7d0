# probe: changes the mount table: tmpfs, remount rw, umount of /proc, pivot_root, the new mount API, mknod of devices
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
AT_FDCWD = -100
MS_REMOUNT, MS_BIND, MS_RDONLY, MNT_DETACH = 0x20, 0x1000, 0x1, 0x2
for d in ("/tmp/m", "/tmp/old", "/tmp/newroot"):
    os.makedirs(d, exist_ok=True)
try_sc("mount(tmpfs)", 165, b"none", b"/tmp/m", b"tmpfs", 0, b"")
try_sc("remount(/usr rw)", 165, b"none", b"/usr", 0, MS_REMOUNT | MS_BIND, 0)
try_sc("remount(/ rw)", 165, b"none", b"/", 0, MS_REMOUNT, 0)
try_sc("bind(/ -> /tmp/newroot)", 165, b"/", b"/tmp/newroot", 0, MS_BIND, 0)
# uncovering /proc: overmounts hide kcore and friends; removing them is the attack
mounts = [l.split()[4] for l in open("/proc/self/mountinfo")]
for mp in sorted({m for m in mounts if m == "/proc" or m.startswith("/proc/")}, key=len, reverse=True):
    try_sc(f"umount2({mp})", 166, mp.encode(), MNT_DETACH)
try_sc("pivot_root", 155, b"/tmp", b"/tmp/old")
try_sc("open_tree(/, CLONE)", 428, AT_FDCWD, b"/", 1)              # OPEN_TREE_CLONE
try_sc("fsopen(tmpfs)", 430, b"tmpfs", 0)
try_sc("fspick(/)", 433, AT_FDCWD, b"/", 0)
attr = ctypes.create_string_buffer(32)
ctypes.memmove(attr, (ctypes.c_uint64 * 4)(0, 1, 0, 0), 32)         # attr_clr = MOUNT_ATTR_RDONLY
try_sc("mount_setattr(/usr, clear RDONLY)", 442, AT_FDCWD, b"/usr", 0, attr, 32)
try_sc("mknod(block 8:0)", 133, b"/tmp/sda", 0o60600, (8 << 8) | 0)
try_sc("mknod(char 1:1 mem)", 133, b"/tmp/mem", 0o20600, (1 << 8) | 1)
try_sc("chroot(/tmp)", 161, b"/tmp")
try:
    open("/usr/corral-mount-test", "w")
    wins.append("/usr is writable")
except OSError:
    pass
verdict()

# probe: calls getpid through the x32 ABI and the i386 int 0x80 gate, and changes its personality (exec domain, page zero)
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
import mmap, subprocess


def x32_getpid():
    r, e = sc(39 | 0x40000000)
    return ("ret", r, e, os.getpid())


res = in_child(x32_getpid)
if res[0] == "ret" and res[1] == res[3]:
    wins.append("x32 getpid answered")
else:
    notes.append(f"x32:{res}")


def int80_getpid():
    code = b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"      # mov eax, 20 (i386 getpid); int 0x80; ret
    try:
        m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except OSError as e:
        return ("ret", -1, e.errno, 0)
    m.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    f = ctypes.CFUNCTYPE(ctypes.c_long)(addr)
    r = f()
    return ("ret", ctypes.c_int(r).value, 0, os.getpid())


res = in_child(int80_getpid)
if res[0] == "ret" and res[1] == res[3]:
    wins.append("i386 int 0x80 getpid answered")
else:
    notes.append(f"int80:{res}")

PER_BSD, MMAP_PAGE_ZERO = 0x0006, 0x0100000


def persona(value):
    def run():
        r, e = sc(135, value)
        cur, _ = sc(135, 0xffffffff)
        return ("ret", r, e, cur)
    return run


res = in_child(persona(PER_BSD))
if res[0] == "ret" and res[1] >= 0 and (res[3] & 0xff) == PER_BSD:
    missing.append("personality(PER_BSD) accepted: the syscall filter lets the exec domain change")
else:
    notes.append(f"PER_BSD:{res}")


def page_zero():
    r, e = sc(135, MMAP_PAGE_ZERO)
    if r < 0:
        return ("ret", r, e, "")
    out = subprocess.run(["/usr/bin/python3", "-c", "print(open('/proc/self/maps').read().split('\\n')[0])"],
                         capture_output=True, text=True).stdout
    return ("ret", r, e, out.strip())


res = in_child(page_zero)
if res[0] == "ret" and res[3].startswith("00000000-"):
    wins.append(f"MMAP_PAGE_ZERO mapped page zero: {res[3]}")
elif res[0] == "ret" and res[1] >= 0:
    missing.append("personality(MMAP_PAGE_ZERO) accepted (page zero still not mapped)")
else:
    notes.append(f"page_zero:{res}")
verdict()

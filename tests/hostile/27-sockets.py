# probe: opens socket families untrusted code never needs (packet, vsock, alg, key, raw) and talks to the audit subsystem
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
import socket, struct


def make(family, type_, proto):
    def run():
        try:
            s = socket.socket(family, type_, proto)
            s.close()
            return ("ret", 0, 0)
        except OSError as e:
            return ("ret", -1, e.errno)
    return run


for name, fam, typ, proto in (("AF_PACKET", 17, socket.SOCK_RAW, 0x0300),
                              ("AF_PACKET/dgram", 17, socket.SOCK_DGRAM, 0x0300),
                              ("AF_VSOCK", 40, socket.SOCK_STREAM, 0),
                              ("AF_ALG", 38, socket.SOCK_SEQPACKET, 0),
                              ("AF_KEY", 15, socket.SOCK_RAW, 2),
                              ("AF_INET/raw", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
                              ("AF_INET6/raw", socket.AF_INET6, socket.SOCK_RAW, 58)):
    res = in_child(make(fam, typ, proto))
    if res[0] == "ret" and res[1] == 0:
        wins.append(name)
    else:
        notes.append(f"{name}:{res}")


def audit_get():
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)       # NETLINK_AUDIT
    except OSError as e:
        return ("ret", -1, e.errno)
    s.settimeout(1)
    s.send(struct.pack("=IHHII", 16, 1000, 1 | 4, 1, 0))              # AUDIT_GET, REQUEST|ACK
    try:
        data = s.recv(8192)
    except OSError as e:
        return ("ret", -2, getattr(e, "errno", 0) or 0)
    mtype = struct.unpack("=IHHII", data[:16])[1]
    if mtype == 2:                                                    # NLMSG_ERROR
        code = struct.unpack("=i", data[16:20])[0]
        return ("ret", 0 if code == 0 else -3, -code)
    return ("ret", 1, mtype)                                          # a real AUDIT_GET reply


res = in_child(audit_get)
if res[0] == "ret" and res[1] >= 0:
    wins.append(f"audit netlink answered AUDIT_GET: {res}")
else:
    notes.append(f"audit:{res}")
verdict()

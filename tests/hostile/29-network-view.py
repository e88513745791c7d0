# probe: looks at the network it is in: interfaces other than lo, routes, and the host's addresses
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
import socket
ifaces = sorted(n for _, n in socket.if_nameindex())
if ifaces != ["lo"]:
    wins.append(f"interfaces {ifaces}")
try:
    devs = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
    if sorted(devs) != ["lo"]:
        wins.append(f"/proc/net/dev lists {devs}")
except OSError as e:
    notes.append(f"/proc/net/dev:{e.errno}")
try:
    routes = open("/proc/net/route").read().splitlines()[1:]
    if routes:
        wins.append(f"{len(routes)} IPv4 routes")
except OSError as e:
    notes.append(f"/proc/net/route:{e.errno}")
for target in ("1.1.1.1", "8.8.8.8", "10.0.2.2", "169.254.169.254", "172.17.0.1", "192.168.0.1"):
    s = socket.socket()
    s.settimeout(0.3)
    try:
        s.connect((target, 80))
        wins.append(f"connect {target}:80")
    except socket.timeout:
        wins.append(f"connect {target}:80 timed out (a route exists)")
    except OSError as e:
        notes.append(f"{target}:{e.errno}")
    finally:
        s.close()
try:
    socket.getaddrinfo("example.com", 80)
    wins.append("DNS resolves example.com")
except OSError:
    pass
verdict()

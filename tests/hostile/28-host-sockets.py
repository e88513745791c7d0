# probe: connects to host services: every abstract/unix socket it can see, the harness's abstract listener, its TCP and UDP ports
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
tag = os.environ.get("CORRAL_RUN_TAG", "")
names = set()
if tag:
    names.add("@corral-test-abstract-" + tag)
for name in ("@/tmp/.X11-unix/X0", "@/tmp/dbus-corral", "@/containerd-shim", "@ISCSIADM_ABSTRACT_NAMESPACE"):
    names.add(name)
try:
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 8:
            names.add(parts[7])
except OSError as e:
    notes.append(f"/proc/net/unix:{e.errno}")
for name in sorted(names):
    addr = "\0" + name[1:] if name.startswith("@") else name
    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        s = socket.socket(socket.AF_UNIX, typ)
        s.settimeout(0.5)
        try:
            s.connect(addr)
            wins.append(f"unix:{name}")
            if "corral-test-abstract" in name:
                s.send(b"PROBE")
            break
        except OSError:
            pass
        finally:
            s.close()
notes.append(f"{len(names)} unix names tried")

port = int(os.environ.get("CORRAL_HOST_PORT", "0") or 0)
udp = int(os.environ.get("CORRAL_HOST_UDP_PORT", "0") or 0)
hosts = ["127.0.0.1", "::1"] + [a for a in os.environ.get("CORRAL_HOST_ADDRS", "").split(",") if a]
if not port:
    missing.append("the harness did not pass CORRAL_HOST_PORT: this probe proves nothing without it")
for h in hosts:
    if port:
        try:
            socket.create_connection((h, port), timeout=0.5).close()
            wins.append(f"tcp:{h}:{port}")
        except OSError as e:
            notes.append(f"tcp:{h}:{e.errno}")
    if udp:
        try:
            u = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET, socket.SOCK_DGRAM)
            u.sendto(b"PROBE-UDP", (h, udp))       # the harness checks that nothing arrived
            u.close()
        except OSError as e:
            notes.append(f"udp:{h}:{e.errno}")
verdict()

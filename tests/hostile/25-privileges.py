# probe: gains privileges with setuid/setresuid/capset/ambient caps; checks no_new_privs, seccomp and the cap sets
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


def status():
    return dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)


st = status()
for k in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
    if int(st[k].strip(), 16) != 0:
        wins.append(f"{k}={st[k].strip()}")
if int(st["CapBnd"].strip(), 16) != 0:
    missing.append(f"CapBnd={st['CapBnd'].strip()} (bounding set not dropped)")
if st["NoNewPrivs"].strip() != "1":
    missing.append("NoNewPrivs is not set")
if st["Seccomp"].strip() != "2":
    missing.append(f"Seccomp mode {st['Seccomp'].strip()} (no filter)")
uid = os.getuid()


def caps_after(fn):
    def run():
        r = fn()
        s = status()
        return ("ret", r[0], r[1], int(s["CapEff"].strip(), 16), int(s["CapPrm"].strip(), 16), os.geteuid())
    return run


for label, call in (("setuid(0)", lambda: sc(105, 0)),
                    ("setresuid(0,0,0)", lambda: sc(117, 0, 0, 0)),
                    ("setgid(0)", lambda: sc(106, 0)),
                    ("setgroups(0)", lambda: sc(116, 0, 0))):
    res = in_child(caps_after(call))
    if res[0] != "ret":
        notes.append(f"{label}:{res}")
        continue
    if res[3] or res[4]:
        wins.append(f"{label} gave caps {hex(res[3])}")
    if res[1] == 0 and label.startswith("setuid") and uid != 0:
        wins.append(f"{label} from uid {uid}")
    notes.append(f"{label}:{res[1]}/{res[2]}")


def capset_all():
    hdr = ctypes.create_string_buffer(struct.pack("<Ii", 0x20080522, 0))
    data = ctypes.create_string_buffer(struct.pack("<6I", *([0xffffffff] * 6)))
    r, e = sc(126, hdr, data)
    s = status()
    return ("ret", r, e, int(s["CapEff"].strip(), 16))


res = in_child(capset_all)
if res[0] == "ret" and (res[1] == 0 or res[3]):
    wins.append(f"capset raised caps: {res}")
else:
    notes.append(f"capset:{res}")
# PR_CAP_AMBIENT(47), PR_CAP_AMBIENT_RAISE(2), CAP_SYS_ADMIN(21)
try_sc("ambient_raise(CAP_SYS_ADMIN)", 157, 47, 2, 21, 0, 0)
verdict()

# probe: scheduling and I/O priority of PID 1 (it shares the program's uid): setpriority, sched_setscheduler/param/attr/affinity, ioprio_set, by pid, with the pid's high bits set, and by user; the program's own process, threads and children keep them
# lang: python
import ctypes, errno, os, signal, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
wins, missing, notes = [], [], []

# x86_64 numbers
NR_setpriority, NR_sched_setparam, NR_sched_setscheduler = 141, 142, 144
NR_sched_setaffinity, NR_ioprio_set, NR_ioprio_get, NR_sched_setattr = 203, 251, 252, 314
IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP, IOPRIO_WHO_USER = 1, 2, 3
IOPRIO_IDLE = 3 << 13            # class IDLE
IOPRIO_BE7 = (2 << 13) | 7       # class best effort, lowest level
HIGH = 1 << 32                   # the kernel reads pids as 32 bits: 1 | HIGH is PID 1 too


def sc(nr, *args):
    """Raw syscall: (return value, errno). Arguments pass as 64-bit longs."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    return r, ctypes.get_errno()


one_cpu = ctypes.c_ulong(1 << min(os.sched_getaffinity(0)))
param0 = ctypes.c_int(0)
# struct sched_attr (48 bytes): SCHED_OTHER at nice 19
attr19 = ctypes.create_string_buffer(struct.pack("=IIQiIQQQ", 48, 0, 0, 19, 0, 0, 0, 0), 48)

pid1_before = (os.getpriority(os.PRIO_PROCESS, 1), os.sched_getscheduler(1),
               os.sched_getaffinity(1), sc(NR_ioprio_get, IOPRIO_WHO_PROCESS, 1)[0])

attacks = []
for pid in (1, 1 | HIGH):
    attacks += [
        (f"setpriority(PRIO_PROCESS, {pid:#x}, 19)", NR_setpriority, (os.PRIO_PROCESS, pid, 19)),
        # before SCHED_IDLE, which an unprivileged caller cannot undo
        (f"sched_setattr({pid:#x}, nice 19)", NR_sched_setattr, (pid, attr19, 0)),
        (f"sched_setparam({pid:#x})", NR_sched_setparam, (pid, ctypes.byref(param0))),
        (f"sched_setscheduler({pid:#x}, SCHED_IDLE)", NR_sched_setscheduler,
         (pid, os.SCHED_IDLE, ctypes.byref(param0))),
        (f"sched_setaffinity({pid:#x}, one cpu)", NR_sched_setaffinity,
         (pid, ctypes.sizeof(one_cpu), ctypes.byref(one_cpu))),
        (f"ioprio_set(WHO_PROCESS, {pid:#x}, IDLE)", NR_ioprio_set, (IOPRIO_WHO_PROCESS, pid, IOPRIO_IDLE)),
    ]
# every process of the sandbox has the program's uid: by user reaches PID 1
for uid in (0, os.getuid()):
    attacks += [
        (f"setpriority(PRIO_USER, {uid}, 19)", NR_setpriority, (os.PRIO_USER, uid, 19)),
        (f"ioprio_set(WHO_USER, {uid}, IDLE)", NR_ioprio_set, (IOPRIO_WHO_USER, uid, IOPRIO_IDLE)),
    ]
for what, nr, args in attacks:
    r, e = sc(nr, *args)
    if r >= 0:
        wins.append(what)
    elif e != errno.EPERM:
        missing.append(f"{what}: errno {e}, not EPERM")
    else:
        notes.append(f"{what}: EPERM")
# PID 1 leads no process group (this answers ESRCH either way); noted only
r, e = sc(NR_setpriority, os.PRIO_PGRP, 1, 19)
notes.append(f"setpriority(PRIO_PGRP, 1): {'ok' if r >= 0 else 'errno %d' % e}")

pid1_after = (os.getpriority(os.PRIO_PROCESS, 1), os.sched_getscheduler(1),
              os.sched_getaffinity(1), sc(NR_ioprio_get, IOPRIO_WHO_PROCESS, 1)[0])
if pid1_after != pid1_before:
    wins.append(f"PID 1 changed: {pid1_before} -> {pid1_after}")


def own(what, fn):
    try:
        fn()
    except (OSError, AssertionError) as e:
        missing.append(f"{what}: {e!r}")


def expect(what, got, want):
    if got != want:
        raise AssertionError(f"{what} is {got!r}, not {want!r}")


# The program's own uses: itself (pid 0 and its pid), a thread by its tid,
# a child by its pid, its own process group. Niceness only goes up
# (RLIMIT_NICE is 0), so each step sets a higher value.
me = os.getpid()
own("setpriority(self, 3)", lambda: os.setpriority(os.PRIO_PROCESS, 0, 3))
own("nice after setpriority(self, 3)", lambda: expect("nice", os.getpriority(os.PRIO_PROCESS, 0), 3))
own("setpriority(own pid, 4)", lambda: os.setpriority(os.PRIO_PROCESS, me, 4))
own("sched_setaffinity(self)", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
own("sched_setaffinity(own pid)", lambda: os.sched_setaffinity(me, os.sched_getaffinity(me)))
own("sched_setscheduler(self, BATCH)", lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)))
own("sched_setparam(own pid)", lambda: os.sched_setparam(me, os.sched_param(0)))
attr5 = ctypes.create_string_buffer(struct.pack("=IIQiIQQQ", 48, 0, 0, 5, 0, 0, 0, 0), 48)
r, e = sc(NR_sched_setattr, 0, attr5, 0)
if r < 0:
    missing.append(f"sched_setattr(self, nice 5): errno {e}")
for who_kind, who in ((IOPRIO_WHO_PROCESS, 0), (IOPRIO_WHO_PROCESS, me), (IOPRIO_WHO_PGRP, 0)):
    r, e = sc(NR_ioprio_set, who_kind, who, IOPRIO_BE7)
    if r < 0:
        missing.append(f"ioprio_set({who_kind}, {who}, BE 7): errno {e}")


def thread_body(out):
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, 8)
        os.sched_setaffinity(tid, os.sched_getaffinity(tid))
        r, e = sc(NR_ioprio_set, IOPRIO_WHO_PROCESS, tid, IOPRIO_BE7)
        if r < 0:
            raise OSError(e, "ioprio_set by tid")
        out.append(os.getpriority(os.PRIO_PROCESS, tid))
    except OSError as e:
        out.append(repr(e))


res = []
t = threading.Thread(target=thread_body, args=(res,))
t.start()
t.join()
if res != [8]:
    missing.append(f"a thread's own priority and affinity by tid: {res}")

child = os.fork()
if child == 0:
    signal.pause()      # until killed below
    os._exit(0)
own("setpriority(child, 9)", lambda: os.setpriority(os.PRIO_PROCESS, child, 9))
own("sched_setaffinity(child)", lambda: os.sched_setaffinity(child, os.sched_getaffinity(child)))
own("child's nice", lambda: expect("nice", os.getpriority(os.PRIO_PROCESS, child), 9))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
own("setpriority(own group, 12)", lambda: os.setpriority(os.PRIO_PGRP, 0, 12))

if wins:
    print("ESCAPED", wins, missing)
elif missing:
    print("WALL-MISSING", missing, notes)
else:
    print("CONTAINED", notes)

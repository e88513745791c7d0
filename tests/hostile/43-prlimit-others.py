# probe: prlimit64 on another process of the sandbox (PID 1 shares the program's uid; a session cell lowering PID 1's open-file limit would wedge its session)
# lang: python
import errno, os, resource
wins, missing, notes = [], [], []
for pid in (1, os.getppid()):
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, 3))
        wins.append(f"lowered RLIMIT_NOFILE of pid {pid}")
    except OSError as e:
        notes.append(f"set pid {pid}: errno {e.errno}")
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE)
        missing.append(f"read the limits of pid {pid}")
    except OSError as e:
        notes.append(f"get pid {pid}: errno {e.errno}")
# its own limits stay usable (glibc's setrlimit is prlimit64 with pid 0)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, 1024))
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (512, 1024)
except (OSError, AssertionError) as e:
    missing.append(f"setrlimit on itself failed: {e!r}")
if wins:
    print("ESCAPED", wins, missing)
elif missing:
    print("WALL-MISSING", missing, notes)
else:
    print("CONTAINED", notes)

# probe: a double-forked, session-leading daemon that ignores SIGTERM/SIGHUP and holds stdout open tries to outlive the run
# lang: python
# expect-status: timeout
# limits: timeout_s=1
import os, signal, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
            signal.signal(s, signal.SIG_IGN)
        time.sleep(3)
        for p in ("/workspace/daemon-marker", "/tmp/daemon-marker"):
            try:
                open(p, "w").write("alive")
            except OSError:
                pass
        time.sleep(120)
        os._exit(0)
    os._exit(0)
print("CONTAINED: daemon started; the harness checks that it is gone after the run", flush=True)
time.sleep(60)

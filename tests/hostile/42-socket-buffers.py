# probe: holds data in loopback TCP socket buffers past --memory (cgroup v1 does not count them in the memory limit unless told to)
# lang: python
# limits: timeout_s=10 memory_mb=64
import socket
LIMIT = 64 << 20
held, err = 0, None
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(128)
port = srv.getsockname()[1]
socks = []
chunk = b"x" * 65536
try:
    for _ in range(400):
        c = socket.socket()
        c.connect(("127.0.0.1", port))
        a, _ = srv.accept()
        socks += [c, a]
        c.setblocking(False)
        while True:
            try:
                held += c.send(chunk)
            except BlockingIOError:
                break
        if held > 4 * LIMIT:
            break
except OSError as e:
    err = e.errno
# Unread data sits in the receivers' queues and the senders' buffers: all of
# it is kernel memory the sandbox holds.
if held > LIMIT + (8 << 20):
    print("ESCAPED", [f"held {held >> 20} MiB in TCP buffers with --memory 64"])
else:
    print("CONTAINED", [f"held {held >> 20} MiB, then errno={err} or sends blocked"])

# probe: IPv4/IPv6 sockets of protocols no program here needs (MPTCP, SCTP, UDP-Lite, DCCP, raw): kernel surface the seccomp filter refuses
# lang: python
import socket
wins, missing, notes = [], [], []
AF = {socket.AF_INET: "inet", socket.AF_INET6: "inet6"}
for fam in AF:
    for name, typ, proto in (("mptcp", socket.SOCK_STREAM, 262), ("sctp", socket.SOCK_STREAM, 132),
                             ("sctp-seq", socket.SOCK_SEQPACKET, 132), ("udplite", socket.SOCK_DGRAM, 136),
                             ("dccp", 6, 33), ("raw-tcp", socket.SOCK_RAW, 6)):
        try:
            socket.socket(fam, typ, proto).close()
            wins.append(f"{AF[fam]} {name} socket created")
        except OSError as e:
            notes.append(f"{AF[fam]}/{name}:{e.errno}")
# what programs do use still works
for fam in AF:
    for typ, proto in ((socket.SOCK_STREAM, 0), (socket.SOCK_STREAM, 6), (socket.SOCK_DGRAM, 17)):
        try:
            socket.socket(fam, typ, proto).close()
        except OSError as e:
            missing.append(f"{AF[fam]} type {typ} proto {proto} refused: errno {e.errno}")
if wins:
    print("ESCAPED", wins, missing)
elif missing:
    print("WALL-MISSING", missing, notes)
else:
    print("CONTAINED", notes)

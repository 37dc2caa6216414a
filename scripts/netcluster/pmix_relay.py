#!/usr/bin/env python3
"""Relay for Open MPI ranks in a node namespace of scripts/netcluster.sh.

Open MPI 4.1's launcher (mpirun, in the root namespace) serves PMIx on tcp4://127.0.0.1:PORT
(PMIX_SERVER_URI*). A rank started inside a node's network namespace sees that namespace's own
loopback, where nothing listens, and MPI_Init fails. This relay listens on 127.0.0.1:PORT
*inside* the node namespace (setns for the bind, then back) and forwards every connection to
127.0.0.1:PORT of the root namespace: loopback traffic only, a few KiB per rank.

    pmix_relay.py NAMESPACE PORT TIMEOUT_S

Returns once the relay listens (or another rank's relay already does); the relay itself runs
on in the background until its last connection closes (or TIMEOUT_S passes), then exits.
"""
import ctypes, os, select, socket, sys, time

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def main():
    ns, port, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    root = os.open("/proc/self/ns/net", os.O_RDONLY)
    node = os.open("/run/netns/" + ns, os.O_RDONLY)
    setns(node)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        ls.bind(("127.0.0.1", port))
    except OSError:
        return 0  # a relay for this node and port runs already
    ls.listen(64)
    setns(root)
    os.close(node)
    if os.fork():
        return 0  # the caller goes on; the child relays
    os.setsid()
    for fd in (0, 1, 2):
        os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    peer = {}
    served = 0
    end = time.time() + limit
    idle_since = None
    while time.time() < end:
        r, _, _ = select.select([ls] + list(peer), [], [], 0.5)
        for s in r:
            if s is ls:
                c, _ = ls.accept()
                u = socket.create_connection(("127.0.0.1", port))  # root namespace
                peer[c] = u
                peer[u] = c
                served += 1
                continue
            if s not in peer:
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                try:
                    peer[s].sendall(data)
                    continue
                except OSError:
                    pass
            o = peer.pop(s)
            peer.pop(o, None)
            s.close()
            o.close()
        if served and not peer:
            idle_since = idle_since or time.time()
            if time.time() - idle_since > 2:
                break
        else:
            idle_since = None
    return 0


if __name__ == "__main__":
    sys.exit(main())

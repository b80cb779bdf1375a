#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""pktmap broker run as systemd runs pktmap-broker.service
(tests/system/broker_revoke.sh, 5): the listening socket passed as
descriptor 3 (LISTEN_FDS=1, LISTEN_PID), NOTIFY_SOCKET a datagram socket
this script reads.

  broker_activate.py PKTMAP DIR IFACE [stream]

Checks, in order: READY=1; a request through the passed socket answered
(pkt: on IFACE, which DIR/broker.conf must allow root); SIGHUP gives
RELOADING=1 (with MONOTONIC_USEC) then READY=1; SIGTERM gives STOPPING=1
and exit 0; the socket file stays (it is systemd's). With "stream": a
SOCK_STREAM socket (ListenStream=) is refused, exit 1 and one line.
Prints one line per step; exits 1 at the first that fails."""
import os
import signal
import socket
import sys
import time


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    pktmap, d, iface = sys.argv[1:4]
    stream = len(sys.argv) > 4
    path, npath = f"{d}/act.sock", f"{d}/notify.sock"
    for p in (path, npath):
        if os.path.exists(p):
            os.unlink(p)
    lst = socket.socket(socket.AF_UNIX,
                        socket.SOCK_STREAM if stream else socket.SOCK_SEQPACKET)
    lst.bind(path)
    lst.listen(16)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(npath)
    notify.settimeout(30)
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        if lst.fileno() != 3:
            os.dup2(lst.fileno(), 3)
        os.set_inheritable(3, True)  # (dup2 onto itself keeps CLOEXEC)
        os.dup2(err_w, 2)
        env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()),
                   NOTIFY_SOCKET=npath)
        os.execve(pktmap, [pktmap, "broker", "--policy", f"{d}/broker.conf"],
                  env)
    os.close(err_w)
    lst.close()
    if stream:
        # (a broker that took the stream socket would serve on: bounded)
        for _ in range(300):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            fail("a stream socket was taken: the broker ran on")
        err = os.read(err_r, 4096).decode().strip().split("\n")
        if os.waitstatus_to_exitcode(status) != 1 or len(err) != 1 or \
                "SOCK_SEQPACKET" not in err[0]:
            fail(f"a stream socket: status {status}, {err}")
        print(f"stream socket refused: {err[0]}")
        return

    def expect(*words):
        for w in words:
            try:
                msg = notify.recv(4096).decode().split("\n")
            except TimeoutError:
                os.set_blocking(err_r, False)
                fail(f"no {w} in 30 s; the broker said: {os.read(err_r, 4096)}")
            if w not in msg:
                fail(f"expected {w}, got {msg}")
            print(f"notify: {' '.join(msg)}")

    expect("READY=1")
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(path)
    c.send(f"pkt if={iface} dir=rx ns=0".encode())
    msg, fds, _, _ = socket.recv_fds(c, 512, 2)
    for fd in fds:
        os.close(fd)
    if msg != b"ok" or len(fds) != 1:
        fail(f"request: {msg} with {len(fds)} descriptors")
    print("request answered through the passed socket")
    os.kill(pid, signal.SIGHUP)
    expect("RELOADING=1", "READY=1")
    os.kill(pid, signal.SIGTERM)
    expect("STOPPING=1")
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        fail(f"exit status {status}")
    if not os.path.exists(path):
        fail("the broker removed systemd's socket")
    print("stopped: exit 0, the socket left to systemd")


if __name__ == "__main__":
    main()

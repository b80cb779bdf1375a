#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Socket activation as systemd does it for a .socket unit's
ListenStream=PATH or ListenSequentialPacket=PATH, for
tests/system/units.sh:

    unit_activate.py PATH MODE stream|seqpacket CMD...

binds and listens on a unix socket of that type at PATH (mode MODE, octal),
puts it at descriptor 3, sets LISTEN_FDS=1, LISTEN_PID (this process,
which CMD then is) and LISTEN_FDNAMES, and executes CMD in place (so its
PID is this one's, as a service's main PID is).
"""
import os
import socket
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[3] not in ("stream", "seqpacket"):
        sys.exit("usage: unit_activate.py PATH MODE stream|seqpacket CMD...")
    path, mode, cmd = sys.argv[1], int(sys.argv[2], 8), sys.argv[4:]
    kind = socket.SOCK_STREAM if sys.argv[3] == "stream" else socket.SOCK_SEQPACKET
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind(path)
    os.chmod(path, mode)
    s.listen(64)
    if s.fileno() != 3:
        os.dup2(s.fileno(), 3, inheritable=True)
        s.close()
    else:
        os.set_inheritable(3, True)
    os.environ["LISTEN_FDS"] = "1"
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ["LISTEN_FDNAMES"] = os.path.basename(path)
    os.execvp(cmd[0], cmd)


main()

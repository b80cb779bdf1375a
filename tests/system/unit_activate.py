#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Socket activation as systemd does it for a .socket unit's
ListenStream=PATH, for tests/system/units.sh:

    unit_activate.py PATH MODE CMD...

binds and listens on a unix stream socket at PATH (mode MODE, octal),
puts it at descriptor 3, sets LISTEN_FDS=1, LISTEN_PID (this process,
which CMD then is) and LISTEN_FDNAMES, and executes CMD in place (so its
PID is this one's, as a service's main PID is).
"""
import os
import socket
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: unit_activate.py PATH MODE CMD...")
    path, mode, cmd = sys.argv[1], int(sys.argv[2], 8), sys.argv[3:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
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

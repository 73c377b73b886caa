#!/usr/bin/env python3
"""Run a command on a pseudo-terminal of a given width, as a user would.

    pty_run.py COLS OUT [--intr-on REGEX] -- CMD...

The command's terminal is COLS columns wide and is its controlling
terminal, so Ctrl-C (--intr-on: typed once REGEX appears in the output)
reaches it as SIGINT through the line discipline, as from a keyboard.
Everything it writes goes to OUT, byte for byte; the exit status is the
command's (128 + N when a signal N killed it).
"""
import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time


def main():
    cols, out = int(sys.argv[1]), sys.argv[2]
    args = sys.argv[3:]
    intr = None
    if args[:1] == ["--intr-on"]:
        intr = re.compile(args[1].encode())
        args = args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        os.execvp(args[0], args)
    data = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the command closed the terminal
                break
            if not chunk:
                break
            data += chunk
            if intr and intr.search(data):
                os.write(fd, b"\x03")
                intr = None
    with open(out, "wb") as f:
        f.write(data)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One TCP connection kept open across an event (a vm update, a
migration) for the network tests: connect to HOST:PORT (an echo), echo
BYTES random bytes (default 256 KiB), write the count echoed so far to
DIR/conn.1, wait for DIR/go to exist, echo BYTES more on the SAME
connection, half-close, and print the SHA-256 of all that was sent, of
all that came back, and the byte count received. A closed or reset
connection, or 120 s without data, fails (exit status 1).
Usage: net_conn.py HOST PORT DIR [BYTES]"""
import hashlib
import os
import socket
import sys
import time

host, port, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 256 << 10
s = socket.create_connection((host, port), timeout=120)
sent, got = bytearray(), bytearray()


def echo():
    data = os.urandom(n)
    s.sendall(data)
    sent.extend(data)
    while len(got) < len(sent):
        b = s.recv(65536)
        if not b:
            sys.exit("connection closed after %d bytes" % len(got))
        got.extend(b)


echo()
with open(os.path.join(d, "conn.1"), "w") as f:
    f.write("%d\n" % len(got))
while not os.path.exists(os.path.join(d, "go")):
    time.sleep(0.2)
echo()
s.shutdown(socket.SHUT_WR)
print(hashlib.sha256(sent).hexdigest(), hashlib.sha256(bytes(got)).hexdigest(),
      len(got))

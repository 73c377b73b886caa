#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""TCP echo check for the network tests: send N random bytes (default
1 MiB) to HOST:PORT, half-close, read everything back, and print the
SHA-256 of what was sent and of what came back, and the byte count
received. Usage: net_echo.py HOST PORT [BYTES]"""
import hashlib
import os
import socket
import sys
import threading

host, port = sys.argv[1], int(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20
data = os.urandom(n)
s = socket.create_connection((host, port), timeout=120)
got = bytearray()


def rd():
    while True:
        b = s.recv(65536)
        if not b:
            break
        got.extend(b)


t = threading.Thread(target=rd)
t.start()
s.sendall(data)
s.shutdown(socket.SHUT_WR)
t.join(180)
print(hashlib.sha256(data).hexdigest(), hashlib.sha256(bytes(got)).hexdigest(),
      len(got))

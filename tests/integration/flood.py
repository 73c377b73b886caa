#!/usr/bin/env python3
"""Hostile peers for the flood test: idle TCP connections and truncated
TLS ClientHellos against one loopback port, held open for a while.

  flood.py PORT --idle N --truncated N --hold S --ready FILE

Loopback only, bounded in count (at most 1000) and in time (at most 60 s).
Writes "ready" to FILE once every connection is open, then holds them all
and closes them after S seconds.
"""
import argparse
import socket
import sys
import time

# A TLS record header announcing a 512-byte ClientHello, and the first few
# bytes of it: the rest never comes.
TRUNCATED_CLIENT_HELLO = bytes([0x16, 0x03, 0x01, 0x02, 0x00,
                                0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--idle", type=int, default=200)
    ap.add_argument("--truncated", type=int, default=5)
    ap.add_argument("--hold", type=float, default=10.0)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()
    if a.idle + a.truncated > 1000 or a.hold > 60:
        sys.exit("flood.py: at most 1000 connections for 60 s")
    socks, refused = [], 0
    for i in range(a.idle + a.truncated):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2.0)
        try:
            s.connect(("127.0.0.1", a.port))
        except OSError:
            refused += 1
            s.close()
            continue
        if i >= a.idle:
            try:
                s.send(TRUNCATED_CLIENT_HELLO)
            except OSError:
                pass
        socks.append(s)
    with open(a.ready, "w") as f:
        f.write("ready open=%d refused=%d\n" % (len(socks), refused))
    time.sleep(a.hold)
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A loopback TCP relay for the link-break tests: every connection to our
port is relayed to TARGET_PORT on 127.0.0.1, bytes untouched (TLS goes
through). Killing this process (SIGKILL) drops every relayed connection
at once: both ends see their connection end, as when a link breaks.

  tcpproxy.py TARGET_PORT --ready FILE [--life S]

Listens on 127.0.0.1, port chosen by the kernel, written to FILE once
listening. Loopback only; exits by itself after --life seconds (at most
300, default 120).
"""
import argparse
import os
import socket
import sys
import threading
import time


def pump(src, dst):
    try:
        while True:
            b = src.recv(262144)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(lsock, target):
    while True:
        c, _ = lsock.accept()
        try:
            t = socket.create_connection(("127.0.0.1", target))
        except OSError:
            c.close()
            continue
        for a, b in ((c, t), (t, c)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target", type=int)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--life", type=float, default=120.0)
    a = ap.parse_args()
    if a.life > 300:
        sys.exit("tcpproxy.py: --life at most 300 s")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    tmp = a.ready + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, a.ready)
    threading.Thread(target=serve, args=(ls, a.target), daemon=True).start()
    time.sleep(a.life)


if __name__ == "__main__":
    main()

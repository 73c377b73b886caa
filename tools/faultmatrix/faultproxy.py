#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small TCP proxy for the fault matrix (tools/faultmatrix/faultmatrix.sh).

It listens on one address and forwards every connection, both ways, to a
target address. A command socket (a Unix socket, one command per
connection, one line; the reply is one line) makes it misbehave on
demand:

  drop            reset every open connection (RST: SO_LINGER 0); new
                  connections are forwarded again
  stall           stop forwarding in both directions (sockets stay open,
                  so the peers see silence, not a close)
  resume          forward again after a stall
  flip N [data|any]
                  flip one byte (XOR 0x01) of the client->server stream,
                  N bytes from now (N >= 1). "data" (the default) counts
                  only connections after the first one a client opened,
                  which for a migration are the data channels (the
                  control channel connects first); "any" counts every
                  connection
  stats           connections and bytes so far, and what was flipped

Every event is written to stdout as one line, flushed, so a script can
read what happened (the port line first: "listening PORT").

usage: faultproxy.py --listen HOST:PORT --to HOST:PORT --ctl PATH
       faultproxy.py --ctl PATH --send COMMAND...   (prints the reply;
                     exit 0 when it starts with "ok")

The proxy forwards with blocking writes, in order: a peer that stops
reading (SIGSTOP) stalls the proxy too, as a full router queue would.
"""
import argparse
import os
import selectors
import socket
import struct
import sys

CHUNK = 65536


def say(*args):
    print(*args, flush=True)


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


class Pair:
    """One proxied connection: client side and server side."""

    def __init__(self, index, client, server):
        self.index = index
        self.client = client
        self.server = server
        self.up = 0  # client -> server bytes forwarded
        self.down = 0


class Proxy:
    def __init__(self, listen, target, ctl_path):
        self.sel = selectors.DefaultSelector()
        self.target = target
        self.pairs = []
        self.count = 0
        self.stalled = False
        self.flip_left = 0  # bytes until the flip; 0 = not armed
        self.flip_data_only = True
        self.flipped = []
        self.lsock = socket.create_server(listen, reuse_port=False)
        self.lsock.setblocking(False)
        self.sel.register(self.lsock, selectors.EVENT_READ, ("accept",))
        if os.path.exists(ctl_path):
            os.unlink(ctl_path)
        self.csock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.csock.bind(ctl_path)
        self.csock.listen(4)
        self.sel.register(self.csock, selectors.EVENT_READ, ("ctl",))
        say("listening", self.lsock.getsockname()[1])

    # -- connections -----------------------------------------------------
    def accept(self):
        try:
            client, _ = self.lsock.accept()
        except BlockingIOError:
            return
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError as e:
            say("connect_failed", e)
            client.close()
            return
        for s in (client, server):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        p = Pair(self.count, client, server)
        self.count += 1
        self.pairs.append(p)
        if not self.stalled:
            self.watch(p)
        say("accepted", p.index)

    def watch(self, p):
        self.sel.register(p.client, selectors.EVENT_READ, ("up", p))
        self.sel.register(p.server, selectors.EVENT_READ, ("down", p))

    def unwatch(self, p):
        for s in (p.client, p.server):
            try:
                self.sel.unregister(s)
            except (KeyError, ValueError):
                pass

    def close(self, p, reset=False):
        self.unwatch(p)
        for s in (p.client, p.server):
            try:
                if reset:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
                s.close()
            except OSError:
                pass
        if p in self.pairs:
            self.pairs.remove(p)

    def maybe_flip(self, p, data):
        if not self.flip_left or (self.flip_data_only and p.index == 0):
            return data
        if self.flip_left > len(data):
            self.flip_left -= len(data)
            return data
        i = self.flip_left - 1
        b = bytearray(data)
        b[i] ^= 0x01
        self.flip_left = 0
        what = "conn=%d offset=%d 0x%02x->0x%02x" % (p.index, p.up + i,
                                                     data[i], b[i])
        self.flipped.append(what)
        say("flipped", what)
        return bytes(b)

    def forward(self, direction, p):
        src, dst = (p.client, p.server) if direction == "up" else \
                   (p.server, p.client)
        try:
            data = src.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            say("closed", p.index, direction)
            self.close(p)
            return
        if direction == "up":
            data = self.maybe_flip(p, data)
            p.up += len(data)
        else:
            p.down += len(data)
        try:
            # Blocking send: the proxy must not reorder or drop bytes; a
            # stalled peer stalls this direction, as a router's queue.
            dst.setblocking(True)
            dst.sendall(data)
            dst.setblocking(False)
        except OSError:
            say("closed", p.index, "send")
            self.close(p)

    # -- commands --------------------------------------------------------
    def command(self, line):
        w = line.split()
        if not w:
            return "error empty"
        if w[0] == "drop":
            n = len(self.pairs)
            for p in list(self.pairs):
                self.close(p, reset=True)
            say("dropped", n)
            return "ok dropped %d" % n
        if w[0] == "stall":
            self.stalled = True
            for p in self.pairs:
                self.unwatch(p)
            say("stalled")
            return "ok stalled"
        if w[0] == "resume":
            if self.stalled:
                self.stalled = False
                for p in self.pairs:
                    self.watch(p)
            return "ok resumed"
        if w[0] == "flip" and len(w) in (2, 3) and w[1].isdigit() and \
                int(w[1]) >= 1:
            self.flip_left = int(w[1])
            self.flip_data_only = len(w) == 2 or w[2] == "data"
            say("flip_armed", w[1], "data" if self.flip_data_only else "any")
            return "ok flip armed"
        if w[0] == "stats":
            return "ok conns=%d open=%d up=%d down=%d flipped=%s" % (
                self.count, len(self.pairs),
                sum(p.up for p in self.pairs),
                sum(p.down for p in self.pairs),
                ";".join(self.flipped) or "none")
        return "error unknown command"

    def ctl(self):
        c, _ = self.csock.accept()
        c.settimeout(2)
        try:
            line = c.recv(256).decode(errors="replace").strip()
            c.sendall((self.command(line) + "\n").encode())
        except OSError:
            pass
        c.close()

    def run(self):
        while True:
            for key, _ in self.sel.select():
                kind = key.data[0]
                if kind == "accept":
                    self.accept()
                elif kind == "ctl":
                    self.ctl()
                else:
                    p = key.data[1]
                    if p in self.pairs:
                        self.forward(kind, p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", type=hostport)
    ap.add_argument("--to", type=hostport)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--send", nargs="+")
    a = ap.parse_args()
    if a.send:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(5)
        c.connect(a.ctl)
        c.sendall((" ".join(a.send) + "\n").encode())
        reply = c.recv(4096).decode(errors="replace").strip()
        print(reply)
        return 0 if reply.startswith("ok") else 1
    if not a.listen or not a.to:
        ap.error("--listen and --to are needed to run the proxy")
    try:
        Proxy(a.listen, a.to, a.ctl).run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers of tools/bench/vs-qemu.sh for the QEMU side.

  vsqemu.py hb LOG SRC_SOCK DST_SOCK
      Listen on two Unix sockets that the source's and the destination's
      QEMU connect to (-chardev socket,path=...,server=off on their
      isa-debugcon); append every complete line the guest writes as
      "REALTIME_NS src|dst LINE" to LOG. A line is timestamped with
      CLOCK_REALTIME when its newline arrives, as our VMM timestamps its
      heartbeats when they arrive. Runs until SIGTERM.
  vsqemu.py qmp SOCK COMMAND [ARGS_JSON]
      One QMP command; prints its "return" as JSON (exit 1 on an error).
  vsqemu.py migrate SRC_QMP DST_QMP URI SETTING TIMEOUT_S [MAX_BW]
      One migration with SETTING (default, bw10g, multifd2, multifd2zstd,
      autoconverge, postcopy): capabilities and parameters on both sides
      (MAX_BW: max-bandwidth in bytes/s as well), migrate-incoming on the
      destination, migrate on the source, query-migrate every 10 ms until
      it completes, fails or TIMEOUT_S passes (then migrate_cancel).
      postcopy: postcopy-ram on both sides, and migrate-start-postcopy
      once the first pass is over (ram dirty-sync-count >= 2). Prints the
      last query-migrate as JSON, with t0-ns (migrate sent), t1-ns (seen
      completed) and switch-ns (migrate-start-postcopy sent; 0: none),
      CLOCK_REALTIME like the heartbeat log, and postcopy-seen (true if a
      query-migrate said postcopy-active: the switch happened; a request
      that comes as the last pass ends lets precopy complete instead).
  vsqemu.py gap LOG
      The guest-seen downtime from a heartbeat log: the time from the
      source's last heartbeat to the destination's first, in ms (the same
      rule as our engine's guest_downtime_ns); "-" without both.
  vsqemu.py rate LOG SECONDS
      Guest page writes per second over the last SECONDS of the source's
      heartbeats (from their seq field).
  vsqemu.py during LOG T0_NS T1_NS
      The guest's page writes per second from T0_NS to T1_NS (a
      migration), counted from the source's last heartbeat at or before
      T0_NS to the destination's last at or before T1_NS, and the largest
      gap between two of the destination's heartbeats (ms): "RATE GAP"
      ("-" for what the log lacks).
  vsqemu.py faults TRACE
      Postcopy page-fault latencies from the destination QEMU's trace
      (log backend with -msg timestamp=on, events
      postcopy_ram_fault_thread_request, postcopy_place_page and
      postcopy_place_page_zero): each page's first request paired with
      the page's next placement, by host address. Prints "N P50_US P99_US
      MAX_US" ("0 - - -" without requests; exit 1 if the lines carry no
      timestamps).
"""
import json
import os
import selectors
import signal
import socket
import sys
import time


def hb(log, src, dst):
    sel = selectors.DefaultSelector()
    out = open(log, "a", buffering=1)
    for tag, path in (("src", src), ("dst", dst)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(2)
        sel.register(s, selectors.EVENT_READ, ("listen", tag))
    bufs = {}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        for key, _ in sel.select():
            kind, tag = key.data
            if kind == "listen":
                c, _ = key.fileobj.accept()
                bufs[c] = b""
                sel.register(c, selectors.EVENT_READ, ("conn", tag))
                continue
            data = key.fileobj.recv(65536)
            now = time.time_ns()
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                continue
            buf = bufs[key.fileobj] + data
            *lines, rest = buf.split(b"\n")
            bufs[key.fileobj] = rest
            for ln in lines:
                out.write("%d %s %s\n" % (now, tag,
                                          ln.decode("ascii", "replace")))


class Qmp:
    def __init__(self, path, timeout=30):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        end = time.time() + timeout
        while True:
            try:
                self.s.connect(path)
                break
            except OSError:
                if time.time() > end:
                    raise
                time.sleep(0.05)
        self.f = self.s.makefile("rwb", buffering=0)
        self._read()  # greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        line = self.f.readline()
        if not line:
            raise EOFError("QMP connection closed")
        return json.loads(line)

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.f.write((json.dumps(msg) + "\n").encode())
        while True:
            r = self._read()
            if "return" in r:
                return r["return"]
            if "error" in r:
                raise RuntimeError("%s: %s" % (name, r["error"]["desc"]))


SETTINGS = {
    "default": ([], {}),
    "bw10g": ([], {"max-bandwidth": 10 * 1000 ** 3}),
    "multifd2": (["multifd"], {"multifd-channels": 2}),
    "multifd2zstd": (["multifd"], {"multifd-channels": 2,
                                   "multifd-compression": "zstd"}),
    "autoconverge": (["auto-converge"], {}),
    "postcopy": (["postcopy-ram"], {}),
}


def migrate(src_path, dst_path, uri, setting, timeout, max_bw=None):
    caps, params = SETTINGS[setting]
    if max_bw:
        params = dict(params, **{"max-bandwidth": int(max_bw)})
    src, dst = Qmp(src_path), Qmp(dst_path)
    for q in (src, dst):
        if caps:
            q.cmd("migrate-set-capabilities",
                  capabilities=[{"capability": c, "state": True}
                                for c in caps])
        if params:
            q.cmd("migrate-set-parameters", **params)
    dst.cmd("migrate-incoming", uri=uri)
    t0 = time.time()
    t0_ns = time.time_ns()
    src.cmd("migrate", uri=uri)
    last = {}
    switch_ns = 0
    seen = False
    while True:
        last = src.cmd("query-migrate")
        st = last.get("status")
        seen = seen or st == "postcopy-active"
        if st in ("completed", "failed", "cancelled"):
            break
        if setting == "postcopy" and not switch_ns and st == "active" and \
                last.get("ram", {}).get("dirty-sync-count", 0) >= 2:
            switch_ns = time.time_ns()
            src.cmd("migrate-start-postcopy")
        if time.time() - t0 > timeout:
            src.cmd("migrate_cancel")
            last["status"] = "timeout"
            break
        time.sleep(0.01)
    last["t1-ns"] = time.time_ns()
    last["t0-ns"] = t0_ns
    last["switch-ns"] = switch_ns
    last["postcopy-seen"] = seen or \
        last.get("ram", {}).get("postcopy-bytes", 0) > 0
    last["wall-ms"] = round((time.time() - t0) * 1000, 1)
    if last["status"] == "completed":
        # The destination runs once it reports so.
        end = time.time() + 10
        try:
            while dst.cmd("query-status")["status"] != "running" and \
                    time.time() < end:
                time.sleep(0.01)
        except (OSError, EOFError):
            last["status"] = "destination-gone"
            last["error-desc"] = "the destination QEMU exited " \
                "after the migration completed"
    print(json.dumps(last))
    return 0 if last["status"] == "completed" else 1


def read_log(log):
    rows = []
    with open(log) as f:
        for ln in f:
            p = ln.split()
            if len(p) >= 4 and p[2] == "hb":
                rows.append((int(p[0]), p[1], p[3:]))
    return rows


def gap(log):
    rows = read_log(log)
    first_dst = next((t for t, tag, _ in rows if tag == "dst"), None)
    src = [t for t, tag, _ in rows if tag == "src" and
           (first_dst is None or t <= first_dst)]
    if first_dst is None or not src:
        print("-")
        return 1
    print("%.1f" % ((first_dst - src[-1]) / 1e6))
    return 0


def rate(log, seconds):
    rows = [(t, int(f[2])) for t, tag, f in read_log(log)
            if tag == "src" and len(f) >= 3]
    if len(rows) < 2:
        print("-")
        return 1
    t1, s1 = rows[-1]
    t0, s0 = next(((t, s) for t, s in rows if t >= t1 - seconds * 1e9),
                  rows[0])
    print("%.0f" % ((s1 - s0) * 1e9 / (t1 - t0)) if t1 > t0 else "-")
    return 0


def during(log, t0, t1):
    rows = [(t, tag, int(f[2])) for t, tag, f in read_log(log)
            if len(f) >= 3]
    a = [(t, q) for t, tag, q in rows if tag == "src" and t <= t0]
    d = [(t, q) for t, tag, q in rows if tag == "dst"]
    b = [(t, q) for t, q in d if t <= t1] or d[:1]
    r = "-"
    if a and b and b[-1][0] > a[-1][0]:
        r = "%.0f" % ((b[-1][1] - a[-1][1]) * 1e9 / (b[-1][0] - a[-1][0]))
    g = "-"
    if len(d) >= 2:
        g = "%.1f" % (max(y[0] - x[0] for x, y in zip(d, d[1:])) / 1e6)
    print(r, g)
    return 0


def pctl(v, p):
    """Nearest-rank percentile of the sorted list v."""
    return v[max(0, -(-int(p * 100) * len(v) // 100) - 1)]


def faults(trace):
    import re
    line = re.compile(r"^\d+@(\d+)\.(\d+):(postcopy_\w+) (.*)$")
    asked = {}  # page -> time of its first request not yet placed
    lat = []
    with open(trace, errors="replace") as f:
        for ln in f:
            m = line.match(ln)
            if not m:
                if "postcopy_ram_fault_thread_request" in ln:
                    print("trace lines carry no timestamps",
                          file=sys.stderr)
                    print("0 - - -")
                    return 1
                continue
            t = int(m.group(1)) * 1000000 + int(m.group(2))
            ev, rest = m.group(3), m.group(4)
            if ev == "postcopy_ram_fault_thread_request":
                a = re.search(r"HVA=(0x[0-9a-f]+)", rest)
                if a:
                    asked.setdefault(int(a.group(1), 16) & ~4095, t)
            elif ev in ("postcopy_place_page", "postcopy_place_page_zero"):
                a = re.search(r"host=(0x[0-9a-f]+)", rest)
                if a:
                    t0 = asked.pop(int(a.group(1), 16) & ~4095, None)
                    if t0 is not None:
                        lat.append(t - t0)
    if not lat:
        print("0 - - -")
        return 0
    lat.sort()
    print(len(lat), pctl(lat, 0.50), pctl(lat, 0.99), lat[-1])
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    c = argv[1]
    if c == "hb" and len(argv) == 5:
        return hb(*argv[2:])
    if c == "qmp" and len(argv) in (4, 5):
        args = json.loads(argv[4]) if len(argv) == 5 else {}
        try:
            print(json.dumps(Qmp(argv[2]).cmd(argv[3], **args)))
        except RuntimeError as e:
            print("qmp: %s" % e, file=sys.stderr)
            return 1
        return 0
    if c == "migrate" and len(argv) in (7, 8) and argv[5] in SETTINGS:
        return migrate(argv[2], argv[3], argv[4], argv[5], float(argv[6]),
                       argv[7] if len(argv) == 8 else None)
    if c == "during" and len(argv) == 5:
        return during(argv[2], int(argv[3]), int(argv[4]))
    if c == "faults" and len(argv) == 3:
        return faults(argv[2])
    if c == "gap" and len(argv) == 3:
        return gap(argv[2])
    if c == "rate" and len(argv) == 4:
        return rate(argv[2], float(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

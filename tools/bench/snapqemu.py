#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""QEMU's side of tools/bench/snapshot-vs-qemu.sh (QMP, QEMU 7.2).

  snapqemu.py save QMP FILE live|stopped
      Save the running guest to FILE with `migrate` to "exec:cat > FILE"
      (QEMU 7.2 has no file: URI and no mapped-ram), max-bandwidth 10 GB/s
      (the default, 32 MiB/s, would make it a throttled copy).
      live: migrate while it runs; QEMU stops it for the last pass (its
      downtime) and leaves it stopped ("postmigrate"): `cont` after.
      stopped: `stop`, migrate, `cont`: the guest is stopped throughout.
      Then fsyncs FILE (QEMU does not; ours does before it publishes a
      snapshot). Prints JSON: total_ms (QEMU's total-time, or stopped the
      wall time of migrate, plus the fsync), fsync_ms, pause_ms (live:
      QEMU's downtime; stopped: stop to cont), wall_ms (from the first
      command to the guest running again). A live save leaves the guest
      stopped until the cont that follows the fsync.
  snapqemu.py load QMP FILE
      Load FILE into a QEMU started with -incoming defer:
      migrate-incoming "exec:cat FILE", then query-status until it runs.
      Prints JSON: load_ms (migrate-incoming sent to running).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vsqemu import Qmp  # noqa: E402

BW = 10 * 1000 ** 3


def wait_done(q, timeout=600):
    end = time.time() + timeout
    while True:
        st = q.cmd("query-migrate")
        if st.get("status") in ("completed", "failed", "cancelled"):
            return st
        if time.time() > end:
            q.cmd("migrate_cancel")
            raise RuntimeError("migration to file did not complete")
        time.sleep(0.005)


def save(qmp, path, mode):
    q = Qmp(qmp)
    q.cmd("migrate-set-parameters", **{"max-bandwidth": BW})
    uri = "exec:cat > '%s'" % path
    t0 = time.monotonic()
    if mode == "stopped":
        q.cmd("stop")
    t1 = time.monotonic()
    q.cmd("migrate", uri=uri)
    st = wait_done(q)
    t2 = time.monotonic()
    if st.get("status") != "completed":
        raise RuntimeError("migrate: %s" % json.dumps(st))
    # QEMU does not fsync what cat wrote; ours does (before the rename
    # that publishes a snapshot): on disk, as ours, before it counts.
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    t2s = time.monotonic()
    q.cmd("cont")
    t3 = time.monotonic()
    out = {"wall_ms": round((t3 - t0) * 1000, 1),
           "fsync_ms": round((t2s - t2) * 1000, 1)}
    if mode == "stopped":
        out["total_ms"] = round((t2s - t1) * 1000, 1)
        out["pause_ms"] = out["wall_ms"]
    else:
        out["total_ms"] = round(st.get("total-time") +
                                (t2s - t2) * 1000, 1)
        out["pause_ms"] = st.get("downtime")
    print(json.dumps(out))
    return 0


def load(qmp, path):
    q = Qmp(qmp)
    t0 = time.monotonic()
    q.cmd("migrate-incoming", uri="exec:cat '%s'" % path)
    end = time.time() + 600
    while q.cmd("query-status")["status"] != "running":
        if time.time() > end:
            raise RuntimeError("the loaded guest does not run")
        time.sleep(0.002)
    print(json.dumps({"load_ms": round((time.monotonic() - t0) * 1000,
                                       1)}))
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "save" and \
            argv[4] in ("live", "stopped"):
        return save(argv[2], argv[3], argv[4])
    if len(argv) == 4 and argv[1] == "load":
        return load(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (RuntimeError, OSError, EOFError) as e:
        print("snapqemu: %s" % e, file=sys.stderr)
        sys.exit(1)

#!/usr/bin/python3
"""Many clients while a migration runs (docs/benchmarks.md, "RPC load").

Starts two daemons (shared --dev-tls dir), creates a VM on the first and
migrates it back and forth ROUNDS times; every other migration runs while
N clients (threads, each its own TLS connection) issue requests in a loop
(ping, vm_list, mig_status, dirty_rate). Prints migration time and
downtime with and without the load, and the clients' request rate and
latency.

    loadtest.py --migrated PATH --proto-dir DIR [--clients 100] [--rounds 4]
                [--rate REQ_PER_S_PER_CLIENT (10; 0 = flat out)]
"""
import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interop  # noqa: E402


def migrate(pb, src, dst, name):
    r = dst.call(mig_incoming=pb.MigIncomingRequest(listen="127.0.0.1:0",
                                                    vm_name=name))
    port = r.mig_incoming.port
    t0 = time.monotonic()
    r = src.call(mig_start=pb.MigStartRequest(vm=name,
                                              dest="127.0.0.1:%d" % port))
    if r.HasField("error") and r.error.status != pb.STATUS_OK:
        raise RuntimeError(r.error.message)
    mid = r.mig_start.id
    while True:
        r = src.call(mig_status=pb.MigStatusRequest(ref=pb.MigRef(id=mid)))
        m = r.mig_status.migrations[0]
        if m.finished:
            break
        time.sleep(0.02)
    if m.progress.phase != pb.MIG_PHASE_COMPLETED:
        raise RuntimeError("migration " + m.progress.message)
    # wait until the VM shows up on the destination
    while not any(v.name == name
                  for v in dst.call(vm_list=pb.VmListRequest()).vm_list.vms):
        time.sleep(0.02)
    return (time.monotonic() - t0, m.progress.downtime.total_ns / 1e6,
            m.progress.elapsed_ns / 1e9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--migrated", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rate", type=float, default=10,
                    help="requests/s per client; 0 = as fast as possible")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="migd-load.")
    gen = os.path.join(tmp, "gen")
    os.mkdir(gen)
    subprocess.check_call(["protoc", "-I", args.proto_dir, "--python_out=" +
                           gen, os.path.join(args.proto_dir,
                                             "control.proto")])
    sys.path.insert(0, gen)
    pb = importlib.import_module("control_pb2")
    tls = os.path.join(tmp, "tls")
    ports = [interop.free_port(), interop.free_port()]
    procs = [interop.start_daemon(args.migrated, tmp, n, tls, p)
             for n, p in zip("ab", ports)]
    try:
        ctl = [interop.Client(pb, p, tls) for p in ports]
        wl = pb.Workload(pattern=pb.WL_PATTERN_SWEEP, rate_pages=5000)
        ctl[0].call(vm_create=pb.VmCreateRequest(
            name="lt", mem_bytes=512 << 20, nr_vcpus=2, workload=wl))
        time.sleep(1)
        stop = threading.Event()
        load_on = threading.Event()
        lat = []
        lock = threading.Lock()
        errors = [0]

        def worker(i):
            c = interop.Client(pb, ports[i % 2], tls)
            calls = [dict(ping=pb.PingRequest()),
                     dict(vm_list=pb.VmListRequest()),
                     dict(mig_status=pb.MigStatusRequest()),
                     dict(dirty_rate=pb.DirtyRateRequest(vm="lt"))]
            k = 0
            mine = []
            while not stop.is_set():
                if not load_on.is_set():
                    load_on.wait(0.1)
                    continue
                t = time.monotonic()
                try:
                    c.call(**calls[k % 4])
                except Exception:  # noqa: BLE001
                    with lock:
                        errors[0] += 1
                    break
                mine.append(time.monotonic() - t)
                k += 1
                if args.rate:
                    time.sleep(max(0.0, 1.0 / args.rate -
                                   (time.monotonic() - t)))
            with lock:
                lat.extend(mine)
            c.close()

        threads = [threading.Thread(target=worker, args=(i,))
                   for i in range(args.clients)]
        for t in threads:
            t.start()
        res = {False: [], True: []}
        where = 0
        load_time = 0.0
        for r in range(args.rounds):
            loaded = r % 2 == 1
            if loaded:
                load_on.set()
            t0 = time.monotonic()
            res[loaded].append(migrate(pb, ctl[where], ctl[1 - where], "lt"))
            if loaded:
                load_time += time.monotonic() - t0
                load_on.clear()
            where = 1 - where
            time.sleep(1)
        stop.set()
        for t in threads:
            t.join()
        lat.sort()
        print("| load | migrations | wall s (mean) | engine elapsed s | "
              "downtime ms (mean) |")
        print("|---|---|---|---|---|")
        for loaded in (False, True):
            rs = res[loaded]
            print("| %s | %d | %.2f | %.2f | %.1f |" % (
                "%d clients" % args.clients if loaded else "none", len(rs),
                sum(x[0] for x in rs) / len(rs),
                sum(x[2] for x in rs) / len(rs),
                sum(x[1] for x in rs) / len(rs)))
        if lat:
            print("\nclients: %d requests in %.1f s of load (%.0f req/s), "
                  "latency p50 %.1f ms, p99 %.1f ms, max %.1f ms, "
                  "errors %d" % (
                      len(lat), load_time, len(lat) / max(load_time, 1e-9),
                      1e3 * lat[len(lat) // 2],
                      1e3 * lat[int(len(lat) * 0.99)], 1e3 * lat[-1],
                      errors[0]))
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

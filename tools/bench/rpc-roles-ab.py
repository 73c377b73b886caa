#!/usr/bin/python3
"""Cost of per-call authorisation on the TCP control RPC (A/B).

Two daemons from the same binary, started side by side: A without
--rpc-role (every CA-signed client is operator: no rule to scan), B with
32 rules of which the client's CN matches the last (the worst case of the
per-call lookup in migrated/rpc/rpcauth.c). Rounds alternate A and B;
each round sends CALLS pings on one persistent TLS connection and times
each call. Prints per-round medians and the median over rounds.

    rpc-roles-ab.py --migrated PATH --proto-dir DIR [--calls 2000]
                    [--rounds 7]
(docs/benchmarks.md, "RPC roles: cost of the per-call check")
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "interop"))
import interop  # noqa: E402


def start(migrated, tmp, name, tls, port, extra):
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen(
        [migrated, "--state-dir", os.path.join(tmp, name), "--tls-dir", tls,
         "--dev-tls", "--rpc-listen", "127.0.0.1:%d" % port,
         "--log-level", "warn", "--accel", "soft"] + extra,
        stdout=log, stderr=log)
    for _ in range(400):
        try:
            import socket
            socket.create_connection(("127.0.0.1", port), 1).close()
            return p
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("daemon %s did not start" % name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--migrated", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="migd-roles-ab.")
    rules = []
    for i in range(31):
        rules += ["--rpc-role", "someone-%02d.example:read-only" % i]
    rules += ["--rpc-role", "migrated client:operator"]
    procs = []
    try:
        # Debian's python3-protobuf: run with /usr/bin/python3.
        subprocess.check_call(["protoc", "-I", a.proto_dir, "--python_out",
                               tmp, "control.proto"])
        sys.path.insert(0, tmp)
        import control_pb2 as pb
        tls = os.path.join(tmp, "tls")
        pa, pbp = interop.free_port(), interop.free_port()
        procs.append(start(a.migrated, tmp, "A", tls, pa, []))
        procs.append(start(a.migrated, tmp, "B", tls, pbp, rules))
        res = {"A": [], "B": []}
        for r in range(a.rounds):
            for name, port in (("A", pa), ("B", pbp)):
                c = interop.Client(pb, port, tls)
                c.call(ping=pb.PingRequest())  # warm
                lat = []
                t0 = time.perf_counter()
                for _ in range(a.calls):
                    t = time.perf_counter()
                    resp = c.call(ping=pb.PingRequest())
                    lat.append(time.perf_counter() - t)
                    if not interop.ok_status(pb, resp):
                        raise RuntimeError(interop.status_name(pb, resp))
                el = time.perf_counter() - t0
                c.close()
                lat.sort()
                res[name].append((statistics.median(lat) * 1e6,
                                  lat[int(len(lat) * 0.99)] * 1e6,
                                  a.calls / el))
                print("round %d %s: median %.1f us  p99 %.1f us  %.0f calls/s"
                      % (r, name, *res[name][-1]), flush=True)
        print()
        print("| daemon | rules | median latency (us) | p99 (us) | calls/s |")
        print("|---|---|---|---|---|")
        for name, nr in (("A", 0), ("B", 32)):
            m = [x[0] for x in res[name]]
            p = [x[1] for x in res[name]]
            t = [x[2] for x in res[name]]
            print("| %s | %d | %.1f | %.1f | %.0f |" %
                  (name, nr, statistics.median(m), statistics.median(p),
                   statistics.median(t)))
        ma = statistics.median([x[0] for x in res["A"]])
        mb = statistics.median([x[0] for x in res["B"]])
        print("\nB/A median latency: %.3f" % (mb / ma))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Interoperability test of the migrated control RPC.

A client that was not written against our C code: Debian's python3-protobuf
with classes generated from proto/control.proto by protoc at run time, the
standard library's ssl module for TLS 1.3 with a client certificate, and
the framing of docs/api.md (4-byte little-endian length + message).

It starts two daemons sharing one --dev-tls directory, and over mutual TLS:
pings both, checks that a client without a certificate is refused, creates
a VM on the first, reads its dirty rate, and migrates it to the second.
Every step must pass: a refusal of the migration by either daemon, a
migration that does not complete, or one whose post-commit verification
found a page that differs is a failure, not a skip.

    interop.py --migrated PATH --proto-dir DIR [--keep]
Exit codes: 0 pass, 1 fail, 77 skip (protoc or python3-protobuf missing).
"""
import argparse
import importlib
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

FAILS = 0


def check(ok, what, detail=""):
    global FAILS
    print("%-4s %-46s %s" % ("ok" if ok else "FAIL", what, detail), flush=True)
    if not ok:
        FAILS += 1
    return ok


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client:
    """One TLS connection; call() sends a Request, returns its Response."""

    def __init__(self, pb, port, tls_dir, cert=True):
        self.pb = pb
        self.next_id = 1
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_verify_locations(os.path.join(tls_dir, "ca.pem"))
        if cert:
            ctx.load_cert_chain(os.path.join(tls_dir, "client.pem"),
                                os.path.join(tls_dir, "client.key"))
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        # The dev host certificate names 127.0.0.1: hostname checked.
        self.sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.buf = b""

    def _read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("daemon closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def call(self, **kw):
        req = self.pb.Request(id=self.next_id, **kw)
        self.next_id += 1
        data = req.SerializeToString()
        self.sock.sendall(struct.pack("<I", len(data)) + data)
        while True:
            (n,) = struct.unpack("<I", self._read_exact(4))
            sm = self.pb.ServerMessage()
            sm.ParseFromString(self._read_exact(n))
            if sm.WhichOneof("msg") == "response" and \
                    sm.response.id in (req.id, 0):
                return sm.response

    def close(self):
        self.sock.close()


def ok_status(pb, resp):
    return not resp.HasField("error") or \
        resp.error.status in (pb.STATUS_OK, pb.STATUS_INVALID)


def status_name(pb, resp):
    return pb.Status.Name(resp.error.status) + ": " + resp.error.message


def start_daemon(migrated, tmp, name, tls_dir, rpc_port):
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen(
        [migrated, "--state-dir", os.path.join(tmp, name), "--tls-dir",
         tls_dir, "--dev-tls", "--rpc-listen", "127.0.0.1:%d" % rpc_port,
         "--migration-listen", "127.0.0.1:0", "--log-level", "info",
         # each VM is a worker process that outlives its daemon by
         # default: SIGTERM must take them along here
         "--stop-vms"],
        stdout=log, stderr=log)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", rpc_port), 1).close()
            return p
        except OSError:
            if p.poll() is not None:
                break
            time.sleep(0.05)
    raise RuntimeError("daemon %s did not start (see %s.log)" % (name, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--migrated", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    protoc = shutil.which("protoc")
    try:
        importlib.import_module("google.protobuf")
    except ImportError:
        protoc = None
    if not protoc:
        print("SKIP: needs protoc (protobuf-compiler) and python3-protobuf")
        return 77
    tmp = tempfile.mkdtemp(prefix="migd-interop.")
    procs = []
    try:
        gen = os.path.join(tmp, "gen")
        os.mkdir(gen)
        subprocess.check_call([protoc, "-I", args.proto_dir,
                               "--python_out=" + gen,
                               os.path.join(args.proto_dir, "control.proto")])
        sys.path.insert(0, gen)
        pb = importlib.import_module("control_pb2")
        check(True, "classes generated from control.proto by protoc")

        tls = os.path.join(tmp, "tls")
        pa, pb_port = free_port(), free_port()
        procs.append(start_daemon(args.migrated, tmp, "a", tls, pa))
        procs.append(start_daemon(args.migrated, tmp, "b", tls, pb_port))
        a = Client(pb, pa, tls)
        b = Client(pb, pb_port, tls)
        for name, c in (("a", a), ("b", b)):
            r = c.call(ping=pb.PingRequest())
            check(ok_status(pb, r) and r.ping.rpc_tls,
                  "ping %s over mutual TLS" % name,
                  "version %s engine %s" % (r.ping.version, r.ping.engine))

        try:
            n = Client(pb, pa, tls, cert=False)
            r = n.call(ping=pb.PingRequest())
            check(False, "client without a certificate refused",
                  "got a response")
        except (ssl.SSLError, ConnectionError, OSError) as e:
            check(True, "client without a certificate refused",
                  type(e).__name__ + ": " + str(e)[:60])

        wl = pb.Workload(pattern=pb.WL_PATTERN_SWEEP, rate_pages=4000)
        r = a.call(vm_create=pb.VmCreateRequest(
            name="py1", mem_bytes=128 << 20, nr_vcpus=2, workload=wl))
        check(ok_status(pb, r) and r.vm.state == pb.VM_STATE_RUNNING,
              "vm_create py1 on a", status_name(pb, r) if
              not ok_status(pb, r) else r.vm.accel)
        time.sleep(2.5)
        r = a.call(dirty_rate=pb.DirtyRateRequest(vm="py1"))
        s = r.dirty_rate
        good = ok_status(pb, r) and s.source == "monitor" and \
            len(s.windows) == 3 and s.windows[0].pages_per_s > 0
        check(good, "dirty_rate of py1",
              "%.0f pages/s (guest %.0f), ws %d pages, %d vCPUs" % (
                  s.windows[0].pages_per_s, s.windows[0].guest_pages_per_s,
                  s.windows[0].working_set_pages, len(s.vcpus))
              if good else str(r))
        if good:
            err = abs(s.windows[0].pages_per_s -
                      s.windows[0].guest_pages_per_s) / \
                max(s.windows[0].guest_pages_per_s, 1)
            check(err < 0.05, "dirty rate within 5% of guest counters",
                  "%.2f%%" % (100 * err))

        # Migrate a -> b.
        r = b.call(mig_incoming=pb.MigIncomingRequest(
            listen="127.0.0.1:0", vm_name="py1"))
        if check(ok_status(pb, r), "mig_incoming on b",
                 "" if ok_status(pb, r) else status_name(pb, r)):
            port = r.mig_incoming.port
            r = a.call(mig_start=pb.MigStartRequest(
                vm="py1", dest="127.0.0.1:%d" % port, timeout_ms=60000))
            if check(ok_status(pb, r), "mig_start py1 a -> b",
                     "" if ok_status(pb, r) else status_name(pb, r)):
                mid = r.mig_start.id
                info = None
                for _ in range(600):
                    r = a.call(mig_status=pb.MigStatusRequest(
                        ref=pb.MigRef(id=mid)))
                    info = r.mig_status.migrations[0]
                    if info.finished:
                        break
                    time.sleep(0.1)
                pr = info.progress
                done = pr.phase == pb.MIG_PHASE_COMPLETED
                if check(done, "migration a -> b completed",
                         "%d iterations, downtime %.1f ms" % (
                             pr.iteration, pr.downtime.total_ns / 1e6)
                         if done else "%s: %s" % (
                             pb.MigPhase.Name(pr.phase), pr.message)):
                    # The source re-hashed its frozen memory against what
                    # it sent: every page must match.
                    check(pr.verify_pages > 0 and
                          pr.verify_mismatches == 0,
                          "post-commit verification: 0 differ",
                          "%d pages, %d differ" % (pr.verify_pages,
                                                   pr.verify_mismatches))
                    time.sleep(0.3)
                    r = b.call(vm_list=pb.VmListRequest())
                    vms = {v.name: v for v in r.vm_list.vms}
                    check("py1" in vms and
                          vms["py1"].state == pb.VM_STATE_RUNNING and
                          vms["py1"].origin == "migrated",
                          "py1 runs on b", str(list(vms)))
                    r = a.call(vm_list=pb.VmListRequest())
                    check(all(v.name != "py1" for v in r.vm_list.vms),
                          "py1 gone from a")
                    time.sleep(1.5)
                    r = b.call(dirty_rate=pb.DirtyRateRequest(vm="py1"))
                    check(ok_status(pb, r) and
                          r.dirty_rate.source == "monitor",
                          "dirty_rate of py1 on b",
                          "%.0f pages/s" % r.dirty_rate.windows[0].pages_per_s
                          if ok_status(pb, r) and r.dirty_rate.windows
                          else status_name(pb, r))
        a.close()
        b.close()
    except Exception as e:  # noqa: BLE001 - report and fail
        check(False, "unexpected error", repr(e))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                rc = p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = -9
            check(rc == 0, "daemon exits 0 on SIGTERM", "rc=%d" % rc)
        if FAILS or args.keep:
            print("logs kept in " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("all checks passed" if not FAILS else "%d check(s) failed" % FAILS)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

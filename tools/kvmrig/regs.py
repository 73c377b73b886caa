#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a hung rig's vCPUs are (tools/kvmrig/run.sh calls it on a hang).

    regs.py MONITOR_SOCKET SYSTEM_MAP [--stack-end]

Asks QEMU's human monitor for every vCPU's registers twice, 2 s apart, and
prints one line per vCPU and sample: RIP, the rig kernel's function at RIP
(System.map; the rig boots with nokaslr), CPL, and whether the vCPU was in
an SVM guest at the time (then RIP is the nested guest's, not the rig
kernel's). The full register dumps follow. A vCPU whose RIP does not move
is stopped (halted, or a tight loop); one that moves in the same function
is looping there.

With --stack-end (run.sh uses it on a kernel panic, while the panicking
vCPU waits in panic() on its task's stack): for each vCPU, the first 64
bytes of the 16 KiB kernel stack that RSP is in, where the kernel keeps
STACK_END_MAGIC (0x57ac6e9d), and the stack's guest-physical address. A
"corrupted stack end" panic then shows what overwrote the magic (a stamp
of the project's workload starts with its magic 0x504d5453, "STMP").
"""
import bisect
import re
import socket
import sys
import time


def monitor(path, command, timeout=5.0):
    """The monitor's answer to COMMAND (text up to the next prompt)."""
    return monitor_all(path, [command], timeout)[0]


def monitor_all(path, commands, timeout=5.0):
    """The monitor's answers to COMMANDS, sent in order on one connection
    (a "cpu N" there selects the vCPU the next commands read)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    buf = b""
    deadline = time.monotonic() + timeout
    # The banner ends with the first prompt.
    while b"(qemu)" not in buf and time.monotonic() < deadline:
        buf += s.recv(65536)
    answers = [answer(s, c, timeout) for c in commands]
    s.close()
    return answers


def answer(s, command, timeout):
    s.sendall(command.encode() + b"\n")
    buf = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        buf += chunk
        # The echoed command, the answer, then the next prompt.
        if buf.count(b"(qemu)") >= 1 and buf.rstrip().endswith(b"(qemu)"):
            break
    text = buf.decode(errors="replace")
    # The monitor echoes the command with terminal escapes: drop the
    # echo's line, keep the answer.
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
    text = re.sub(r"\s*\(qemu\)\s*$", "\n", text)
    return text.split("\n", 1)[1] if "\n" in text else text


def load_map(path):
    addrs, names = [], []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in "tTwW":
                    addrs.append(int(parts[0], 16))
                    names.append(parts[2])
    except OSError:
        pass
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def symbol(table, addr):
    addrs, names = table
    i = bisect.bisect_right(addrs, addr) - 1
    if i < 0 or addr < 0xffffffff80000000 or addr - addrs[i] > 0x100000:
        return "?"
    return "%s+0x%x" % (names[i], addr - addrs[i])


def summary(table, dump, sample):
    lines = []
    for block in re.split(r"(?=CPU#\d+)", dump):
        m = re.match(r"CPU#(\d+)", block)
        if not m:
            continue
        rip = re.search(r"RIP=([0-9a-f]+)", block)
        cpl = re.search(r"CPL=(\d)", block)
        hf = re.search(r"HLT=(\d)", block)
        rip_v = int(rip.group(1), 16) if rip else 0
        lines.append("cpu%s sample %d: RIP=%016x %s CPL=%s HLT=%s" % (
            m.group(1), sample, rip_v, symbol(table, rip_v),
            cpl.group(1) if cpl else "?", hf.group(1) if hf else "?"))
    return lines


def stack_end(path, ncpus=8):
    """What lies at the stack end of each vCPU's current kernel stack."""
    for cpu in range(ncpus):
        try:
            ok, regs = monitor_all(path, ["cpu %d" % cpu, "info registers"])
        except OSError as e:
            print("cpu%d: the monitor did not answer: %s" % (cpu, e))
            return 1
        if "invalid" in ok.lower():
            break
        rsp = re.search(r"RSP=([0-9a-f]+)", regs)
        if not rsp:
            print("cpu%d: no RSP in: %s" % (cpu, regs.strip()[:200]))
            continue
        base = int(rsp.group(1), 16) & ~0x3fff
        mem, phys = monitor_all(path, ["cpu %d" % cpu, "x /8gx 0x%x" % base,
                                       "gva2gpa 0x%x" % base])[1:]
        print("cpu%d: RSP=%s stack base 0x%x (%s)" % (
            cpu, rsp.group(1), base, phys.strip()))
        print(mem.rstrip())
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[3] == "--stack-end":
        return stack_end(sys.argv[1])
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    table = load_map(sys.argv[2])
    dumps = []
    for sample in range(2):
        if sample:
            time.sleep(2)
        try:
            dumps.append(monitor(sys.argv[1], "info registers -a"))
        except OSError as e:
            print("cpu?: the monitor did not answer: %s" % e)
            return 1
    for sample, dump in enumerate(dumps):
        for line in summary(table, dump, sample):
            print(line)
    for sample, dump in enumerate(dumps):
        print("---- sample %d" % sample)
        print(dump)
    return 0


if __name__ == "__main__":
    sys.exit(main())

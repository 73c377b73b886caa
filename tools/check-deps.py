#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that includes between folders point downwards only.

    tools/check-deps.py [SOURCE_DIR]

Every #include "a/b/c.h" of a source file (.c, .h) outside tests/ is an
edge from the file's component to the header's component. An edge to a
component that LAYERS does not allow fails the check, unless it is listed
in KNOWN (debt with a reason, to be paid off); the allowed edges must form
no cycle, so no include cycle can cross folders. A KNOWN entry that no
longer occurs is reported so that it can be deleted. Exit 0: clean, 1:
violations, 2: usage. ctest runs it (test "deps", tests/CMakeLists.txt);
docs/architecture.md draws the same picture.
"""
import os
import re
import sys

# A component is a folder, but for hvcore's top level, which holds three:
# the base (memory model, log, RCU, workload), the accelerator contract
# (accel.h) and the generic VM over the accelerators.
HVCORE_VM = {"vm", "vm_state", "vcpu", "guest_mem", "dirtyrate"}
HVCORE_ACCEL = {"accel"}
# migrated/mig's secure-channel files, a library of their own (mig_tls):
# the control RPC and the host daemon use these and not the engine.
MIG_TLS = {"tls", "addr", "devca"}

# What each component may include besides itself (and proto/, the
# generated messages, which anyone may include). Lowest layers first.
LAYERS = {
    "proto": [],
    "hvcore/base": [],
    "arch/x86": ["hvcore/base"],
    "arch/arm64": ["hvcore/base"],
    "hvcore/accel": ["hvcore/base"],
    # Device models of Linux guests: they see their VM through the
    # callbacks of hvcore/devices/dev.h only.
    "hvcore/devices": ["hvcore/base"],
    "hvcore/kvm": ["hvcore/devices", "hvcore/accel", "hvcore/base",
                   "arch/x86"],
    "hvcore/soft": ["hvcore/accel", "hvcore/base", "arch/x86", "arch/arm64"],
    "hvcore/vm": ["hvcore/kvm", "hvcore/soft", "hvcore/devices",
                  "hvcore/accel",
                  "hvcore/base", "arch/x86", "arch/arm64"],
    "migrated/mig_tls": ["hvcore/base"],
    "migrated/mig": ["migrated/mig_tls", "hvcore/vm", "hvcore/accel",
                     "hvcore/base"],
    "migrated/fleet": ["hvcore/base"],
    "migrated/rpc": ["migrated/mig_tls", "hvcore/base"],
    # What the host daemon and the worker share: their options, start-up
    # helpers, the calls both answer. Its own layer rather than part of
    # rpc, which knows no process (docs/architecture.md, "Layers").
    # (From mig, the stream versions and channel limit capabilities
    # report: macros, nothing linked.)
    "migrated/common": ["migrated/rpc", "migrated/mig", "migrated/mig_tls",
                        "hvcore/accel", "hvcore/base"],
    "migrated/vmm": ["migrated/common", "migrated/rpc", "migrated/mig",
                     "migrated/mig_tls", "migrated/fleet",
                     "hvcore/vm", "hvcore/kvm", "hvcore/soft",
                     "hvcore/devices", "hvcore/accel", "hvcore/base",
                     "arch/x86", "arch/arm64"],
    # The host reaches its workers over the control RPC only; of mig it
    # takes mig_tls: the TLS context, addresses and the development CA.
    "migrated/host": ["migrated/common", "migrated/rpc", "migrated/mig_tls",
                      "migrated/fleet", "hvcore/accel", "hvcore/base"],
    "tools/rpc": ["migrated/rpc", "migrated/mig_tls", "hvcore/base"],
    # Any other tool: anything below, and the tools' shared helpers.
    "tools": ["tools/rpc", "migrated/host", "migrated/vmm", "migrated/common",
              "migrated/rpc", "migrated/mig_tls",
              "migrated/mig", "migrated/fleet", "hvcore/vm", "hvcore/kvm",
              "hvcore/soft", "hvcore/devices", "hvcore/accel", "hvcore/base", "arch/x86",
              "arch/arm64"],
}

# Known upward edges: "file -> header", each to be removed by the change
# named next to it. Anything not here and not allowed above fails.
KNOWN = {
    # The accelerators call back into the generic VM (vCPU checkpoints,
    # memslots, guest memory): a narrow accessor header should replace it.
    "hvcore/kvm/kvm_dirty.c -> hvcore/vcpu.h",
    "hvcore/kvm/kvm_dirty.c -> hvcore/vm.h",
    "hvcore/kvm/kvm_linux.c -> hvcore/vcpu.h",
    "hvcore/kvm/kvm_linux.c -> hvcore/vm.h",
    "hvcore/kvm/kvm_priv.h -> hvcore/vm.h",
    "hvcore/kvm/kvm_state.c -> hvcore/vcpu.h",
    "hvcore/kvm/kvm_state.c -> hvcore/vm.h",
    "hvcore/kvm/kvm_vcpu.c -> hvcore/vcpu.h",
    "hvcore/kvm/kvm_vcpu.c -> hvcore/vm.h",
    "hvcore/kvm/kvm_vm.c -> hvcore/guest_mem.h",
    "hvcore/kvm/kvm_vm.c -> hvcore/vm.h",
    "hvcore/soft/soft_accel.h -> hvcore/vcpu.h",
    "hvcore/soft/soft_accel.h -> hvcore/vm.h",
    # The host checks the workers' dirty-monitor options against the
    # monitor's limits (macros only: nothing of hvcore_vm is linked).
    "migrated/host/config.c -> hvcore/dirtyrate.h",
    # The boot files' limits (HV_BOOT_PATH_MAX, HV_BOOT_CMDLINE_MAX):
    # macros only, nothing of hvcore_vm is linked (the host's nm check,
    # tools/check-host-symbols.sh); they belong in a base header.
    "migrated/common/boot_check.c -> hvcore/vm.h",
    # The same for the devices' limits and struct hv_boot_cfg, which the
    # worker fills from the checked request (migd_devices_cfg).
    "migrated/common/devices_check.c -> hvcore/vm.h",
    # The host checks that a NIC's tap opens (and is no other VM's) before
    # it spawns a worker: hv_tap_open() is plain open/ioctl in the base
    # hvcore library, nothing of a VM or an accelerator.
    "migrated/common/devices_check.c -> hvcore/devices/tap.h",
}


def component(path):
    """The component of a repository path, or None (not checked)."""
    parts = path.split("/")
    if parts[0] == "hvcore":
        if len(parts) > 2:
            return "hvcore/" + parts[1]
        stem = os.path.splitext(parts[1])[0]
        if stem in HVCORE_VM:
            return "hvcore/vm"
        if stem in HVCORE_ACCEL:
            return "hvcore/accel"
        return "hvcore/base"
    if parts[0] == "arch" and len(parts) > 2:
        return "arch/" + parts[1]
    if parts[0] == "migrated" and len(parts) > 2:
        if parts[1] == "mig" and len(parts) == 3 and \
                os.path.splitext(parts[2])[0] in MIG_TLS:
            return "migrated/mig_tls"
        return "migrated/" + parts[1]
    if parts[0] == "tools" and len(parts) > 2:
        return "tools/rpc" if parts[1] == "rpc" else "tools"
    if parts[0] == "proto":
        return "proto"
    return None


def table_cycle():
    """A cycle of LAYERS as a list of components, or None."""
    state = {}

    def visit(c, stack):
        state[c] = 1
        for n in LAYERS.get(c, []):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n] if n in stack else [c, n]
            if not state.get(n):
                cyc = visit(n, stack + [n])
                if cyc:
                    return cyc
        state[c] = 2
        return None

    for c in LAYERS:
        if not state.get(c):
            cyc = visit(c, [c])
            if cyc:
                return cyc
    return None


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    if len(sys.argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = sys.argv[1] if len(sys.argv) == 2 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    top = os.path.abspath(top)
    for c, deps in LAYERS.items():
        for d in deps:
            if d not in LAYERS:
                print(f"check-deps: table: {c} names unknown {d}")
                return 1
    cyc = table_cycle()
    if cyc:
        print("check-deps: the table has a cycle: " + " -> ".join(cyc))
        return 1

    bad, seen = [], set()
    for root in ("arch", "hvcore", "migrated", "proto", "tools"):
        for dirpath, _, files in os.walk(os.path.join(top, root)):
            for name in sorted(files):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), top)
                src = component(path)
                if src is None:
                    continue
                with open(os.path.join(top, path), errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        dst = component(m.group(1))
                        if dst is None or dst == src or dst == "proto":
                            continue
                        if dst in LAYERS[src]:
                            continue
                        edge = f"{path} -> {m.group(1)}"
                        if edge in KNOWN:
                            seen.add(edge)
                            continue
                        bad.append(f"{path}:{lineno}: {src} may not "
                                   f"include {m.group(1)} ({dst})")
    for e in sorted(KNOWN - seen):
        print(f"check-deps: known violation gone, delete it from KNOWN: {e}")
    for b in bad:
        print("check-deps: " + b)
    if bad:
        print(f"check-deps: {len(bad)} include(s) against the layers "
              "(tools/check-deps.py, LAYERS)")
        return 1
    print(f"check-deps: ok ({len(seen)} known violation(s) left)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

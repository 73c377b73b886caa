#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hold KVM's static keys on for the whole rig run (tools/kvmrig/run.sh).

KVM flips some of the kernel's static keys when the first VM or vCPU of a
kind comes and the last one goes: preempt_notifier_key (every VM; its
sites are inlined in __schedule), kvm_has_noapic_vcpu (a vCPU without the
in-kernel LAPIC), apic_hw_disabled and apic_sw_disabled (a LAPIC at
reset). Each flip rewrites kernel text live with int3 breakpoints and IPIs
(text_poke_bp). Nested under QEMU's multi-threaded TCG that has hung the
rig's kernel: a vCPU looping on the int3 at __schedule+0x2ab while holding
its run queue's lock, the other spinning on that lock, time stopped on
both (seen 2026-12-05, tools/kvmrig/regs.py). Tests create and destroy
hundreds of VMs, so the keys flipped hundreds of times per run.

This process keeps one VM of each kind alive and never runs them: a VM
with a vCPU and no irqchip, and a VM with the in-kernel irqchip and a vCPU
whose LAPIC stays at reset. Every key then stays on from the first moment,
and a VM created or destroyed by a test only moves a counter. It prints
"kvmhold: ready" when held and sleeps until killed.
"""
import fcntl
import os
import signal
import sys

KVM_CREATE_VM = 0xAE01
KVM_CREATE_VCPU = 0xAE41
KVM_CREATE_IRQCHIP = 0xAE60


def main():
    try:
        kvm = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
        plain = fcntl.ioctl(kvm, KVM_CREATE_VM, 0)
        fcntl.ioctl(plain, KVM_CREATE_VCPU, 0)
        chip = fcntl.ioctl(kvm, KVM_CREATE_VM, 0)
        fcntl.ioctl(chip, KVM_CREATE_IRQCHIP, 0)
        fcntl.ioctl(chip, KVM_CREATE_VCPU, 0)
    except OSError as e:
        print("kvmhold: %s" % e, file=sys.stderr)
        return 1
    print("kvmhold: ready", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())

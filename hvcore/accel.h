/* SPDX-License-Identifier: MIT */
/*
 * hv_accel_ops: what an accelerator (kvm, soft) supplies to the generic VM
 * and vCPU code (hvcore/vm.c, hvcore/vcpu.c). Generic code owns guest
 * memory, the memslot set and its dirty bitmaps, vCPU threads and their
 * state machine; an accelerator owns how guest code runs and how writes are
 * logged. Generic code never issues an ioctl.
 *
 * Calling context of each op (the "who" every header states):
 *   vm_init/vm_fini          creator thread; no vCPU exists / all joined.
 *   memslot_update           creator/control thread, vCPUs may run; called
 *                            after the memslot set changed.
 *   vcpu_init/vcpu_fini      creator thread, vCPU thread not running.
 *   vcpu_run                 the vCPU's own thread only.
 *   vcpu_kick                any thread; async-signal-safe not required,
 *                            but must not block and must not sleep.
 *   dirty_log_*              control thread (one at a time), vCPUs may run.
 *   dirty_harvest/clear      one harvester thread at a time (serialised by
 *                            hv_vm's dirty_lock), vCPUs may run.
 *   *_state_save/restore     control thread, every vCPU paused or created.
 *
 * Every op returns 0 or a negative errno unless said otherwise.
 */
#ifndef HVCORE_ACCEL_H
#define HVCORE_ACCEL_H

#include "hvcore/types.h"

struct hv_vm;
struct hv_vcpu;
struct hv_memslot_desc;

enum hv_accel_kind {
	HV_ACCEL_INVALID = 0,
	HV_ACCEL_KVM,  /* /dev/kvm, hvcore/kvm/ */
	HV_ACCEL_SOFT, /* software MMU and vCPUs, hvcore/soft/ */
	HV_ACCEL_COUNT,
};

/*
 * How writes are logged. Not every accelerator supports every mode;
 * dirty_log_start returns -EOPNOTSUPP for one it lacks.
 */
enum hv_dirty_mode {
	HV_DIRTY_INVALID = 0,
	HV_DIRTY_RING,	 /* kvm: per-vCPU dirty rings (needs cfg ring size) */
	HV_DIRTY_BITMAP, /* kvm: GET_DIRTY_LOG + chunked CLEAR_DIRTY_LOG */
	HV_DIRTY_WP,	 /* soft: write protection, fault sets the bit */
	HV_DIRTY_PML,	 /* soft: dirty bits + 512-entry per-vCPU log */
	HV_DIRTY_COUNT,
};

/* Why vcpu_run returned to generic code. */
enum hv_exit_kind {
	HV_EXIT_INVALID = 0,
	HV_EXIT_KICK,	   /* a kick (pause/stop request) interrupted it */
	HV_EXIT_LOG_FULL,  /* a dirty ring / PML filled; accel already made
			    * room; generic code only counts it */
	HV_EXIT_SYNC,	   /* guest ucall: sync(args) */
	HV_EXIT_HEARTBEAT, /* guest ucall: heartbeat (timestamped by vcpu.c) */
	HV_EXIT_DONE,	   /* guest ucall: its workload returned */
	HV_EXIT_ASSERT,	   /* guest ucall: assertion failed at file:line */
	HV_EXIT_SHUTDOWN,  /* guest triple fault / halt with nothing to do */
	HV_EXIT_ERROR,	   /* unexpected exit; exit.detail names it */
	HV_EXIT_COUNT,
};

#define HV_EXIT_MAX_ARGS 4

/* Filled by vcpu_run; meaningful fields depend on @kind. */
struct hv_exit {
	enum hv_exit_kind kind;
	uint64_t args[HV_EXIT_MAX_ARGS]; /* SYNC/HEARTBEAT/DONE/ASSERT */
	char file[64];			 /* ASSERT: guest file (truncated) */
	uint32_t line;			 /* ASSERT: guest line */
	/* ERROR: accelerator-specific reason (e.g. "KVM_EXIT_MMIO"), static
	 * string; also set for other kinds when useful in logs. */
	const char *detail;
};

/* Component state is a struct hv_blob (hvcore/types.h), malloc'd by the
 * accelerator, freed by the caller with free(). */
struct hv_accel_ops {
	const char *name; /* "kvm", "soft" */
	enum hv_accel_kind kind;
	/* vm_init boots cfg.boot.kernel when it is set (hvcore/vm.h); VMs
	 * with a kernel are refused (-EOPNOTSUPP) on accelerators without. */
	bool boots_linux;

	/* VM: set up vm->accel. Guest memory (vm->mem) and the (still empty)
	 * memslot set exist; vm.c then adds the initial slots, announcing each
	 * with memslot_update. */
	int (*vm_init)(struct hv_vm *vm);
	void (*vm_fini)(struct hv_vm *vm);

	/*
	 * The memslot set changed. @old NULL: slot added; @new NULL: slot
	 * deleted; both: flags or base changed. On failure the caller rolls
	 * the memslot set back.
	 */
	int (*memslot_update)(struct hv_vm *vm,
			      const struct hv_memslot_desc *old,
			      const struct hv_memslot_desc *new_desc);

	/* vCPU: set up vcpu->accel and the boot register state of the guest
	 * image entry (vcpu->id 0 = BSP). */
	int (*vcpu_init)(struct hv_vcpu *vcpu);
	void (*vcpu_fini)(struct hv_vcpu *vcpu);

	/*
	 * Run guest code until an exit generic code must see. Handles its own
	 * exits (ring full: made room, reported as HV_EXIT_LOG_FULL). Returns
	 * 0 with @exit filled, or a negative errno when the vCPU cannot go on
	 * (generic code stops it). Must return HV_EXIT_KICK promptly after
	 * vcpu_kick. A pending guest I/O is completed before returning, so
	 * state can be saved at any return.
	 */
	int (*vcpu_run)(struct hv_vcpu *vcpu, struct hv_exit *exit);
	void (*vcpu_kick)(struct hv_vcpu *vcpu);

	/*
	 * Start/stop logging in @mode for every memslot. Generic code has
	 * already set HV_MEMSLOT_F_DIRTY_LOG (bitmaps initially all set, so
	 * the first harvest names every page) before start, and clears it
	 * after stop.
	 */
	int (*dirty_log_start)(struct hv_vm *vm, enum hv_dirty_mode mode);
	void (*dirty_log_stop)(struct hv_vm *vm);

	/*
	 * Move the accelerator's logs (rings, PML buffers, kernel bitmaps)
	 * into the memslots' dirty bitmaps (hv_memslot.dirty). Must not
	 * re-arm logging for pages not yet in those bitmaps. Returns the
	 * number of log entries/pages moved (>= 0) or a negative errno.
	 */
	int64_t (*dirty_harvest)(struct hv_vm *vm);

	/*
	 * Re-arm logging (write-protect) exactly the pages in @mask: bit i =
	 * page @first + i of slot @slot_id, @count pages, @first a multiple
	 * of 64. Called after generic code fetched-and-cleared those bits
	 * from the memslot bitmap. May be NULL when harvest re-arms by itself
	 * (kvm ring mode, via KVM_RESET_DIRTY_RINGS).
	 */
	int (*dirty_clear)(struct hv_vm *vm, uint32_t slot_id, uint64_t first,
			   uint64_t count, const uint64_t *mask);

	/*
	 * Component state. Each produces its own versioned serialisation in
	 * @out (kvm: proto/vmstate.proto messages); vm.c composes them into
	 * the VM-state message. Restore validates before applying anything.
	 */
	int (*vm_state_save)(struct hv_vm *vm, struct hv_blob *out);
	int (*vm_state_restore)(struct hv_vm *vm, const struct hv_blob *in);
	int (*vcpu_state_save)(struct hv_vcpu *vcpu, struct hv_blob *out);
	int (*vcpu_state_restore)(struct hv_vcpu *vcpu,
				  const struct hv_blob *in);

	/*
	 * Devices of a Linux guest (optional, NULL for accelerators without
	 * them). devices_pause: every vCPU is parked; stop the device
	 * threads once what they took is done, flush disks (hv_vm_pause()).
	 * devices_run: restart them, before the vCPUs run (hv_vm_resume(),
	 * hv_vm_start()). dev_state_save: the devices' state (out->len 0:
	 * the VM has none), with the devices paused or never started;
	 * dev_state_restore loads it into the fresh devices of a VM created
	 * alike, validating before it applies anything.
	 */
	void (*devices_pause)(struct hv_vm *vm);
	void (*devices_run)(struct hv_vm *vm);
	int (*dev_state_save)(struct hv_vm *vm, struct hv_blob *out);
	int (*dev_state_restore)(struct hv_vm *vm, const struct hv_blob *in);
};

/* Name of an enum value for logs; "?" when out of range. */
const char *hv_accel_kind_name(enum hv_accel_kind kind);
const char *hv_dirty_mode_name(enum hv_dirty_mode mode);
const char *hv_exit_kind_name(enum hv_exit_kind kind);
/* "kvm" / "soft" -> kind; "" or NULL -> @dflt; else HV_ACCEL_INVALID. */
enum hv_accel_kind hv_accel_kind_parse(const char *s, enum hv_accel_kind dflt);

#endif

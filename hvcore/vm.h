/* SPDX-License-Identifier: MIT */
/*
 * hv_vm: one virtual machine on one accelerator (hvcore/accel.h).
 *
 * A VM owns its guest RAM (memfd-backed, hvcore/guest_mem.h), its memslot
 * set with the per-slot dirty bitmaps (hvcore/memslots.h), its vCPUs and
 * their threads (hvcore/vcpu.h) and the accelerator's private state. Guest
 * RAM starts at gpa 0 and is cut into memslots of cfg.slot_bytes (the last
 * may be shorter). Every vCPU runs the parametric workload of
 * hvcore/workload.h on its own region; the params page lives in guest RAM
 * at HV_WL_PARAMS_GPA, written by hv_vm_create() and by
 * hv_vm_wl_set_vcpu().
 *
 * Life cycle (vm->lock; one control thread drives it):
 *
 *   CREATED --start--> RUNNING --pause--> PAUSED --resume--> RUNNING
 *      |  |               |                  |  ^
 *      |  +----------start_paused------------|--+
 *      +------------------+--------stop------+--> STOPPED --destroy
 *
 * pause returns once every vCPU is parked outside guest code with any
 * pending guest I/O completed, so its state can be saved. A vCPU whose
 * guest finished (DONE), failed (ASSERT) or hit an error parks as STOPPED
 * on its own; hv_vm_wait() waits for that.
 *
 * Dirty tracking: the memslot bitmaps are the one dirty set. The
 * accelerator's logs are moved into them by hv_vm_dirty_harvest(); a
 * consumer (migration, dirty-rate monitor, test oracle) takes pages out
 * with hv_vm_dirty_fetch_clear(), which also re-arms logging for exactly
 * those pages, chunk by chunk while vCPUs run. Pages the VMM writes with
 * hv_vm_write_guest() are marked in the same bitmaps.
 *
 * Threads: all functions are for the control thread unless noted; harvest
 * and fetch_clear may run on another thread (one harvester at a time, they
 * serialise on vm->dirty_lock) concurrently with pause/resume.
 */
#ifndef HVCORE_VM_H
#define HVCORE_VM_H

#include <pthread.h>
#include <stdatomic.h>

#include "hvcore/accel.h"
#include "hvcore/ram_layout.h"
#include "hvcore/types.h"
#include "hvcore/mem_backing.h"
#include "hvcore/workload.h"

struct hv_vcpu;
struct hv_memslots;
struct hv_guest_mem;
struct hv_console;

enum hv_vm_state {
	HV_VM_INVALID = 0,
	HV_VM_CREATED,
	HV_VM_RUNNING,
	HV_VM_PAUSED,
	HV_VM_STOPPED,
};

/*
 * Limits checked by hv_vm_create(). 4 TiB: guest-physical addresses stay
 * below 2^42 (4 TiB + the 1 GiB hole), inside the soft MMU's 4-level
 * table and the 43+ physical address bits of the hosts that could back
 * such a VM; the per-page metadata a migration may touch for it (an
 * 8-byte entry per page: 8 GiB) stays reserved address space, paid for
 * only where the guest wrote. The guest image's page directories for it
 * are 16 MiB. Larger needs more host and guest work than a constant.
 */
#define HV_VM_MIN_MEM (16ULL << 20)
#define HV_VM_MAX_MEM (4ULL << 40)
#define HV_VM_MAX_VCPUS HV_WL_MAX_VCPUS
/* Guest RAM below this belongs to the guest image, its page tables and
 * stacks and the workload ABI pages; workload regions start here. */
#define HV_VM_WL_BASE (8ULL << 20)

/*
 * A Linux guest instead of the workload image (docs/guests.md). The
 * strings are copied with the cfg; "" means absent.
 */
#define HV_BOOT_PATH_MAX 512
#define HV_BOOT_CMDLINE_MAX 2048
#define HV_BOOT_DISKS_MAX 4
struct hv_boot_cfg {
	char kernel[HV_BOOT_PATH_MAX];	    /* bzImage, or ELF vmlinux (PVH) */
	char initrd[HV_BOOT_PATH_MAX];	    /* "" = none */
	char cmdline[HV_BOOT_CMDLINE_MAX];  /* appended to the default one */
	char console_log[HV_BOOT_PATH_MAX]; /* UART output file; "" = none */
	/* virtio-pci devices (docs/devices.md, hvcore/kvm/kvm_pci.c): disks
	 * on slots 1.., then the entropy device. */
	struct hv_boot_disk {
		char path[HV_BOOT_PATH_MAX]; /* raw image or block device */
		bool read_only;
	} disk[HV_BOOT_DISKS_MAX];
	uint32_t nr_disks;
	bool rng;
	/* A virtio-net device on a tap (after the entropy device): the
	 * interface's name (IFNAMSIZ, hvcore/devices/tap.h), "" = none, and
	 * the MAC address the guest sees (unicast). */
	char net_tap[16];
	uint8_t net_mac[6];
	/*
	 * Local live update (migrated/vmm/handover.h): with adopt_fds, the
	 * devices take the fds another process had open instead of opening
	 * the paths (dup'd; the caller keeps its own): net_fd the tap's,
	 * disk_fd[i] disk i's; -1 opens that one by name as usual. Only
	 * looked at when adopt_fds is true (a zeroed cfg adopts nothing);
	 * vm->cfg keeps adopt_fds false and the fds -1 after create.
	 */
	bool adopt_fds;
	int net_fd;
	int disk_fd[HV_BOOT_DISKS_MAX];
};

/* Why a VM stopped on its own (hv_vm_exit_reason()). */
enum hv_vm_exit {
	HV_VM_EXIT_NONE = 0, /* running, or stopped by its owner */
	HV_VM_EXIT_POWEROFF, /* the guest powered off */
	HV_VM_EXIT_REBOOT,   /* the guest asked for a reset */
	HV_VM_EXIT_PANIC,    /* the guest said it panicked */
	HV_VM_EXIT_ERROR,    /* a vCPU failed (hv_vm_vcpu_stats) */
	HV_VM_EXIT_COUNT,
};

struct hv_vm_cfg {
	enum hv_accel_kind accel;
	uint64_t mem_bytes; /* multiple of 2 MiB, MIN..MAX_MEM */
	/* 0: one slot per RAM range (below and above the hole); else a
	 * multiple of 2 MiB, each range cut into slots of this size. */
	uint64_t slot_bytes;
	uint32_t nr_vcpus; /* 1..HV_VM_MAX_VCPUS */
	enum hv_mem_backing backing;
	/* kvm: dirty ring entries per vCPU (power of two, 0 = no ring). KVM
	 * fixes this at VM creation; with a ring, bitmap mode needs
	 * KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP and is refused otherwise. */
	uint32_t dirty_ring_entries;
	/* hv_vm_dirty_fetch_clear() re-arms in chunks of this many pages
	 * (multiple of 64; 0 = whole range at once). */
	uint64_t clear_chunk_pages;
	/* kvm: guest image; NULL = the one built with the project. */
	const char *guest_elf;
	/*
	 * Adopt an existing guest memfd instead of creating one (local live
	 * update, migrated/vmm/handover.h). Only when adopt_mem is true is
	 * mem_fd looked at, so a zeroed cfg never adopts fd 0; cfg_init sets
	 * mem_fd = -1. mem_fd is dup'd (the caller keeps its own) and must
	 * be exactly mem_bytes long (-EINVAL). Its contents are the guest's
	 * RAM as they stand: nothing is zeroed or populated, no guest image
	 * is loaded, the workload params and status pages are not written.
	 * Only hv_vm_state_restore() of the state saved with that RAM makes
	 * such a VM runnable. vm->cfg keeps adopt_mem = false, mem_fd = -1
	 * (a copy of it creates a fresh VM); hv_vm_mem_adopted() tells.
	 */
	bool adopt_mem;
	int mem_fd;
	/* Workload of each vCPU (only [0, nr_vcpus) used). Regions follow
	 * RAM offsets across the hole (hvcore/workload.h). */
	struct hv_wl_vcpu_params wl[HV_WL_MAX_VCPUS];
	/* What logs call the VM: its owner's name for it (the daemon's VM
	 * name); "" logs as "unnamed". Logs name the objects an operator
	 * knows, never an address. */
	char name[64];
	/* boot.kernel set: boot it (accelerators with boots_linux only);
	 * the workload fields above are then not used. */
	struct hv_boot_cfg boot;
};

/* Per-VM counters (racy snapshot). */
struct hv_vm_stats {
	uint64_t harvests;
	uint64_t harvested;   /* log entries/pages moved by harvests */
	uint64_t fetched;     /* pages returned by fetch_clear */
	uint64_t clear_calls; /* ops->dirty_clear calls */
	uint64_t vmm_writes;  /* pages marked by hv_vm_write_guest */
};

/*
 * The VM object. Fields are for accelerators and vm.c/vcpu.c; other users
 * go through the functions below.
 */
struct hv_vm {
	/* immutable after create */
	const struct hv_accel_ops *ops;
	struct hv_vm_cfg cfg;
	struct hv_guest_mem *mem;
	struct hv_memslots *slots;
	struct hv_vcpu **vcpus; /* cfg.nr_vcpus entries */
	void *accel;		/* accelerator-private, set by vm_init */
	uint64_t tsc_khz;	/* set by vm_init (guest TSC rate) */

	/* protected by lock */
	pthread_mutex_t lock;
	enum hv_vm_state state;

	/* protected by dirty_lock (the harvester) */
	pthread_mutex_t dirty_lock;
	enum hv_dirty_mode dirty_mode; /* INVALID when not logging */
	uint64_t *clear_buf;	       /* one chunk of bits */

	/* atomic counters */
	struct hv_vm_stats stats;

	/* Linux guests: the UART's bytes (NULL for the workload guest) */
	struct hv_console *console;
	/* enum hv_vm_exit, set once by whoever saw the guest stop */
	_Atomic int exit_reason;
};

/* The VM's name for logs: cfg.name, or "unnamed". Any thread. */
static inline const char *hv_vm_name(const struct hv_vm *vm)
{
	return vm && vm->cfg.name[0] ? vm->cfg.name : "unnamed";
}

/*
 * Fill @cfg with defaults for @accel, @mem_bytes and @nr_vcpus: one slot,
 * anonymous memfd backing (a fresh one: mem_fd -1), no dirty ring (bitmap
 * mode), whole-range clears, and each vCPU sweeping an equal share of the
 * RAM offsets [HV_VM_WL_BASE, mem_bytes) (so the regions span the hole of
 * a VM above 3 GiB) flat out, stamp-only content, 100% writes.
 * The caller adjusts fields afterwards.
 */
void hv_vm_cfg_init(struct hv_vm_cfg *cfg, enum hv_accel_kind accel,
		    uint64_t mem_bytes, uint32_t nr_vcpus);

/*
 * Create a VM: memory, memslots, accelerator, vCPUs (not yet running), the
 * guest image loaded and the workload params page written (neither when
 * cfg.adopt_mem: see there). -EINVAL for a bad cfg or adopted fd,
 * -ENODEV when the accelerator is unavailable, -EOPNOTSUPP when a required
 * capability is missing (logged by name), -ENOMEM.
 * *out untouched on failure.
 */
int hv_vm_create(const struct hv_vm_cfg *cfg, struct hv_vm **out);

/* True when the VM boots a Linux kernel (cfg.boot.kernel set). */
static inline bool hv_vm_is_linux(const struct hv_vm *vm)
{
	return vm->cfg.boot.kernel[0] != '\0';
}

/* The console of a Linux guest (hvcore/console.h); NULL otherwise. Valid
 * until hv_vm_destroy(). Any thread. */
struct hv_console *hv_vm_console(struct hv_vm *vm);

/*
 * Why the VM stopped on its own; HV_VM_EXIT_NONE while it runs or when
 * its owner stopped it. Any thread. hv_vm_set_exit_reason() is for the
 * accelerator and devices: the first reason set sticks.
 */
enum hv_vm_exit hv_vm_exit_reason(struct hv_vm *vm);
void hv_vm_set_exit_reason(struct hv_vm *vm, enum hv_vm_exit why);
/*
 * The guest ended itself (reset, poweroff, a fatal error): record @why
 * (first one sticks) and ask every vCPU to stop without waiting; the VM
 * reads STOPPED once they all parked. Any thread, vCPU threads included.
 */
void hv_vm_guest_stopped(struct hv_vm *vm, enum hv_vm_exit why);
/* "none", "poweroff", "reboot", "panic", "error"; "?" otherwise. */
const char *hv_vm_exit_name(enum hv_vm_exit why);

/* Stops the vCPUs if needed, frees everything. destroy(NULL) no-op. */
void hv_vm_destroy(struct hv_vm *vm);

/* CREATED -> RUNNING: start one thread per vCPU. -EBUSY otherwise. */
int hv_vm_start(struct hv_vm *vm);
/* CREATED -> PAUSED: every vCPU thread started and parked before any runs
 * guest code; hv_vm_resume() then runs them all. On a failure all are
 * stopped (STOPPED) and no guest code ran. -EBUSY when not CREATED. */
int hv_vm_start_paused(struct hv_vm *vm);
/* RUNNING -> PAUSED, waiting until every vCPU is parked. */
int hv_vm_pause(struct hv_vm *vm);
/* PAUSED -> RUNNING. */
int hv_vm_resume(struct hv_vm *vm);
/* Any -> STOPPED: vCPU threads asked to stop and joined. Idempotent. */
int hv_vm_stop(struct hv_vm *vm);
enum hv_vm_state hv_vm_get_state(struct hv_vm *vm);
/*
 * Wait up to @timeout_ms until every vCPU stopped on its own (workload
 * done, assert, error). 0 when all did, -ETIMEDOUT otherwise, -EIO when a
 * guest asserted or a vCPU failed (details in hv_vm_vcpu_stats()).
 */
int hv_vm_wait(struct hv_vm *vm, unsigned timeout_ms);

/* Dirty logging (see accel.h for the modes). The first harvest after
 * start reports every page (initially-set semantics). */
int hv_vm_dirty_log_start(struct hv_vm *vm, enum hv_dirty_mode mode);
int hv_vm_dirty_log_stop(struct hv_vm *vm);

/* Move the accelerator's logs into the memslot bitmaps. Returns entries /
 * pages moved or a negative errno. Any thread (one harvester). */
int64_t hv_vm_dirty_harvest(struct hv_vm *vm);

/*
 * Fetch-and-clear pages [first, first + count) of slot @slot_id into @dst
 * (DIV_ROUND_UP(count, 64) words, bit 0 = page @first), then re-arm
 * logging for exactly those pages, cfg.clear_chunk_pages at a time.
 * @first multiple of 64; @count multiple of 64 or reaching the slot end.
 * Returns the number of dirty pages, -ENOENT (slot), -EINVAL (range).
 * Any thread (one harvester).
 */
int64_t hv_vm_dirty_fetch_clear(struct hv_vm *vm, uint32_t slot_id,
				uint64_t first, uint64_t count, uint64_t *dst);

/* Change cfg.clear_chunk_pages (multiple of 64, 0 = whole range) for the
 * next fetch_clear calls: -EINVAL otherwise. Any thread. */
int hv_vm_set_clear_chunk(struct hv_vm *vm, uint64_t pages);

/* The guest memfd, owned by @vm (closed by destroy; dup it to keep it),
 * and whether it was adopted (cfg.adopt_mem). -1 for a backing without
 * one (HV_BACKING_PRIVATE). */
int hv_vm_mem_fd(struct hv_vm *vm);
bool hv_vm_mem_adopted(struct hv_vm *vm);

/* Memslot layout: count, and id/base/npages of slot @idx (gfn order). */
unsigned hv_vm_slot_count(struct hv_vm *vm);
int hv_vm_slot_info(struct hv_vm *vm, unsigned idx, uint32_t *id,
		    gfn_t *base_gfn, uint64_t *npages);

/*
 * The memslots hv_vm_create() builds for @mem_bytes cut by @slot_bytes
 * (cfg.slot_bytes): returns how many; when @idx is one of them, its first
 * gfn and page count (ids are 0.. in gfn order). Pure: the migration's
 * destination checks an offered layout against it.
 */
unsigned hv_vm_slot_geometry(uint64_t mem_bytes, uint64_t slot_bytes,
			     unsigned idx, gfn_t *base_gfn, uint64_t *npages);

/* Where @vm's RAM is in guest-physical space (hvcore/ram_layout.h). */
struct hv_ram_layout hv_vm_ram_layout(const struct hv_vm *vm);
/* The whole of guest RAM in RAM-offset order (cfg.mem_bytes bytes; the
 * memfd's contents at the same offsets). Writes are NOT logged. */
uint8_t *hv_vm_ram(struct hv_vm *vm);

/*
 * Host pointer to [gpa, gpa + len) when it lies inside guest RAM in one
 * piece (not across the hole), else NULL. Writes through it are NOT
 * logged: use hv_vm_write_guest().
 */
void *hv_vm_gpa_to_hva(struct hv_vm *vm, gpa_t gpa, uint64_t len);
/* Copy into guest RAM and mark the pages dirty (when logging is on).
 * -EFAULT when the range is not guest RAM in one piece. Any thread. */
int hv_vm_write_guest(struct hv_vm *vm, gpa_t gpa, const void *buf,
		      uint64_t len);
int hv_vm_read_guest(struct hv_vm *vm, gpa_t gpa, void *buf, uint64_t len);
/* Mark [gpa, gpa + len) dirty (when logging is on) after the caller
 * wrote it through hv_vm_gpa_to_hva() (device models). Any thread. */
void hv_vm_mark_dirty(struct hv_vm *vm, gpa_t gpa, uint64_t len);

/* Workload: replace vCPU @idx's parameters (logged VMM write; the guest
 * picks them up at its next batch). Any thread. */
int hv_vm_wl_set_vcpu(struct hv_vm *vm, uint32_t idx,
		      const struct hv_wl_vcpu_params *p);
/* The guest-written status line of vCPU @idx, in guest RAM. */
const volatile struct hv_wl_status *hv_vm_wl_status(struct hv_vm *vm,
						    uint32_t idx);

/*
 * Pages vCPU @idx's own dirty log reported so far (hv_vcpu.dirty_logged),
 * and whether the current dirty mode attributes pages to vCPUs at all
 * (ring, PML, WP: yes; bitmap or no logging: no). Any thread.
 */
uint64_t hv_vm_vcpu_dirty_logged(struct hv_vm *vm, uint32_t idx);
bool hv_vm_dirty_per_vcpu(struct hv_vm *vm);
/* The current dirty mode, HV_DIRTY_INVALID when not logging. Any thread. */
enum hv_dirty_mode hv_vm_dirty_mode(struct hv_vm *vm);

struct hv_vcpu_stats;
/* Copy vCPU @idx's counters (exits by kind, heartbeats, assert). */
int hv_vm_vcpu_stats(struct hv_vm *vm, uint32_t idx, struct hv_vcpu_stats *out);
void hv_vm_get_stats(struct hv_vm *vm, struct hv_vm_stats *out);

/*
 * Save the complete VM state (every component of the accelerator, every
 * vCPU) as one versioned message (proto/vmstate.proto, VmState) into
 * @out (malloc'd, caller frees out->data). Guest RAM is not included.
 * The VM must be CREATED or PAUSED (-EBUSY).
 */
int hv_vm_state_save(struct hv_vm *vm, struct hv_blob *out);
/*
 * Load a state saved by hv_vm_state_save() into a VM created with the same
 * accelerator, vCPU count and RAM size, CREATED or PAUSED. -EINVAL for a
 * malformed or mismatched message (nothing applied then), -EBUSY.
 * After restore, hv_vm_start()/hv_vm_resume() continue the guest.
 */
int hv_vm_state_restore(struct hv_vm *vm, const struct hv_blob *in);

#endif

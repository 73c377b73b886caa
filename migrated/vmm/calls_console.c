// SPDX-License-Identifier: MIT
/*
 * The console calls of a Linux guest: vm_console reads its output by
 * stream position (console_read.h), vm_console_write types into it
 * (calls.h). Loop thread; the console has its own lock, so reading it
 * never waits for a vCPU.
 */
#include <errno.h>
#include <string.h>

#include "hvcore/console.h"
#include "hvcore/log.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/console_read.h"
#include "migrated/vmm/vm_info.h"

#define COMP "migd.console"

/* The VM @name with a console, or NULL with the call failed. */
static struct migd_vm *console_vm(struct migd_call *call, const char *name)
{
	struct migd_vm *v = migd_call_find_vm(call, name);

	if (!v)
		return NULL;
	if (!hv_vm_console(v->vm)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' runs the workload guest, which has no "
			       "console (a Linux guest has one: vm create "
			       "--kernel)",
			       v->name);
		return NULL;
	}
	return v;
}

void migd_call_vm_console(struct migd_call *call)
{
	const Migd__VmConsoleRequest *r = call->req->vm_console;
	struct migd_vm *v = console_vm(call, r->vm);
	struct migd_console_chunk ch;
	Migd__VmConsoleResult *res;
	size_t max = r->max_bytes ? r->max_bytes : MIGD_CONSOLE_READ_DEFAULT;
	uint8_t *buf;

	if (!v)
		return;
	if (max > MIGD_CONSOLE_READ_MAX) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "max_bytes %u: at most %u", r->max_bytes,
			       MIGD_CONSOLE_READ_MAX);
		return;
	}
	res = migd_call_alloc(call, sizeof(*res));
	buf = migd_call_alloc(call, max);
	if (!res || !buf)
		return;
	migd__vm_console_result__init(res);
	/* The state first: output read after it is at least as recent, so
	 * a client that sees STOPPED has every byte the guest wrote once
	 * it reads to the end. */
	res->state = migd_vm_api_state(v);
	res->stop_reason = (char *)migd_vm_stop_reason(v);
	migd_console_chunk_read(hv_vm_console(v->vm), r->pos, r->from_end, buf,
				max, &ch);
	res->data.data = buf;
	res->data.len = ch.len;
	res->start_pos = ch.start;
	res->next_pos = ch.next;
	res->end_pos = ch.end;
	res->lost = ch.lost;
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM_CONSOLE;
	call->resp->vm_console = res;
}

void migd_call_vm_console_write(struct migd_call *call)
{
	const Migd__VmConsoleWriteRequest *r = call->req->vm_console_write;
	struct migd_vm *v = console_vm(call, r->vm);
	Migd__VmConsoleWriteResult *res;
	Migd__VmState st;

	if (!v)
		return;
	if (!r->data.len || r->data.len > MIGD_CONSOLE_WRITE_MAX) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "console input of %zu bytes: 1..%u per call",
			       r->data.len, MIGD_CONSOLE_WRITE_MAX);
		return;
	}
	st = migd_vm_api_state(v);
	if (st == MIGD__VM_STATE__VM_STATE_STOPPED) {
		const char *why = migd_vm_stop_reason(v);

		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is stopped%s%s%s: its console takes no "
			       "input",
			       v->name, *why ? " (" : "", why, *why ? ")" : "");
		return;
	}
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__vm_console_write_result__init(res);
	res->accepted = (uint32_t)hv_console_write(hv_vm_console(v->vm),
						   r->data.data, r->data.len);
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM_CONSOLE_WRITE;
	call->resp->vm_console_write = res;
}

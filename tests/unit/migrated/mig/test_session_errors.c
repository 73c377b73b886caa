// SPDX-License-Identifier: MIT
/*
 * The error the user reads names the cause: a cancel on one side reaches
 * the other as "cancelled by the peer", not as a broken pipe or a protocol
 * error (source.c, dest.c, handshake.c mig_peer_reason(), conn.c
 * mig_conn_interrupt()); a TLS source against a plain destination, and
 * the reverse, read "TLS/plain mismatch". Real engines on loopback, a
 * bandwidth cap so that the cancel lands mid-iteration.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/workload.h"
#include "migrated/mig/devca.h"
#include "migrated/mig/handshake.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

static void cancel_run(bool at_source)
{
	struct su_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	vm = su_vm_content(HV_ACCEL_KVM, 1, 0, HV_WL_CONTENT_RANDOM, &skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&r.src_opts, false);
	r.src_opts.max_bandwidth = 4 << 20;
	r.cancel_src = at_source;
	r.destroy_dst = !at_source;
	r.act_after_ms = 400;
	su_migrate(vm, &r);
	su_print(at_source ? "source cancels" : "destination cancels", &r);
	CU_ASSERT_EQUAL(r.src_ret, -ECANCELED);
	CU_ASSERT_EQUAL(r.dst_ret, -ECANCELED);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_CANCELLED);
	CU_ASSERT_EQUAL(r.dst_final.phase, MIG_PHASE_CANCELLED);
	/* The side that did not cancel names the peer as the cause. */
	CU_ASSERT_PTR_NOT_NULL(strstr(at_source ? r.dst_final.message
						: r.src_final.message,
				      MIG_PEER_CANCELLED));
	CU_ASSERT_PTR_NULL(r.dst_vm);
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_source_cancel_reads_as_cancelled_by_the_peer(void)
{
	cancel_run(true);
}

static void test_destination_cancel_reads_as_cancelled_by_the_peer(void)
{
	cancel_run(false);
}

/*
 * One side TLS, the other --insecure: the source fails at once and says
 * so; the destination drops the connection and keeps waiting (a stray
 * peer does not end it) until cancelled.
 */
static void mismatch_run(bool src_tls)
{
	struct mig_opts so, dop;
	struct mig_progress fin;
	struct mig_source *src;
	struct mig_dest *dst;
	struct hv_vm *vm;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	vm = su_vm(HV_ACCEL_KVM, 1, 0, &skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&so, false);
	su_opts(&dop, true);
	if (src_tls) {
		dop.tls = NULL;
		dop.insecure = true;
	} else {
		so.tls = NULL;
		so.insecure = true;
	}
	CU_ASSERT_EQUAL_FATAL(mig_dest_start("127.0.0.1", 0, &dop, NULL, NULL,
					     NULL, &dst),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_source_start(vm, "127.0.0.1",
					       mig_dest_port(dst), &so, NULL,
					       NULL, &src),
			      0);
	CU_ASSERT_EQUAL(mig_source_wait(src, &fin), -EPROTOTYPE);
	printf("\n    source %s: \"%s\"\n", src_tls ? "TLS" : "plain",
	       fin.message);
	CU_ASSERT_PTR_NOT_NULL(strstr(fin.message, "TLS/plain mismatch"));
	mig_source_destroy(src);
	mig_dest_get_progress(dst, &fin);
	CU_ASSERT_EQUAL(fin.error, 0);
	mig_dest_cancel(dst);
	CU_ASSERT_EQUAL(mig_dest_wait(dst, NULL, NULL), -ECANCELED);
	mig_dest_destroy(dst);
	hv_vm_destroy(vm);
}

static void test_tls_source_on_plain_destination_reads_mismatch(void)
{
	mismatch_run(true);
}

static void test_plain_source_on_tls_destination_reads_mismatch(void)
{
	mismatch_run(false);
}

/* The source trusts another CA than the one that signed the destination:
 * the user reads a certificate error, not "Permission denied". */
static void test_wrong_ca_reads_as_a_certificate_error(void)
{
	char dir[64] = "/tmp/mig-ca2-XXXXXX", cmd[96];
	struct mig_tls_cfg wrong;
	struct mig_opts so, dop;
	struct mig_progress fin;
	struct mig_source *src;
	struct mig_dest *dst;
	struct mig_devca ca2;
	struct hv_vm *vm;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "rm -rf -- %s", dir);
	strcat(dir, "/ca");
	CU_ASSERT_EQUAL_FATAL(mig_devca_ensure(dir, &ca2), 0);
	vm = su_vm(HV_ACCEL_KVM, 1, 0, &skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&so, false);
	su_opts(&dop, true);
	wrong = *so.tls;
	wrong.ca_file = ca2.ca_cert;
	so.tls = &wrong;
	CU_ASSERT_EQUAL_FATAL(mig_dest_start("127.0.0.1", 0, &dop, NULL, NULL,
					     NULL, &dst),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_source_start(vm, "127.0.0.1",
					       mig_dest_port(dst), &so, NULL,
					       NULL, &src),
			      0);
	CU_ASSERT_EQUAL(mig_source_wait(src, &fin), -EACCES);
	printf("\n    wrong CA: \"%s\"\n", fin.message);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(fin.message, "certificate verify failed"));
	CU_ASSERT_PTR_NULL(strstr(fin.message, "Permission denied"));
	mig_source_destroy(src);
	mig_dest_destroy(dst);
	hv_vm_destroy(vm);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{ "wrong_ca_reads_as_a_certificate_error",
	  test_wrong_ca_reads_as_a_certificate_error },
	{ "tls_source_on_plain_destination_reads_mismatch",
	  test_tls_source_on_plain_destination_reads_mismatch },
	{ "plain_source_on_tls_destination_reads_mismatch",
	  test_plain_source_on_tls_destination_reads_mismatch },
	{ "source_cancel_reads_as_cancelled_by_the_peer",
	  test_source_cancel_reads_as_cancelled_by_the_peer },
	{ "destination_cancel_reads_as_cancelled_by_the_peer",
	  test_destination_cancel_reads_as_cancelled_by_the_peer },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("migrated/mig/session_errors", su_init, su_clean, kvm_tests);

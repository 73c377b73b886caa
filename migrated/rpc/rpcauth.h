/* SPDX-License-Identifier: MIT */
/*
 * migd_rpcauth: who may call what on the TCP control RPC.
 *
 * Mutual TLS (tlsconn.h) proves that a client holds a certificate from the
 * daemon's CA; this decides what that certificate may do. The operator maps
 * certificate identities -- the subject CN or a subjectAltName (DNS, URI or
 * e-mail) -- to one of four roles (--rpc-role IDENTITY:ROLE, repeatable):
 *
 *   none         every call refused (a revoked identity);
 *   read-only    listing, inspection, status, watching, events, dirty
 *                rates and estimates: nothing that changes a VM or a
 *                migration;
 *   peer-daemon  what another daemon needs to receive a VM from us or send
 *                one: read-only plus mig_incoming over TLS (an insecure,
 *                plain-TCP incoming migration would accept a VM from
 *                anyone: operator only); no create, destroy, pause,
 *                migration start, cancel or resolve;
 *   operator     every call.
 *
 * The first rule naming any of the certificate's identities wins. An
 * identity no rule names gets --rpc-default-role; left unset, that is
 * operator while no rule exists (every CA-signed client could call
 * everything before roles existed) and none once one does. The Unix socket
 * (mode 0600, the daemon's user) is always operator.
 *
 * A refused call answers STATUS_PERMISSION_DENIED and names the role it
 * needs; nothing of it runs.
 *
 * Threads: pure functions on their arguments; any thread.
 */
#ifndef MIGD_RPCAUTH_H
#define MIGD_RPCAUTH_H

#include <stdbool.h>

#include "proto/control.pb-c.h"

enum migd_rpc_role {
	MIGD_RPC_ROLE_INVALID = 0, /* parse error; "unset" as a default */
	MIGD_RPC_ROLE_NONE,
	MIGD_RPC_ROLE_READ_ONLY,
	MIGD_RPC_ROLE_PEER,
	MIGD_RPC_ROLE_OPERATOR,
};

#define MIGD_RPC_ID_MAX 255   /* bytes of one identity */
#define MIGD_RPC_RULES_MAX 32 /* --rpc-role options */

struct migd_rpc_rule {
	char id[MIGD_RPC_ID_MAX + 1];
	enum migd_rpc_role role;
};

/* "none", "read-only", "peer-daemon", "operator" (and back); INVALID /
 * "?" otherwise. */
enum migd_rpc_role migd_rpc_role_parse(const char *s);
const char *migd_rpc_role_name(enum migd_rpc_role role);

/*
 * "IDENTITY:ROLE", split at the last ':' (a URI identity keeps its
 * colons). 0, or -EINVAL (empty identity, longer than MIGD_RPC_ID_MAX,
 * unknown role), *@out untouched then.
 */
int migd_rpc_rule_parse(const char *s, struct migd_rpc_rule *out);

/*
 * The role of a client whose certificate carries @ids[0..@nr_ids-1]:
 * the first of @rules[0..@nr_rules-1] naming one of them, else @dflt
 * resolved as above. *@matched (may be NULL) gets the identity that
 * matched, or NULL when the default applied.
 */
enum migd_rpc_role migd_rpcauth_role(const struct migd_rpc_rule *rules,
				     unsigned nr_rules, enum migd_rpc_role dflt,
				     const char *const *ids, unsigned nr_ids,
				     const char **matched);

/* May @role make call @call_case (Migd__Request__CallCase)? Unknown
 * calls need operator. */
bool migd_rpcauth_allows(enum migd_rpc_role role, unsigned call_case);

/* The least role that may make @call_case (for the refusal message). */
enum migd_rpc_role migd_rpcauth_needs(unsigned call_case);

/* The same for a whole request, whose arguments may need more than its
 * call: mig_incoming with insecure set needs operator. */
enum migd_rpc_role migd_rpcauth_needs_request(const Migd__Request *req);

/* Does @role hold what @need stands for (the order above)? */
bool migd_rpcauth_covers(enum migd_rpc_role role, enum migd_rpc_role need);

#endif

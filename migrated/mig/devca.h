/* SPDX-License-Identifier: MIT */
/*
 * mig_devca: development certificates, so that a demo of TLS migration
 * needs no manual step. mig_devca_ensure() makes, if missing, a throwaway
 * CA and a host and a client certificate signed by it (EC P-256 keys,
 * SHA-256 signatures, made with OpenSSL's APIs, not its CLI) in a state
 * directory; keys are written with mode 0600.
 *
 * Two daemons that should trust each other must use the same directory
 * (or copies of it): each CA only trusts its own certificates. Creation is
 * serialised by an flock on <dir>/devca.lock and each file is written to a
 * temporary name and renamed, so concurrent callers see either nothing or
 * a complete set.
 *
 * Never for production: the CA key sits next to the certificates.
 */
#ifndef MIG_DEVCA_H
#define MIG_DEVCA_H

#define MIG_DEVCA_PATH_MAX 512

struct mig_devca {
	char ca_cert[MIG_DEVCA_PATH_MAX];     /* <dir>/ca.pem */
	char ca_key[MIG_DEVCA_PATH_MAX];      /* <dir>/ca.key */
	char host_cert[MIG_DEVCA_PATH_MAX];   /* <dir>/host.pem */
	char host_key[MIG_DEVCA_PATH_MAX];    /* <dir>/host.key */
	char client_cert[MIG_DEVCA_PATH_MAX]; /* <dir>/client.pem */
	char client_key[MIG_DEVCA_PATH_MAX];  /* <dir>/client.key */
};

/*
 * Make @dir (mode 0700) and the files above where missing; existing files
 * are kept. The host certificate (CN and SAN "localhost", 127.0.0.1, ::1,
 * plus this machine's host name) is good for both TLS server and client
 * use; the client one for client use. *@out gets the paths. Returns 0,
 * -ENAMETOOLONG, -errno or -EIO (OpenSSL failure, logged).
 */
int mig_devca_ensure(const char *dir, struct mig_devca *out);

/*
 * Issue a certificate for @cn signed by the CA in @ca_cert/@ca_key, valid
 * from now + @not_before_s to now + @not_after_s (negative offsets make
 * expired certificates for tests), with a new P-256 key. Writes
 * @cert_out and @key_out (0600). Returns 0, -errno or -EIO.
 */
int mig_devca_issue(const char *ca_cert, const char *ca_key, const char *cn,
		    long not_before_s, long not_after_s,
		    const char *cert_out, const char *key_out);

#endif

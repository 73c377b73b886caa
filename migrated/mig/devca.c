// SPDX-License-Identifier: MIT
#include "migrated/mig/devca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "hvcore/log.h"
#include "migrated/mig/tls.h"

#define CA_DAYS (3650L * 86400L)
#define LEAF_DAYS (825L * 86400L)

static EVP_PKEY *key_new(void)
{
	return EVP_EC_gen("P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -EIO;
	ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -EIO;
}

/*
 * Make a certificate for @key named @cn. With @issuer NULL it is a
 * self-signed CA, else a leaf signed by @issuer/@issuer_key with @san and
 * @eku. Returns NULL on failure.
 */
static X509 *cert_make(EVP_PKEY *key, const char *cn, X509 *issuer,
		       EVP_PKEY *issuer_key, long from_s, long to_s,
		       const char *san, const char *eku)
{
	X509 *x = X509_new();
	X509_NAME *name;
	unsigned char serial[16];
	BIGNUM *bn = NULL;

	if (!x || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f; /* a positive serial number */
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		goto fail;
	if (!X509_set_version(x, X509_VERSION_3) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), from_s) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), to_s) ||
	    !X509_set_pubkey(x, key))
		goto fail;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
					(const unsigned char *)"migrated dev",
					-1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					(const unsigned char *)cn, -1, -1, 0))
		goto fail;
	if (!X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer)
					    : name))
		goto fail;
	if (!issuer) {
		if (add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") ||
		    add_ext(x, x, NID_key_usage,
			    "critical,keyCertSign,cRLSign") ||
		    add_ext(x, x, NID_subject_key_identifier, "hash"))
			goto fail;
	} else {
		if (add_ext(x, issuer, NID_basic_constraints,
			    "critical,CA:FALSE") ||
		    add_ext(x, issuer, NID_key_usage,
			    "critical,digitalSignature") ||
		    add_ext(x, issuer, NID_ext_key_usage, eku) ||
		    add_ext(x, issuer, NID_subject_key_identifier, "hash") ||
		    add_ext(x, issuer, NID_authority_key_identifier,
			    "keyid:always") ||
		    (san && add_ext(x, issuer, NID_subject_alt_name, san)))
			goto fail;
	}
	if (!X509_sign(x, issuer ? issuer_key : key, EVP_sha256()))
		goto fail;
	BN_free(bn);
	return x;
fail:
	BN_free(bn);
	X509_free(x);
	return NULL;
}

/* Write @path atomically (temporary file, then rename), mode @mode. */
static int write_pem(const char *path, mode_t mode, X509 *cert, EVP_PKEY *key)
{
	char tmp[MIG_DEVCA_PATH_MAX + 8];
	FILE *f;
	int fd, ok;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	/* open() applies the umask; keys must be 0600 regardless. */
	if (fchmod(fd, mode)) {
		close(fd);
		unlink(tmp);
		return -errno;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -errno;
	}
	ok = cert ? PEM_write_X509(f, cert)
		  : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	if (fflush(f) || fsync(fileno(f)))
		ok = 0;
	if (fclose(f))
		ok = 0;
	if (!ok || rename(tmp, path)) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

static int write_pair(X509 *cert, EVP_PKEY *key, const char *cert_out,
		      const char *key_out)
{
	int ret = write_pem(key_out, 0600, NULL, key);

	return ret ? ret : write_pem(cert_out, 0644, cert, NULL);
}

static int load_ca(const char *ca_cert, const char *ca_key, X509 **cert,
		   EVP_PKEY **key)
{
	FILE *f = fopen(ca_cert, "re");

	if (!f)
		return -errno;
	*cert = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	f = fopen(ca_key, "re");
	if (!f) {
		X509_free(*cert);
		return -errno;
	}
	*key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!*cert || !*key) {
		X509_free(*cert);
		EVP_PKEY_free(*key);
		return -EIO;
	}
	return 0;
}

static int issue(X509 *ca, EVP_PKEY *ca_key, const char *cn, long from_s,
		 long to_s, const char *san, const char *eku,
		 const char *cert_out, const char *key_out)
{
	EVP_PKEY *key = key_new();
	X509 *x = NULL;
	int ret = -EIO;

	if (key)
		x = cert_make(key, cn, ca, ca_key, from_s, to_s, san, eku);
	if (x)
		ret = write_pair(x, key, cert_out, key_out);
	else
		mig_tls_log_errors("devca_issue");
	X509_free(x);
	EVP_PKEY_free(key);
	return ret;
}

int mig_devca_issue(const char *ca_cert, const char *ca_key, const char *cn,
		    long not_before_s, long not_after_s,
		    const char *cert_out, const char *key_out)
{
	EVP_PKEY *cak;
	X509 *ca;
	char san[256];
	int ret;

	ret = load_ca(ca_cert, ca_key, &ca, &cak);
	if (ret)
		return ret;
	snprintf(san, sizeof(san), "DNS:%s", cn);
	ret = issue(ca, cak, cn, not_before_s, not_after_s, san,
		    "serverAuth,clientAuth", cert_out, key_out);
	X509_free(ca);
	EVP_PKEY_free(cak);
	return ret;
}

static int path_join(char *out, const char *dir, const char *name)
{
	if (snprintf(out, MIG_DEVCA_PATH_MAX, "%s/%s", dir, name) >=
	    MIG_DEVCA_PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int devca_make(struct mig_devca *p)
{
	EVP_PKEY *cak = NULL;
	X509 *ca = NULL;
	char host[256], san[512];
	int ret = -EIO;

	if (access(p->ca_cert, R_OK) || access(p->ca_key, R_OK)) {
		/* A new CA invalidates every certificate made before. */
		unlink(p->host_cert);
		unlink(p->client_cert);
		cak = key_new();
		ca = cak ? cert_make(cak, "migrated dev CA", NULL, NULL, -3600,
				     CA_DAYS, NULL, NULL)
			 : NULL;
		if (!ca) {
			mig_tls_log_errors("devca_ca");
			goto out;
		}
		ret = write_pair(ca, cak, p->ca_cert, p->ca_key);
		if (ret)
			goto out;
		hv_info("tls", "op=devca_create file=%s", p->ca_cert);
	} else {
		ret = load_ca(p->ca_cert, p->ca_key, &ca, &cak);
		if (ret)
			goto out;
	}
	if (gethostname(host, sizeof(host)))
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	snprintf(san, sizeof(san),
		 "DNS:localhost,DNS:%s,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1", host);
	ret = 0;
	if (access(p->host_cert, R_OK) || access(p->host_key, R_OK))
		ret = issue(ca, cak, "localhost", -3600, LEAF_DAYS, san,
			    "serverAuth,clientAuth", p->host_cert,
			    p->host_key);
	if (!ret && (access(p->client_cert, R_OK) ||
		     access(p->client_key, R_OK)))
		ret = issue(ca, cak, "migrated client", -3600, LEAF_DAYS,
			    NULL, "clientAuth", p->client_cert,
			    p->client_key);
out:
	X509_free(ca);
	EVP_PKEY_free(cak);
	return ret;
}

int mig_devca_ensure(const char *dir, struct mig_devca *out)
{
	struct mig_devca p;
	char lock[MIG_DEVCA_PATH_MAX];
	int fd, ret;

	if ((ret = path_join(p.ca_cert, dir, "ca.pem")) ||
	    (ret = path_join(p.ca_key, dir, "ca.key")) ||
	    (ret = path_join(p.host_cert, dir, "host.pem")) ||
	    (ret = path_join(p.host_key, dir, "host.key")) ||
	    (ret = path_join(p.client_cert, dir, "client.pem")) ||
	    (ret = path_join(p.client_key, dir, "client.key")) ||
	    (ret = path_join(lock, dir, "devca.lock")))
		return ret;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = devca_make(&p);
	flock(fd, LOCK_UN);
	close(fd);
	if (ret) {
		hv_err("tls", "op=devca_ensure dir=%s err=%d", dir, ret);
		return ret;
	}
	*out = p;
	return 0;
}

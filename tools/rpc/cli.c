// SPDX-License-Identifier: MIT
/*
 * migd_cli: version line, option errors, --json errors (cli.h).
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "migrated/rpc/parse.h"
#include "tools/rpc/cli.h"
#include "tools/rpc/json.h"

#ifndef MIGD_CLI_VERSION
#define MIGD_CLI_VERSION "unknown"
#endif

void migd_cli_version(const char *tool)
{
	printf("%s (migrated) %s\n", tool, MIGD_CLI_VERSION);
}

int migd_cli_bad(const char *tool, const char *opt, const char *val,
		 const char *what)
{
	fprintf(stderr, "%s: bad %s '%s': expected %s\n", tool, opt,
		val ? val : "", what);
	return 2;
}

int migd_cli_bad_range(const char *tool, const char *opt, const char *val,
		       uint64_t lo, uint64_t hi)
{
	fprintf(stderr, "%s: bad %s '%s': expected an integer in %llu..%llu\n",
		tool, opt, val ? val : "", (unsigned long long)lo,
		(unsigned long long)hi);
	return 2;
}

int migd_cli_parse_rate(const char *s, uint64_t *bytes_per_s)
{
	char tmp[64];
	size_t n = s ? strlen(s) : 0;

	if (n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n + 1);
	if (n > 2 && !strcmp(tmp + n - 2, "/s"))
		tmp[n - 2] = '\0';
	return migd_parse_size(tmp, bytes_per_s);
}

/* ---- TLS files ---------------------------------------------------------- */

/* OpenSSL's first queued reason, the queue cleared. */
static const char *ssl_reason(void)
{
	unsigned long e = ERR_get_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	ERR_clear_error();
	return r ? r : "no PEM data of the expected kind";
}

/* @path read as PEM of @kind (0 certificate, 1 private key). */
static int pem_load(const char *path, int kind, void **obj, char *why,
		    size_t size)
{
	FILE *f;
	int ret = 0;

	if (!path || !*path) {
		snprintf(why, size, "no %s file given",
			 kind ? "key" : "certificate");
		return -EINVAL;
	}
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(why, size, "%s: %s", path, strerror(errno));
		return ret;
	}
	ERR_clear_error();
	*obj = kind ? (void *)PEM_read_PrivateKey(f, NULL, NULL, NULL)
		    : (void *)PEM_read_X509(f, NULL, NULL, NULL);
	if (!*obj) {
		snprintf(why, size, "%s: not a PEM %s (%s)", path,
			 kind ? "private key" : "certificate", ssl_reason());
		ret = -EBADMSG;
	}
	fclose(f);
	return ret;
}

int migd_cli_tls_why(const char *ca, const char *cert, const char *key,
		     char *why, size_t size)
{
	void *ca_x = NULL, *cert_x = NULL, *key_p = NULL;
	int ret;

	ret = pem_load(ca, 0, &ca_x, why, size);
	if (!ret)
		ret = pem_load(cert, 0, &cert_x, why, size);
	if (!ret)
		ret = pem_load(key, 1, &key_p, why, size);
	if (!ret && X509_check_private_key(cert_x, key_p) != 1) {
		snprintf(why, size, "%s: not the key of %s (%s)", key, cert,
			 ssl_reason());
		ret = -EKEYREJECTED;
	}
	X509_free(ca_x);
	X509_free(cert_x);
	EVP_PKEY_free(key_p);
	return ret;
}

/* ---- --json errors ----------------------------------------------------- */

static FILE *real_stderr;
static char *kept;
static size_t kept_len;
static bool json_printed;

void migd_cli_json_begin(void)
{
	FILE *f;

	if (real_stderr)
		return;
	f = open_memstream(&kept, &kept_len);
	if (!f)
		return; /* errors stay plain text */
	real_stderr = stderr;
	/* glibc's stderr is an assignable variable: every fprintf(stderr)
	 * of the tool and of the libraries it calls lands in the buffer. */
	stderr = f;
}

void migd_cli_json_printed(void)
{
	json_printed = true;
}

static const char *status_of(int exit_code)
{
	switch (exit_code) {
	case 2:
		return "STATUS_INVALID_ARGUMENT";
	case 3:
		return "STATUS_NOT_FOUND";
	case 4:
		return "STATUS_UNAVAILABLE";
	case 5:
		return "STATUS_UNAVAILABLE"; /* daemon not reachable */
	default:
		return "STATUS_INTERNAL";
	}
}

int migd_cli_json_end(int exit_code)
{
	size_t n;

	if (!real_stderr)
		return exit_code;
	fclose(stderr);
	stderr = real_stderr;
	real_stderr = NULL;
	if (kept_len)
		fwrite(kept, 1, kept_len, stderr);
	if (exit_code && !json_printed) {
		/* One line: the first line of what was said, trimmed. */
		n = kept ? strcspn(kept, "\n") : 0;
		if (kept)
			kept[n] = '\0';
		fflush(stdout);
		printf("{\"error\":{\"status\":\"%s\",\"message\":",
		       status_of(exit_code));
		migd_json_string(stdout, kept && *kept ? kept : "failed");
		printf("},\"exit_code\":%d,\"client\":true}\n", exit_code);
		fflush(stdout);
	}
	free(kept);
	kept = NULL;
	kept_len = 0;
	return exit_code;
}

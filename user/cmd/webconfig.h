/*
 * zctrace export --web-config FILE: TLS and basic auth in the Prometheus exporter-toolkit's
 * web-config format (what node_exporter's --web.config.file reads), read with libyaml.
 */
#ifndef WEBCONFIG_H
#define WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* tls_server_config.client_auth_type, as Go's crypto/tls names them */
enum client_auth {
	CLIENT_NO_CERT,			/* NoClientCert: none asked for (the default) */
	CLIENT_REQUEST_CERT,		/* RequestClientCert: asked for, not needed, not verified */
	CLIENT_REQUIRE_ANY,		/* RequireAnyClientCert: needed, not verified */
	CLIENT_VERIFY_IF_GIVEN,		/* VerifyClientCertIfGiven: verified against client_ca_file if sent */
	CLIENT_REQUIRE_AND_VERIFY,	/* RequireAndVerifyClientCert: needed and verified */
};

struct web_user {
	char *name;
	char *hash;		/* bcrypt: $2a$, $2b$ or $2y$ */
	unsigned char passed[32];	/* the HMAC of the last password that passed: no bcrypt for it again */
	bool has_passed;
};

struct web_header {
	char *name, *value;
};

/* The files a config names, watched for a reload: the config itself first. */
#define WEB_FILES 4

struct web_config {
	bool tls;
	char *cert_pem, *key_pem, *ca_pem;	/* the files' contents; ca_pem NULL without client_ca_file */
	enum client_auth client_auth;
	char priorities[96];			/* GnuTLS's, from min_version and max_version */
	struct web_user *users;
	int nusers;
	unsigned char hmac_key[32];		/* random, this config's own: for web_user.passed */
	struct web_header *headers;
	int nheaders;
	char *files[WEB_FILES];
	struct stat stamps[WEB_FILES];		/* what each was when read: a change reloads */
};

/*
 * Reads @path into @c, checking everything a server would trip over later: the YAML, every key,
 * the certificate and key (loaded, and matched), the client CA, every hash (bcrypt, accepted by
 * crypt()). 0, or -1 with the reason in @why (one line, no file name) and @c holding only the
 * files it read, for web_config_changed() to say when to try again. web_config_free() it either way.
 */
int web_config_load(struct web_config *c, const char *path, char *why, size_t whylen);
void web_config_free(struct web_config *c);

/* Whether a file @c was read from has changed (or gone) since. */
bool web_config_changed(const struct web_config *c);
/* @to (freed first) names the files @from read, as they are now: to see them settle. */
void web_config_restamp(struct web_config *to, const struct web_config *from);

/* Whether @client_auth needs a certificate from the client, and whether it verifies one. */
bool client_auth_requires(enum client_auth a);
bool client_auth_verifies(enum client_auth a);

/* The user @user with password @pass is in @c: a crypt() per call (the same time for an unknown
 * user), but the last password that passed for a user passes again at the cost of an HMAC. True
 * where @c has no users. */
bool web_user_ok(struct web_config *c, const char *user, const char *pass);

#endif

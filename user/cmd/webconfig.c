/*
 * The exporter-toolkit's web-config file (tls_server_config, http_server_config,
 * basic_auth_users), parsed with libyaml's document API and checked as a whole before the
 * exporter attaches anything: a file that would fail later fails here, in one line.
 */
#include <crypt.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libgen.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <yaml.h>
#include "cmd/webconfig.h"

/* a web-config and every PEM file it names are small: anything larger is not one */
#define WEB_FILE_MAX (1 << 20)

static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* The whole of @path (NUL-terminated) into *@out. 0, or -1 with @why. */
static int slurp(const char *path, char **out, size_t *outlen, char *why, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n = 0, cap = 4096;
	char *buf;

	if (!f)
		return fail(why, len, "cannot read %s: %s", path, strerror(errno));
	buf = malloc(cap + 1);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap)
			break;
		if (cap >= WEB_FILE_MAX) {
			free(buf);
			fclose(f);
			return fail(why, len, "%s is larger than %d bytes", path, WEB_FILE_MAX);
		}
		cap *= 2;
		char *more = realloc(buf, cap + 1);

		if (!more)
			free(buf);
		buf = more;
	}
	if (!buf || ferror(f)) {
		int e = buf ? errno : ENOMEM;

		free(buf);
		fclose(f);
		return fail(why, len, "cannot read %s: %s", path, strerror(e));
	}
	fclose(f);
	buf[n] = '\0';
	if (strlen(buf) != n) {
		free(buf);
		return fail(why, len, "%s holds a NUL byte", path);
	}
	*out = buf;
	if (outlen)
		*outlen = n;
	return 0;
}

/* ---- the YAML ---- */

struct tls_keys {
	char *cert_file, *key_file, *ca_file, *auth, *min, *max;
};

struct parse {
	yaml_document_t *doc;
	const char *dir;		/* the config file's directory: relative paths are in it */
	struct web_config *c;
	struct tls_keys *tls;		/* tls_server_config's keys, checked once all are read */
	char *why;
	size_t len;
};

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Calls @fn for each key of mapping @n (named @what), refusing a key given twice. */
static int each_pair(struct parse *p, yaml_node_t *n, const char *what,
		     int (*fn)(struct parse *p, const char *key, yaml_node_t *v))
{
	yaml_node_pair_t *pair, *seen;

	if (!n || n->type != YAML_MAPPING_NODE)
		return fail(p->why, p->len, "%s is not a mapping", what);
	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		const char *key = scalar(yaml_document_get_node(p->doc, pair->key));

		if (!key)
			return fail(p->why, p->len, "a key of %s is not a string", what);
		for (seen = n->data.mapping.pairs.start; seen < pair; seen++)
			if (!strcmp(scalar(yaml_document_get_node(p->doc, seen->key)), key))
				return fail(p->why, p->len, "%s.%s is given twice", what, key);
		if (fn(p, key, yaml_document_get_node(p->doc, pair->value)))
			return -1;
	}
	return 0;
}

/* A scalar value @v of key @key into a copy at *@out. */
static int string_of(struct parse *p, const char *key, yaml_node_t *v, char **out)
{
	const char *s = scalar(v);

	if (!s || !*s)
		return fail(p->why, p->len, "%s is not a non-empty string", key);
	*out = strdup(s);
	return *out ? 0 : fail(p->why, p->len, "out of memory");
}

/* The keys of the exporter-toolkit that zctrace does not take, with what to use instead. */
static const char *const unsupported[][2] = {
	{ "cert", "cert_file" }, { "key", "key_file" }, { "client_ca", "client_ca_file" },
	{ "cipher_suites", "GnuTLS's defaults" }, { "curve_preferences", "GnuTLS's defaults" },
	{ "prefer_server_cipher_suites", "GnuTLS's defaults" },
	{ "client_allowed_sans", "a client CA of its own for the clients allowed" },
};

/* A file's path, relative to the config file's directory unless absolute, as the toolkit has it. */
static int path_of(struct parse *p, const char *key, yaml_node_t *v, char **out)
{
	char *rel;

	if (string_of(p, key, v, &rel))
		return -1;
	if (rel[0] == '/') {
		*out = rel;
		return 0;
	}
	if (asprintf(out, "%s/%s", p->dir, rel) < 0) {
		*out = NULL;
		free(rel);
		return fail(p->why, p->len, "out of memory");
	}
	free(rel);
	return 0;
}

static int tls_key(struct parse *p, const char *key, yaml_node_t *v)
{
	struct tls_keys *t = p->tls;

	if (!strcmp(key, "cert_file"))
		return path_of(p, "tls_server_config.cert_file", v, &t->cert_file);
	if (!strcmp(key, "key_file"))
		return path_of(p, "tls_server_config.key_file", v, &t->key_file);
	if (!strcmp(key, "client_ca_file"))
		return path_of(p, "tls_server_config.client_ca_file", v, &t->ca_file);
	if (!strcmp(key, "client_auth_type"))
		return string_of(p, "tls_server_config.client_auth_type", v, &t->auth);
	if (!strcmp(key, "min_version"))
		return string_of(p, "tls_server_config.min_version", v, &t->min);
	if (!strcmp(key, "max_version"))
		return string_of(p, "tls_server_config.max_version", v, &t->max);
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
		if (!strcmp(key, unsupported[i][0]))
			return fail(p->why, p->len, "tls_server_config.%s is not supported by zctrace (use %s)", key,
				    unsupported[i][1]);
	return fail(p->why, p->len, "unknown key tls_server_config.%s", key);
}

/* the headers the exporter-toolkit lets a config set */
static const char *const settable_headers[] = {
	"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "X-XSS-Protection",
	"Content-Security-Policy",
};

static int header_key(struct parse *p, const char *key, yaml_node_t *v)
{
	struct web_config *c = p->c;
	struct web_header *h;
	size_t i;

	for (i = 0; i < sizeof(settable_headers) / sizeof(settable_headers[0]); i++)
		if (!strcasecmp(key, settable_headers[i]))
			break;
	if (i == sizeof(settable_headers) / sizeof(settable_headers[0]))
		return fail(p->why, p->len, "http_server_config.headers: header %s cannot be set", key);
	for (int k = 0; k < c->nheaders; k++)
		if (!strcmp(c->headers[k].name, settable_headers[i]))
			return fail(p->why, p->len, "http_server_config.headers.%s is given twice", settable_headers[i]);
	h = realloc(c->headers, (c->nheaders + 1) * sizeof(*h));
	if (!h)
		return fail(p->why, p->len, "out of memory");
	c->headers = h;
	h = &c->headers[c->nheaders];
	*h = (struct web_header){};
	h->name = strdup(settable_headers[i]);
	c->nheaders++;	/* freed with the config from here on */
	if (!h->name)
		return fail(p->why, p->len, "out of memory");
	if (string_of(p, "an http_server_config.headers value", v, &h->value))
		return -1;
	if (strpbrk(h->value, "\r\n"))
		return fail(p->why, p->len, "http_server_config.headers.%s holds a line break", key);
	return 0;
}

static int http_key(struct parse *p, const char *key, yaml_node_t *v)
{
	const char *s = scalar(v);

	if (!strcmp(key, "http2")) {
		/* a permission in the toolkit; zctrace serves HTTP/1.1, which every scraper speaks */
		if (!s || (strcmp(s, "true") && strcmp(s, "false")))
			return fail(p->why, p->len, "http_server_config.http2 is not true or false");
		return 0;
	}
	if (!strcmp(key, "headers"))
		return each_pair(p, v, "http_server_config.headers", header_key);
	return fail(p->why, p->len, "unknown key http_server_config.%s", key);
}

static int user_key(struct parse *p, const char *key, yaml_node_t *v)
{
	struct web_config *c = p->c;
	struct web_user *u = realloc(c->users, (c->nusers + 1) * sizeof(*u));

	if (!u)
		return fail(p->why, p->len, "out of memory");
	c->users = u;
	u = &c->users[c->nusers];
	*u = (struct web_user){ .name = strdup(key) };
	if (!u->name)
		return fail(p->why, p->len, "out of memory");
	c->nusers++;
	if (strchr(key, ':') || !*key)
		return fail(p->why, p->len, "basic_auth_users: user '%s' cannot be used in basic auth", key);
	return string_of(p, "a basic_auth_users password hash", v, &u->hash);
}

static int top_key(struct parse *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "tls_server_config")) {
		p->c->tls = true;
		return each_pair(p, v, "tls_server_config", tls_key);
	}
	if (!strcmp(key, "http_server_config"))
		return each_pair(p, v, "http_server_config", http_key);
	if (!strcmp(key, "basic_auth_users"))
		return each_pair(p, v, "basic_auth_users", user_key);
	return fail(p->why, p->len, "unknown key %s", key);
}

/* ---- checking what the keys name ---- */

static const struct {
	const char *name;
	enum client_auth a;
} auth_types[] = {
	{ "NoClientCert", CLIENT_NO_CERT }, { "RequestClientCert", CLIENT_REQUEST_CERT },
	{ "RequireAnyClientCert", CLIENT_REQUIRE_ANY }, { "RequireClientCert", CLIENT_REQUIRE_ANY },	/* its old name */
	{ "VerifyClientCertIfGiven", CLIENT_VERIFY_IF_GIVEN },
	{ "RequireAndVerifyClientCert", CLIENT_REQUIRE_AND_VERIFY },
};

bool client_auth_requires(enum client_auth a)
{
	return a == CLIENT_REQUIRE_ANY || a == CLIENT_REQUIRE_AND_VERIFY;
}

bool client_auth_verifies(enum client_auth a)
{
	return a == CLIENT_VERIFY_IF_GIVEN || a == CLIENT_REQUIRE_AND_VERIFY;
}

/* "TLS12" -> 2, "TLS13" -> 3; -1 for a version zctrace does not serve */
static int tls_minor(const char *v)
{
	return !strcmp(v, "TLS12") ? 2 : !strcmp(v, "TLS13") ? 3 : -1;
}

static int check_version(struct parse *p, const char *key, const char *v, int *minor)
{
	if (!v)
		return 0;
	*minor = tls_minor(v);
	if (*minor >= 0)
		return 0;
	if (!strcmp(v, "TLS10") || !strcmp(v, "TLS11"))
		return fail(p->why, p->len, "tls_server_config.%s %s: zctrace serves TLS 1.2 and 1.3 only", key, v);
	return fail(p->why, p->len, "tls_server_config.%s '%s' is not TLS12 or TLS13", key, v);
}

/* The certificate, the key and the client CA: read, and loaded as GnuTLS will load them. */
static int check_tls(struct parse *p, struct tls_keys *t)
{
	struct web_config *c = p->c;
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert, key, ca;
	size_t n;
	int lo = 2, hi = 3, err;

	if (!t->cert_file)
		return fail(p->why, p->len, "tls_server_config has no cert_file");
	if (!t->key_file)
		return fail(p->why, p->len, "tls_server_config has no key_file");
	c->client_auth = CLIENT_NO_CERT;
	if (t->auth) {
		size_t i;

		for (i = 0; i < sizeof(auth_types) / sizeof(auth_types[0]); i++)
			if (!strcmp(t->auth, auth_types[i].name))
				break;
		if (i == sizeof(auth_types) / sizeof(auth_types[0]))
			return fail(p->why, p->len, "tls_server_config.client_auth_type '%s' is not one of NoClientCert, "
				    "RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, "
				    "RequireAndVerifyClientCert", t->auth);
		c->client_auth = auth_types[i].a;
	}
	if (t->ca_file && c->client_auth == CLIENT_NO_CERT)
		return fail(p->why, p->len, "tls_server_config.client_ca_file is set, but client_auth_type asks for "
			    "no client certificate");
	/* libmicrohttpd asks for a client certificate only with a trust list, and a client sends one
	 * only if it chains to a CA the server names: so every kind but NoClientCert takes one here */
	if (!t->ca_file && c->client_auth != CLIENT_NO_CERT)
		return fail(p->why, p->len, "tls_server_config.client_auth_type %s needs client_ca_file", t->auth);
	if (check_version(p, "min_version", t->min, &lo) || check_version(p, "max_version", t->max, &hi))
		return -1;
	if (lo > hi)
		return fail(p->why, p->len, "tls_server_config.min_version %s is above max_version %s", t->min, t->max);
	snprintf(c->priorities, sizeof(c->priorities), "NORMAL:-VERS-ALL%s%s", hi >= 3 ? ":+VERS-TLS1.3" : "",
		 lo <= 2 ? ":+VERS-TLS1.2" : "");
	if (slurp(t->cert_file, &c->cert_pem, &n, p->why, p->len))
		return -1;
	cert = (gnutls_datum_t){ (unsigned char *)c->cert_pem, (unsigned int)n };
	if (slurp(t->key_file, &c->key_pem, &n, p->why, p->len))
		return -1;
	key = (gnutls_datum_t){ (unsigned char *)c->key_pem, (unsigned int)n };
	if (gnutls_certificate_allocate_credentials(&cred))
		return fail(p->why, p->len, "out of memory");
	err = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
	if (err < 0) {
		gnutls_certificate_free_credentials(cred);
		return fail(p->why, p->len, "the certificate %s with the key %s does not load: %s", t->cert_file,
			    t->key_file, gnutls_strerror(err));
	}
	if (t->ca_file) {
		if (slurp(t->ca_file, &c->ca_pem, &n, p->why, p->len)) {
			gnutls_certificate_free_credentials(cred);
			return -1;
		}
		ca = (gnutls_datum_t){ (unsigned char *)c->ca_pem, (unsigned int)n };
		err = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (err <= 0) {
			gnutls_certificate_free_credentials(cred);
			return fail(p->why, p->len, "the client CA %s does not load: %s", t->ca_file,
				    err ? gnutls_strerror(err) : "no certificate in it");
		}
	}
	gnutls_certificate_free_credentials(cred);
	return 0;
}

static int check_users(struct parse *p)
{
	struct crypt_data *cd = calloc(1, sizeof(*cd));

	if (!cd)
		return fail(p->why, p->len, "out of memory");
	for (int i = 0; i < p->c->nusers; i++) {
		const char *h = p->c->users[i].hash, *out;

		/* $2?$NN$ and 53 characters of salt and hash */
		if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) || h[3] != '$') {
			free(cd);
			return fail(p->why, p->len, "basic_auth_users.%s is not a bcrypt hash ($2a$, $2b$ or $2y$)",
				    p->c->users[i].name);
		}
		/* each step of the cost doubles the time of every request's check */
		if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' || (h[4] - '0') * 10 + h[5] - '0' > 15) {
			free(cd);
			return fail(p->why, p->len, "basic_auth_users.%s: bcrypt cost %.2s is above 15 (seconds a "
				    "request)", p->c->users[i].name, h + 4);
		}
		out = crypt_r("", h, cd);
		if (!out || strncmp(out, h, 29)) {
			free(cd);
			return fail(p->why, p->len, "basic_auth_users.%s: crypt() does not take its hash", p->c->users[i].name);
		}
	}
	free(cd);
	return 0;
}

/* Everything @c holds but the files it read and their stamps. */
static void web_config_drop(struct web_config *c)
{
	for (int i = 0; i < c->nusers; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	for (int i = 0; i < c->nheaders; i++) {
		free(c->headers[i].name);
		free(c->headers[i].value);
	}
	free(c->users);
	free(c->headers);
	free(c->cert_pem);
	free(c->key_pem);
	free(c->ca_pem);
	c->users = NULL;
	c->headers = NULL;
	c->cert_pem = c->key_pem = c->ca_pem = NULL;
	c->nusers = c->nheaders = 0;
	c->tls = false;
}

void web_config_free(struct web_config *c)
{
	web_config_drop(c);
	for (int i = 0; i < WEB_FILES; i++)
		free(c->files[i]);
	*c = (struct web_config){};
}

static void tls_keys_free(struct tls_keys *t)
{
	free(t->cert_file);
	free(t->key_file);
	free(t->ca_file);
	free(t->auth);
	free(t->min);
	free(t->max);
}

/* Notes what @path is now, at slot @i, so that a change shows: a file that is not there is
 * noted as such (all zero). -1 then, or if out of memory. The path as written: a symbolic link
 * moved to another file (certbot's live/ into archive/) is a change. */
static int stamp(struct web_config *c, int i, const char *path)
{
	if (!path)
		return 0;
	c->files[i] = strdup(path);
	if (c->files[i] && !stat(c->files[i], &c->stamps[i]))
		return 0;
	memset(&c->stamps[i], 0, sizeof(c->stamps[i]));
	return -1;
}

/* The stamps of the files @t names, before they are read: a change after is seen at the next look. */
static void stamp_tls(struct web_config *c, const struct tls_keys *t)
{
	stamp(c, 1, t->cert_file);
	stamp(c, 2, t->key_file);
	stamp(c, 3, t->ca_file);
}

int web_config_load(struct web_config *c, const char *path, char *why, size_t whylen)
{
	struct tls_keys t = {};
	struct parse p = { .c = c, .tls = &t, .why = why, .len = whylen };
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	size_t n;
	char *text = NULL, *dir = NULL;
	int err = -1;

	*c = (struct web_config){};
	stamp(c, 0, path);
	dir = strdup(path);
	if (!dir) {
		fail(why, whylen, "out of memory");
		goto out;
	}
	p.dir = dirname(dir);
	if (slurp(path, &text, &n, why, whylen))
		goto out;
	if (!yaml_parser_initialize(&parser)) {
		fail(why, whylen, "out of memory");
		goto out;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, n);
	if (!yaml_parser_load(&parser, &doc)) {
		fail(why, whylen, "not YAML: %s at line %zu, column %zu", parser.problem ?: "a parse error",
		     parser.problem_mark.line + 1, parser.problem_mark.column + 1);
		goto out_parser;
	}
	p.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	/* an empty file is a config with nothing in it, as for the exporter-toolkit */
	err = root && !(root->type == YAML_SCALAR_NODE && !root->data.scalar.length) ?
	      each_pair(&p, root, "the file", top_key) : 0;
	stamp_tls(c, &t);
	if (!err && c->tls)
		err = check_tls(&p, &t);
	if (!err)
		err = check_users(&p);
	if (!err && gnutls_rnd(GNUTLS_RND_KEY, c->hmac_key, sizeof(c->hmac_key)))
		err = fail(why, whylen, "no random key from GnuTLS");
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
out:
	free(text);
	free(dir);
	tls_keys_free(&t);
	if (err)
		web_config_drop(c);
	return err;
}

void web_config_restamp(struct web_config *to, const struct web_config *from)
{
	web_config_free(to);
	for (int i = 0; i < WEB_FILES; i++)
		if (from->files[i])
			stamp(to, i, from->files[i]);
}

bool web_config_changed(const struct web_config *c)
{
	struct stat st;

	for (int i = 0; i < WEB_FILES; i++) {
		if (!c->files[i])
			continue;
		if (stat(c->files[i], &st)) {
			if (c->stamps[i].st_ino)
				return true;	/* gone */
			continue;		/* still not there */
		}
		/* ctime too: a copy that keeps the mtime (cp -p, rsync -t) cannot keep it */
		if (st.st_ino != c->stamps[i].st_ino || st.st_dev != c->stamps[i].st_dev ||
		    st.st_size != c->stamps[i].st_size || st.st_mtim.tv_sec != c->stamps[i].st_mtim.tv_sec ||
		    st.st_mtim.tv_nsec != c->stamps[i].st_mtim.tv_nsec ||
		    st.st_ctim.tv_sec != c->stamps[i].st_ctim.tv_sec || st.st_ctim.tv_nsec != c->stamps[i].st_ctim.tv_nsec)
			return true;
	}
	return false;
}

/* Compares all of @a and @b, however early they differ. */
static bool same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return !d;
}

bool web_user_ok(struct web_config *c, const char *user, const char *pass)
{
	static struct crypt_data cd;	/* the HTTP thread's alone */
	unsigned char mac[32];
	struct web_user *u = NULL;
	const char *out;
	bool ok;

	if (!c->nusers)
		return true;
	if (!user || !pass)
		return false;
	for (int i = 0; i < c->nusers; i++)
		if (same_secret(c->users[i].name, user))
			u = &c->users[i];
	if (u && !gnutls_hmac_fast(GNUTLS_MAC_SHA256, c->hmac_key, sizeof(c->hmac_key), pass, strlen(pass), mac) &&
	    u->has_passed && !gnutls_memcmp(mac, u->passed, sizeof(mac)))
		return true;
	/* an unknown user costs the same crypt(), against the first user's hash */
	out = crypt_r(pass, u ? u->hash : c->users[0].hash, &cd);
	ok = u && out && same_secret(out, u->hash);
	if (ok && !gnutls_hmac_fast(GNUTLS_MAC_SHA256, c->hmac_key, sizeof(c->hmac_key), pass, strlen(pass), mac)) {
		memcpy(u->passed, mac, sizeof(mac));
		u->has_passed = true;
	}
	return ok;
}

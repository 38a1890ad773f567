/*
 * zctrace export: the census read at a fixed interval and folded into the exposition's
 * aggregate; libmicrohttpd serves it at /metrics from its own thread. The reads do not wait for
 * scrapes: the kernel's map is bounded, so keys left unread through a long scrape interval would
 * be evicted (counts lost) and exited processes' rows would wait; a fixed interval bounds both,
 * and every scraper sees the same figures.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include "trace/census.h"
#include "os/cli.h"
#include "os/clock.h"
#include "cmd/export.h"
#include "cmd/webconfig.h"
#include "report/exposition.h"
#include "trace/progstats.h"
#include "contract/opts.h"
#include "zctrace.skel.h"

enum { EXPORT_OPT_COMPLETE = 0x100, EXPORT_OPT_BPF_STATS, EXPORT_OPT_WEB_CONFIG, EXPORT_OPT_COST,
       EXPORT_OPT_PER_CALL };

/* HTTP connections at once, and how long an idle one is kept */
#define EXPORT_MAX_CONNECTIONS 32
#define EXPORT_CONNECTION_TIMEOUT_S 10

struct export_args {
	const char *listen;
	int max_series;
	double interval;
	uint32_t max_keys;
	enum method cap;
	bool verbose;
	bool complete;		/* --complete: the boundary account and the sites that need the syscall tracepoints */
	bool bpf_stats;		/* --bpf-stats: the census's own BPF cost, from the kernel's statistics */
	const char *web_config;	/* --web-config: TLS and basic auth, the exporter-toolkit's format */
	unsigned cost_hz;	/* --cost: the sampler's rate; 0: off */
	bool per_call;		/* --per-call: TCP's copies at each call, not from the sockets' counters */
};

struct exporter {
	struct export_args a;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int listen_fd;
	struct census *census;
	struct prog_stats costs;
	pthread_mutex_t lock;		/* the aggregate: written by reads, read by the HTTP thread */
	struct expo expo;
	struct MHD_Daemon *httpd;
	struct web_config web;		/* read by the HTTP thread; swapped only while no server runs */
	struct web_config refused;	/* the files of the last one that did not load */
	struct web_config settle;	/* a changed one's files as they were when last looked at */
	double settle_since;		/* ... since when */
};

static const char export_doc[] =
	"Serve the machine-wide copy census as Prometheus metrics (OpenMetrics) at /metrics, until SIGINT "
	"or SIGTERM.\n"
	"\n"
	"USAGE: zctrace export [OPTIONS]\n"
	"\n"
	"EXAMPLES:\n"
	"    zctrace export                    # http://127.0.0.1:9435/metrics\n"
	"    zctrace export --listen [::1]:9435 --max-series 50\n"
	"    zctrace export --listen 198.18.0.1:9435 --web-config web.yml  # TLS\n"
	"\v"
	"Every process but this one is counted, by (comm, cgroup). Past --max-series label pairs the "
	"rest are folded into comm=\"other\",cgroup=\"other\" (zctrace_series_folded_total). What the "
	"census measures on this kernel, and why a site is not measured, is in zctrace_site_info.";

static const struct argp_option export_options[] = {
	{ "listen", 'l', "ADDR:PORT", 0, "Where to serve (default " EXPORT_DEFAULT_LISTEN "; [ADDR]:PORT for IPv6)", 0 },
	{ "max-series", 's', "N", 0, "At most N (comm, cgroup) label pairs, the heaviest by bytes (default 200)", 0 },
	{ "interval", 'i', "SECONDS", 0, "Read the kernel's maps every SECONDS (default 1)", 0 },
	{ "max-keys", 'k', "N", 0, "(process, site) keys the kernel's map holds (default: the census's)", 0 },
	{ "method", 'm', "METHOD", 0, "Attach with METHOD at best: fentry, kprobe or tracepoint", 0 },
	CENSUS_COMPLETE_OPTION(EXPORT_OPT_COMPLETE),
	CENSUS_BPF_STATS_OPTION(EXPORT_OPT_BPF_STATS, "as zctrace_bpf_*"),
	CENSUS_COST_OPTION(EXPORT_OPT_COST, "(zctrace_copy_cpu_seconds_total)"),
	CENSUS_PER_CALL_OPTION(EXPORT_OPT_PER_CALL),
	{ "web-config", EXPORT_OPT_WEB_CONFIG, "FILE", 0, "TLS and basic auth, in the Prometheus exporter-toolkit's "
	  "web-config format (reloaded when it changes)", 0 },
	{ "verbose", 'v', NULL, 0, "libbpf's messages", 0 },
	{},
};

/* "ADDR:PORT" or "[ADDR]:PORT" into @x->addr; -EINVAL when it is neither. */
static int parse_listen(struct exporter *x, const char *s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE }, *res;
	char host[256], *colon, *end;
	unsigned long port;

	if (strlen(s) >= sizeof(host))
		return -EINVAL;
	snprintf(host, sizeof(host), "%s", s);
	colon = strrchr(host, ':');
	if (!colon || colon == host)
		return -EINVAL;
	*colon = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 1 || port > 65535 || colon[1] == '+' || colon[1] == '-')
		return -EINVAL;
	if (host[0] == '[') {
		if (colon[-1] != ']')
			return -EINVAL;
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
		hints.ai_family = AF_INET6;
	} else if (strchr(host, ':')) {
		return -EINVAL;		/* an IPv6 address needs its brackets */
	}
	if (getaddrinfo(host, colon + 1, &hints, &res))
		return -EINVAL;
	memcpy(&x->addr, res->ai_addr, res->ai_addrlen);
	x->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static error_t export_parse(int key, char *arg, struct argp_state *state)
{
	struct exporter *x = state->input;
	uint64_t v;

	switch (key) {
	case 'l':
		x->a.listen = arg;
		break;
	case 's':
		if (wl_parse_size(arg, &v) || v < 1 || v > EXPO_MAX_SERIES)
			argp_failure(state, EXIT_USAGE, 0, "invalid --max-series '%s' (1 to %d)", arg, EXPO_MAX_SERIES);
		x->a.max_series = v;
		break;
	case 'i':
		if (wl_parse_seconds(arg, 3600, &x->a.interval) || x->a.interval < 0.01)
			argp_failure(state, EXIT_USAGE, 0, "invalid --interval '%s' (seconds, 0.01 to 3600)", arg);
		break;
	case 'k':
		if (wl_parse_size(arg, &v) || v < 1 || v > 1 << 24)
			argp_failure(state, EXIT_USAGE, 0, "invalid --max-keys '%s' (1 to 16M)", arg);
		x->a.max_keys = v;
		break;
	case 'm':
		if (parse_method(arg, &x->a.cap) || x->a.cap == METHOD_RAW_TP || x->a.cap == METHOD_NONE)
			argp_failure(state, EXIT_USAGE, 0, "unknown method '%s' (fentry, kprobe or tracepoint)", arg);
		break;
	case 'v':
		x->a.verbose = true;
		break;
	case EXPORT_OPT_COMPLETE:
		x->a.complete = true;
		break;
	case EXPORT_OPT_BPF_STATS:
		x->a.bpf_stats = true;
		break;
	case EXPORT_OPT_PER_CALL:
		x->a.per_call = true;
		break;
	case EXPORT_OPT_COST:
		if (cost_parse_hz(arg, 1, &x->a.cost_hz))
			argp_failure(state, EXIT_USAGE, 0, "invalid --cost '%s' (samples a second, 1 to %d)", arg,
				     COST_MAX_HZ);
		break;
	case EXPORT_OPT_WEB_CONFIG:
		x->a.web_config = arg;
		break;
	case ARGP_KEY_ARG:
		argp_failure(state, EXIT_USAGE, 0, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (parse_listen(x, x->a.listen))
			argp_failure(state, EXIT_USAGE, 0,
				     "invalid --listen '%s' (ADDR:PORT, e.g. 127.0.0.1:9435 or [::1]:9435)",
				     x->a.listen);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The listening socket, made here so that a taken port is named before anything is loaded. */
static int open_listener(struct exporter *x)
{
	int one = 1;

	x->listen_fd = socket(x->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (x->listen_fd < 0 ||
	    setsockopt(x->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(x->listen_fd, (struct sockaddr *)&x->addr, x->addrlen) || listen(x->listen_fd, 64)) {
		fprintf(stderr, "zctrace: cannot listen on %s: %s\n", x->a.listen, strerror(errno));
		return 1;
	}
	return 0;
}

/* @status with @body, or (MHD_HTTP_UNAUTHORIZED) a basic-auth challenge */
static enum MHD_Result reply(struct exporter *x, struct MHD_Connection *conn, unsigned int status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	for (int i = 0; i < x->web.nheaders; i++)
		MHD_add_response_header(r, x->web.headers[i].name, x->web.headers[i].value);
	if (status == MHD_HTTP_UNAUTHORIZED && x->web.nusers)
		ret = MHD_queue_basic_auth_fail_response(conn, "zctrace", r);
	else
		ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct exporter *x, struct MHD_Connection *conn, unsigned int status,
				  const char *text)
{
	return reply(x, conn, status, "text/plain; charset=utf-8", (char *)text, strlen(text), MHD_RESPMEM_PERSISTENT);
}

/* Why the client's certificate does not pass tls_server_config.client_auth_type; NULL if it does. */
static const char *client_cert_refused(struct exporter *x, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	unsigned int n = 0, status = 0;

	if (!x->web.tls || x->web.client_auth == CLIENT_NO_CERT)
		return NULL;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return "no TLS session\n";
	if (!gnutls_certificate_get_peers(ci->tls_session, &n) || !n)
		return client_auth_requires(x->web.client_auth) ? "a client certificate is required\n" : NULL;
	/* signed by the client CA, and for a client (its key purpose, where it names one), as Go checks */
	if (client_auth_verifies(x->web.client_auth) &&
	    (gnutls_certificate_verify_peers(ci->tls_session, &(gnutls_typed_vdata_st){
			.type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT }, 1,
			&status) < 0 || status))
		return "the client certificate is not signed by the client CA for a client\n";
	return NULL;
}

/* Whether the request passes --web-config's client certificate and basic auth checks; if not, the
 * refusal is queued in *@ret. */
static bool admitted(struct exporter *x, struct MHD_Connection *conn, enum MHD_Result *ret)
{
	const char *why = client_cert_refused(x, conn);
	char *user, *pass = NULL;
	bool ok;

	if (why) {
		*ret = reply_text(x, conn, MHD_HTTP_UNAUTHORIZED, why);
		return false;
	}
	if (!x->web.nusers)
		return true;
	user = MHD_basic_auth_get_username_password(conn, &pass);
	ok = web_user_ok(&x->web, user, pass);
	if (pass) {
		explicit_bzero(pass, strlen(pass));
		MHD_free(pass);
	}
	MHD_free(user);
	if (!ok)
		*ret = reply_text(x, conn, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
	return ok;
}

static enum MHD_Result serve_metrics(struct exporter *x, struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	enum expo_format fmt = expo_negotiate(accept);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int err;

	if (!f)
		return reply_text(x, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	pthread_mutex_lock(&x->lock);
	err = expo_write(f, &x->expo, fmt);
	pthread_mutex_unlock(&x->lock);
	if (fclose(f) || err) {
		free(text);
		return reply_text(x, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(x, conn, MHD_HTTP_OK, expo_content_type(fmt), text, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			     const char *version, const char *upload, size_t *upload_len, void **req)
{
	struct exporter *x = cls;
	enum MHD_Result ret;

	if (!admitted(x, conn, &ret))
		return ret;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(x, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics\n");
	if (!strcmp(url, "/metrics"))
		return serve_metrics(x, conn);
	if (!strcmp(url, "/"))
		return reply_text(x, conn, MHD_HTTP_OK, "zctrace export: the machine's copy census at /metrics\n");
	return reply_text(x, conn, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
}

static int silent_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

/* The census, its programs' costs, the aggregate's site methods. 0 or 1. */
static int start_census(struct exporter *x)
{
	struct census_opts o = { .cap = x->a.cap, .max_keys = x->a.max_keys, .complete = x->a.complete,
				 .cost_hz = x->a.cost_hz, .per_call = x->a.per_call };
	const struct probe_choice *choice;
	const char *missing;
	int err;

	if ((missing = cli_missing_capability())) {
		fprintf(stderr, "zctrace: %s\n", missing);
		return 1;
	}
	if (!x->a.verbose)
		libbpf_set_print(silent_libbpf);
	/* on before load, and only when asked: it costs every BPF program of the machine */
	if (x->a.bpf_stats && prog_stats_enable(&x->costs))
		fprintf(stderr, "zctrace: no BPF cost metrics: %s\n", x->costs.why);
	if ((err = census_open(&x->census, &o))) {
		fprintf(stderr, "zctrace: cannot start the census: %s\n", strerror(-err));
		return 1;
	}
	if (census_cost_refused(x->census, &o))
		fprintf(stderr, "zctrace: --cost: not measured: %s\n", census_cost_refused(x->census, &o));
	choice = census_choice(x->census);
	for (int s = 0; s < NR_SITES; s++) {
		x->expo.site_method[s] = site_method_of(choice, s, NULL);
		x->expo.site_why[s] = probe_refusal(choice, s);
	}
	x->expo.account = census_has_account(x->census);
	x->expo.tcp_counters = census_has_tcp_counters(x->census);
	if (!x->expo.tcp_counters)
		fprintf(stderr, "zctrace: TCP bytes from the sockets' own counters: not measured: %s\n",
			probe_refusal(choice, PROBE_TCP_COUNTERS));
	x->expo.tcp_derived = census_derived(x->census);
	x->expo.account_why = x->expo.account ? NULL : probe_refusal(choice, PROBE_BOUNDARY);
	x->expo.costs = x->costs.stats_fd >= 0 ? &x->costs : NULL;
	prog_stats_begin(&x->costs);
	return 0;
}

/* One read of the census into the aggregate. 0 or 1. */
static int read_census(struct exporter *x)
{
	struct zctrace_bpf *obj = census_object(x->census);
	struct census_snap snap;
	int err = census_read(x->census, &snap);

	if (err) {
		fprintf(stderr, "zctrace: cannot read the census: %s\n", strerror(-err));
		return 1;
	}
	pthread_mutex_lock(&x->lock);
	expo_add(&x->expo, &snap);
	if (x->expo.costs && obj)
		prog_stats_end(&x->costs, obj->obj);
	pthread_mutex_unlock(&x->lock);
	return 0;
}

/* The HTTP server on the listening socket, with --web-config's TLS. @quiet: not said again (a reload). */
static int start_httpd(struct exporter *x, bool quiet)
{
	char host[INET6_ADDRSTRLEN];
	const void *a = x->addr.ss_family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&x->addr)->sin6_addr :
							(void *)&((struct sockaddr_in *)&x->addr)->sin_addr;
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, x->web.cert_pem },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, x->web.key_pem },
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, x->web.priorities },
		/* a client certificate asked for (admitted() checks what client_auth_type wants) */
		{ x->web.ca_pem ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, x->web.ca_pem },
		{ MHD_OPTION_END, 0, NULL },
	};

	/* a copy of the listening socket: the server closes what it is given, even where it fails */
	int fd = fcntl(x->listen_fd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0) {
		fprintf(stderr, "zctrace: cannot start the HTTP server on %s: %s\n", x->a.listen, strerror(errno));
		return 1;
	}
	x->httpd = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | (x->web.tls ? MHD_USE_TLS : 0) |
				    (x->addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				    0, NULL, NULL, serve, x,
				    MHD_OPTION_LISTEN_SOCKET, fd,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)EXPORT_MAX_CONNECTIONS,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)EXPORT_CONNECTION_TIMEOUT_S,
				    MHD_OPTION_ARRAY, x->web.tls ? tls : &tls[sizeof(tls) / sizeof(tls[0]) - 1],
				    MHD_OPTION_END);
	if (!x->httpd) {
		if (fcntl(fd, F_GETFD) >= 0)
			close(fd);
		fprintf(stderr, "zctrace: cannot start the HTTP%s server on %s\n", x->web.tls ? "S" : "", x->a.listen);
		return 1;
	}
	if (quiet)
		return 0;
	inet_ntop(x->addr.ss_family, a, host, sizeof(host));
	fprintf(stderr, "zctrace: serving http%s://%s%s%s:%d/metrics%s\n", x->web.tls ? "s" : "",
		x->addr.ss_family == AF_INET6 ? "[" : "",
		host, x->addr.ss_family == AF_INET6 ? "]" : "",
		ntohs(x->addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&x->addr)->sin6_port :
						      ((struct sockaddr_in *)&x->addr)->sin_port),
		x->web.nusers ? " (basic auth)" : "");
	return 0;
}

/*
 * --web-config again, when it or a file it names changed: the server is stopped (its listening
 * socket kept, so no connection is refused meanwhile) and started with the new one. A file that
 * does not load leaves the last good one serving; it is said once, and tried again when one of
 * the files it read changes. 0, or 1 when the server cannot be started again.
 */
static int reload_web_config(struct exporter *x)
{
	struct web_config next, last;
	char why[512];
	int fd;

	if (!x->a.web_config || !web_config_changed(&x->web))
		return 0;
	/* taken once its files have not changed for a second: never a file caught half written */
	if (!x->settle.files[0] || web_config_changed(&x->settle)) {
		web_config_restamp(&x->settle, &x->web);
		x->settle_since = now_s();
		return 0;
	}
	if (now_s() - x->settle_since < 1)
		return 0;
	if (x->refused.files[0] && !web_config_changed(&x->refused))
		return 0;
	web_config_free(&x->refused);
	if (web_config_load(&next, x->a.web_config, why, sizeof(why))) {
		fprintf(stderr, "zctrace: --web-config %s not reloaded, the last one kept: %s\n", x->a.web_config, why);
		x->refused = next;
		return 0;
	}
	web_config_free(&x->settle);
	fd = MHD_quiesce_daemon(x->httpd);
	if (fd >= 0)
		close(fd);	/* the server's copy: the listening socket stays open in x->listen_fd */
	MHD_stop_daemon(x->httpd);
	x->httpd = NULL;
	last = x->web;
	x->web = next;
	if (start_httpd(x, true)) {
		web_config_free(&x->web);
		x->web = last;
		fprintf(stderr, "zctrace: --web-config %s not reloaded, the last one kept: its server did not start\n",
			x->a.web_config);
		return start_httpd(x, true);
	}
	web_config_free(&last);
	fprintf(stderr, "zctrace: --web-config %s reloaded\n", x->a.web_config);
	return 0;
}

/* Reads every interval until a stop signal. The signals are blocked in every thread and taken
 * here, so the HTTP thread is never interrupted. 0, or 1 when a read failed. */
static int read_until_stopped(struct exporter *x, const sigset_t *stop)
{
	struct timespec ts = { (time_t)x->a.interval, (long)((x->a.interval - (time_t)x->a.interval) * 1e9) };
	int sig;

	for (;;) {
		sig = sigtimedwait(stop, NULL, &ts);
		if (sig > 0) {
			fprintf(stderr, "zctrace: stopped by signal %d (SIG%s)\n", sig, sigabbrev_np(sig) ?: "?");
			return 0;
		}
		if (errno != EAGAIN && errno != EINTR) {
			fprintf(stderr, "zctrace: waiting for the next read: %s\n", strerror(errno));
			return 1;
		}
		if (errno == EAGAIN && (read_census(x) || reload_web_config(x)))
			return 1;
	}
}

static void stop_exporter(struct exporter *x)
{
	if (x->httpd)
		MHD_stop_daemon(x->httpd);
	if (x->listen_fd >= 0)
		close(x->listen_fd);
	census_close(x->census);
	web_config_free(&x->web);
	web_config_free(&x->refused);
	web_config_free(&x->settle);
	prog_stats_close(&x->costs);
	expo_free(&x->expo);
	pthread_mutex_destroy(&x->lock);
}

int cmd_export(int argc, char **argv)
{
	static const struct argp argp = { export_options, export_parse, NULL, export_doc };
	struct exporter x = {
		.a = { .listen = EXPORT_DEFAULT_LISTEN, .max_series = EXPO_DEFAULT_SERIES, .interval = 1,
		       .cap = METHOD_NONE },
		.listen_fd = -1,
	};
	sigset_t stop;
	int ret;

	argp_err_exit_status = EXIT_USAGE;
	argv[0] = "zctrace export";
	if (argp_parse(&argp, argc, argv, 0, NULL, &x))
		return EXIT_USAGE;
	/*
	 * A daemon's memory stays flat: large buffers (the census's reads, the exposition) are mapped
	 * and given back on free. glibc otherwise raises its mmap threshold to the largest buffer
	 * freed, and such buffers then come from the heap, whose top may stay a step higher.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	prog_stats_init(&x.costs);
	pthread_mutex_init(&x.lock, NULL);
	if (expo_init(&x.expo, x.a.max_series)) {
		fprintf(stderr, "zctrace: out of memory\n");
		return 1;
	}
	/* blocked before any thread starts, so that every thread inherits it */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (x.a.web_config) {
		char why[512];

		if (web_config_load(&x.web, x.a.web_config, why, sizeof(why))) {
			fprintf(stderr, "zctrace: --web-config %s: %s\n", x.a.web_config, why);
			stop_exporter(&x);
			return EXIT_USAGE;
		}
	}
	ret = open_listener(&x) || start_census(&x) || read_census(&x) || start_httpd(&x, false);
	if (!ret)
		ret = read_until_stopped(&x, &stop);
	stop_exporter(&x);
	return ret;
}

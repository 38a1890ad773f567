/*
 * zctrace export: the census read at a fixed interval and folded into the exposition's
 * aggregate; libmicrohttpd serves it at /metrics from its own thread. The reads do not wait for
 * scrapes: the kernel's map is bounded, so keys left unread through a long scrape interval would
 * be evicted (counts lost) and exited processes' rows would wait; a fixed interval bounds both,
 * and every scraper sees the same figures.
 */
#include <argp.h>
#include <errno.h>
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
#include <microhttpd.h>
#include "trace/census.h"
#include "os/cli.h"
#include "cmd/export.h"
#include "report/exposition.h"
#include "trace/progstats.h"
#include "opts.h"
#include "zctrace.skel.h"

enum { EXPORT_OPT_COMPLETE = 0x100, EXPORT_OPT_BPF_STATS };

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

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *type, char *body,
			     size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int status, const char *text)
{
	return reply(conn, status, "text/plain; charset=utf-8", (char *)text, strlen(text), MHD_RESPMEM_PERSISTENT);
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
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	pthread_mutex_lock(&x->lock);
	err = expo_write(f, &x->expo, fmt);
	pthread_mutex_unlock(&x->lock);
	if (fclose(f) || err) {
		free(text);
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(conn, MHD_HTTP_OK, expo_content_type(fmt), text, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			     const char *version, const char *upload, size_t *upload_len, void **req)
{
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics\n");
	if (!strcmp(url, "/metrics"))
		return serve_metrics(cls, conn);
	if (!strcmp(url, "/"))
		return reply_text(conn, MHD_HTTP_OK, "zctrace export: the machine's copy census at /metrics\n");
	return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
}

static int silent_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

/* The census, its programs' costs, the aggregate's site methods. 0 or 1. */
static int start_census(struct exporter *x)
{
	struct census_opts o = { .cap = x->a.cap, .max_keys = x->a.max_keys, .complete = x->a.complete };
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
	choice = census_choice(x->census);
	for (int s = 0; s < NR_SITES; s++) {
		x->expo.site_method[s] = site_method_of(choice, s, NULL);
		x->expo.site_why[s] = probe_refusal(choice, s);
	}
	x->expo.account = census_has_account(x->census);
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

static int start_httpd(struct exporter *x)
{
	char host[INET6_ADDRSTRLEN];
	const void *a = x->addr.ss_family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&x->addr)->sin6_addr :
							(void *)&((struct sockaddr_in *)&x->addr)->sin_addr;

	x->httpd = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | (x->addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				    0, NULL, NULL, serve, x,
				    MHD_OPTION_LISTEN_SOCKET, x->listen_fd,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)EXPORT_MAX_CONNECTIONS,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)EXPORT_CONNECTION_TIMEOUT_S,
				    MHD_OPTION_END);
	if (!x->httpd) {
		fprintf(stderr, "zctrace: cannot start the HTTP server on %s\n", x->a.listen);
		return 1;
	}
	x->listen_fd = -1;	/* the server's now: it closes it */
	inet_ntop(x->addr.ss_family, a, host, sizeof(host));
	fprintf(stderr, "zctrace: serving http://%s%s%s:%d/metrics\n", x->addr.ss_family == AF_INET6 ? "[" : "",
		host, x->addr.ss_family == AF_INET6 ? "]" : "",
		ntohs(x->addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&x->addr)->sin6_port :
						      ((struct sockaddr_in *)&x->addr)->sin_port));
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
		if (errno == EAGAIN && read_census(x))
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
	ret = open_listener(&x) || start_census(&x) || read_census(&x) || start_httpd(&x);
	if (!ret)
		ret = read_until_stopped(&x, &stop);
	stop_exporter(&x);
	return ret;
}

/*
 * The workloads' options, parsed and documented: what every workload takes on its command line,
 * and what zctrace checks of a workload's options before it starts one (opts.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "contract/opts.h"

/*
 * DIGITS, then K, M or G (optionally KiB or KB), or B; at most 2^63 - 1. Digits first: strtoull
 * alone would take leading spaces and a sign (" -1" is 2^64 - 1 to it).
 */
int wl_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	}
	if (mult > 1 && end[0] == 'i' && end[1] == 'B')	/* KiB */
		end += 2;
	else if (*end == 'B')				/* KB, or bytes */
		end++;
	if (*end != '\0' || v > (uint64_t)INT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

const char *wl_peer_name(enum wl_peer p)
{
	return p == WL_PEER_NETNS ? "netns" : p == WL_PEER_PROCESS ? "process" : "thread";
}

int wl_parse_peer(const char *s, enum wl_peer *p)
{
	for (enum wl_peer i = WL_PEER_THREAD; i <= WL_PEER_NETNS; i++) {
		if (!strcmp(s, wl_peer_name(i))) {
			*p = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* NUMBER followed by one of @units (name, multiplier); the result must be > 0 and < 2^63. */
static int parse_unit(const char *s, const char *const names[], const uint64_t mults[], uint64_t *out)
{
	char *end;
	double v;

	/* a digit or a point first: no sign, space, hex, inf or nan (NaN passes every comparison) */
	if (!s || !strchr("0123456789.", *s) || !*s || strpbrk(s, "xX"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	for (int i = 0; names[i]; i++) {
		if (!strcmp(end, names[i])) {
			double r = v * mults[i];

			if (r < 1 || r > 9.2e18)
				return -EINVAL;
			*out = (uint64_t)r;
			return 0;
		}
	}
	return -EINVAL;
}

int wl_parse_rate(const char *s, uint64_t *bits_per_s)
{
	static const char *const names[] = { "bit", "kbit", "mbit", "gbit", "tbit", NULL };
	static const uint64_t mults[] = { 1, 1000, 1000000, 1000000000, 1000000000000ULL };

	return parse_unit(s, names, mults, bits_per_s);
}

int wl_parse_delay(const char *s, uint64_t *ns)
{
	static const char *const names[] = { "us", "ms", "s", NULL };
	static const uint64_t mults[] = { 1000, 1000000, 1000000000 };

	/* at most a minute: a longer delay stalls every bounded loop */
	return parse_unit(s, names, mults, ns) || *ns > 60000000000ULL ? -EINVAL : 0;
}

int wl_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	/* decimal only: strtod also takes spaces, signs, hex, "inf" and "nan" */
	if (!s || !*s || s[strspn(s, "0123456789.eE+-")] || !strchr("0123456789.", *s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0 && v <= max))
		return -EINVAL;
	*out = v;
	return 0;
}

/* The options of the groups, each meaning once; a group's lines stay together, in this order. */
const struct wl_opt_doc wl_opt_docs[] = {
	{ WL_OPT_UDP, 0, "--size BYTES",
	  "datagram size, or bytes per send with --gso (default 1400, at most 65507)" },
	{ WL_OPT_AMOUNT, WL_OPT_UDP, "--size BYTES", "message size, suffixes K, M, G (default 64K)" },
	{ WL_OPT_CONN, WL_OPT_UDP | WL_OPT_AMOUNT, "--chunk BYTES",
	  "bytes per read()/send() or sendfile() call (default 64K); --size is the same option" },
	{ 0, WL_OPT_UDP | WL_OPT_AMOUNT | WL_OPT_CONN, "--size BYTES",
	  "bytes per call or block (file-readwrite and remote-fileread: default 64K; the others: "
	  "0, as much as one call moves)" },
	{ WL_OPT_CONN, 0, "--threads N", "connections, each with a sender and a receiver thread (default 1)" },
	{ WL_OPT_CONN, 0, "--port P", "loopback port of the server (default: chosen by the kernel)" },
	{ WL_OPT_PIPES, 0, "--threads N",
	  "pipes or socket pairs, each with a writer and a reader thread (default 1)" },
	{ WL_OPT_PIPES, WL_OPT_PEER, "--peer MODE",
	  "where the readers run: thread (default: threads of this process) or process (a child process)" },
	{ WL_OPT_AMOUNT, 0, "--messages N",
	  "messages per connection or pipe (default 5000 when nothing else bounds the run)" },
	{ WL_OPT_AMOUNT, 0, "--bytes N", "payload per connection or pipe, suffixes K, M, G" },
	{ WL_OPT_AMOUNT, 0, "--duration SECS", "run time" },
	{ WL_OPT_PEER, 0, "--peer MODE",
	  "where the receiver runs: thread (default: threads of this process, loopback), process (a "
	  "child process, loopback), netns (a child process in its own network namespace, joined by "
	  "veth; under zctrace)" },
	{ WL_OPT_PEER, 0, "--netns", "the same as --peer netns" },
	{ WL_OPT_PEER, 0, "--rate RATE", "with --netns: shape the veth link (tc tbf), e.g. 1gbit, 100mbit" },
	{ WL_OPT_PEER, 0, "--delay TIME", "with --netns: add one-way delay (tc netem), e.g. 1ms" },
	{ WL_OPT_REMOTE, 0, "--listen ADDR:PORT",
	  "be the receiving end only: wait at ADDR:PORT for the sending end (--connect), run elsewhere" },
	{ WL_OPT_REMOTE, 0, "--connect ADDR:PORT",
	  "be the sending end only: send to the receiving end (--listen) at ADDR:PORT, on another host or namespace" },
	{ WL_OPT_UDP, 0, "--gso SEGMENT",
	  "UDP segmentation offload (UDP_SEGMENT): each send of --size bytes leaves as datagrams of "
	  "SEGMENT bytes (at most 64 a send)" },
	{ WL_OPT_UDP, 0, "--ipv6", "over ::1 instead of 127.0.0.1 (loopback only)" },
	{ WL_OPT_NOTICES, 0, "--notice-batch N",
	  "read the completion notices after every N sends (default 1); the kernel coalesces the "
	  "notices that wait" },
	{ WL_OPT_PATTERN, 0, "--pattern P", "seq (default) or random: the order the blocks are read in" },
	{ WL_OPT_URING, 0, "--async", "issue every request from io-wq worker threads (IOSQE_ASYNC)" },
	{ WL_OPT_URING, 0, "--sqpoll", "submit through the ring's SQPOLL kernel thread" },
	{ WL_OPT_URING, 0, "--no-usage-report",
	  "(zerocopy) do not ask the kernel whether the data was copied (IORING_SEND_ZC_REPORT_USAGE), "
	  "as most applications do not" },
	{ WL_OPT_FILE_IO, 0, "--direct",
	  "open the files O_DIRECT, past the page cache (--size and --file-size whole 4K blocks)" },
	{ WL_OPT_FILE_IO, 0, "--fixed", "io_uring: read and write through a registered buffer (READ_FIXED, WRITE_FIXED)" },
	{ WL_OPT_FILE_IO, 0, "--vectored", "io_uring: read and write two vectors a request (READV, WRITEV)" },
	{ WL_OPT_FILE, 0, "--file-size N", "size of the file (default 1G)" },
	{ WL_OPT_FILE, 0, "--cache MODE", "cold: drop the file's pages before the measured phase; warm (default)" },
	{ WL_OPT_FILE, 0, "--dir DIR",
	  "where to make the files (default $TMPDIR or /var/tmp); they are unlinked at once, so nothing "
	  "is left behind" },
};
const int wl_nr_opt_docs = sizeof(wl_opt_docs) / sizeof(wl_opt_docs[0]);

static void usage(FILE *f, const char *name, unsigned accept)
{
	fprintf(f, "usage: %s [OPTIONS]\n", name);
	for (int i = 0; i < wl_nr_opt_docs; i++)
		if (wl_opt_doc_shown(&wl_opt_docs[i], accept))
			fprintf(f, "  %-16s %s\n", wl_opt_docs[i].opt, wl_opt_docs[i].help);
}

static const struct option wl_longopts[] = {
	{ "file-size", required_argument, NULL, 'F' },
	{ "cache", required_argument, NULL, 'C' },
	{ "dir", required_argument, NULL, 'D' },
	{ "size", required_argument, NULL, 's' },
	{ "chunk", required_argument, NULL, 's' },	/* the serve-* name for --size */
	{ "threads", required_argument, NULL, 't' },
	{ "duration", required_argument, NULL, 'd' },
	{ "bytes", required_argument, NULL, 'b' },
	{ "messages", required_argument, NULL, 'n' },
	{ "port", required_argument, NULL, 'p' },
	{ "peer", required_argument, NULL, 'P' },
	{ "netns", no_argument, NULL, 'N' },
	{ "rate", required_argument, NULL, 'R' },
	{ "delay", required_argument, NULL, 'L' },
	{ "listen", required_argument, NULL, 'l' },
	{ "connect", required_argument, NULL, 'c' },
	{ "pattern", required_argument, NULL, 'A' },
	{ "async", no_argument, NULL, 'Y' },
	{ "sqpoll", no_argument, NULL, 'Q' },
	{ "no-usage-report", no_argument, NULL, 'U' },
	{ "gso", required_argument, NULL, 'G' },
	{ "ipv6", no_argument, NULL, '6' },
	{ "direct", no_argument, NULL, 'O' },
	{ "fixed", no_argument, NULL, 'X' },
	{ "vectored", no_argument, NULL, 'V' },
	{ "notice-batch", required_argument, NULL, 'B' },
	{ "help", no_argument, NULL, 'h' },
	{},
};

/* The option groups (WL_OPT_*) that take option @c; 0 for those every workload takes. */
static unsigned option_group(int c)
{
	if (c == 'h' || c == 's')
		return 0;
	if (c == 't')
		return WL_OPT_CONN | WL_OPT_PIPES;
	if (c == 'P')
		return WL_OPT_PEER | WL_OPT_PIPES;
	if (c == 'l' || c == 'c')
		return WL_OPT_REMOTE;
	if (c == 'B')
		return WL_OPT_NOTICES;
	return strchr("FCD", c) ? WL_OPT_FILE : c == 'p' ? WL_OPT_CONN : strchr("NRL", c) ? WL_OPT_PEER
	       : c == 'A' ? WL_OPT_PATTERN : strchr("YQU", c) ? WL_OPT_URING : strchr("G6", c) ? WL_OPT_UDP
	       : strchr("OXV", c) ? WL_OPT_FILE_IO : WL_OPT_AMOUNT;
}

/* --size: bytes per message or per call */
static int parse_size_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	switch (c) {
	case 's':
		/* 0 (as much as one call moves) only for the file copies: not a message, block or chunk */
		if (wl_parse_size(optarg, &o->size) || o->size > (1ULL << 30) ||
		    (o->size == 0 && (accept & (WL_OPT_CONN | WL_OPT_PEER | WL_OPT_PIPES)))) {
			fprintf(stderr, "%s: invalid --size '%s' (1 to 1G, e.g. 4K)\n", name, optarg);
			return -1;
		}
		o->size_set = true;
		return 0;
	}
	return 1;	/* not one of these */
}

/* --file-size, --cache, --dir */
static int parse_file_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	switch (c) {
	case 'F':
		if (wl_parse_size(optarg, &o->file_size) || o->file_size == 0 ||
		    o->file_size > (1ULL << 40)) {
			fprintf(stderr, "%s: invalid --file-size '%s' (1 to 1T, e.g. 64M)\n", name, optarg);
			return -1;
		}
		return 0;
	case 'C':
		if (!strcmp(optarg, "cold")) {
			o->cache = WL_CACHE_COLD;
		} else if (!strcmp(optarg, "warm")) {
			o->cache = WL_CACHE_WARM;
		} else {
			fprintf(stderr, "%s: invalid --cache '%s' (cold or warm)\n", name, optarg);
			return -1;
		}
		return 0;
	case 'D':
		if (!*optarg) {
			fprintf(stderr, "%s: invalid --dir '' (a directory)\n", name);
			return -1;
		}
		o->dir = optarg;
		return 0;
	}
	return 1;	/* not one of these */
}

/* --threads, --port */
static int parse_conn_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	uint64_t v;

	switch (c) {
	case 't':
		if (wl_parse_size(optarg, &v) || v == 0 || v > 256) {
			fprintf(stderr, "%s: invalid --threads '%s' (1 to 256)\n", name, optarg);
			return -1;
		}
		o->threads = v;
		return 0;
	case 'p':
		if (wl_parse_size(optarg, &v) || v == 0 || v > 65535) {
			fprintf(stderr, "%s: invalid --port '%s' (1 to 65535)\n", name, optarg);
			return -1;
		}
		o->port = v;
		return 0;
	}
	return 1;	/* not one of these */
}

/* --duration, --bytes, --messages: how much each connection sends */
static int parse_amount_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	switch (c) {
	case 'd':
		if (wl_parse_seconds(optarg, 86400, &o->duration)) {
			fprintf(stderr, "%s: invalid --duration '%s' (seconds, > 0)\n", name, optarg);
			return -1;
		}
		return 0;
	case 'b':
		if (wl_parse_size(optarg, &o->bytes) || o->bytes == 0) {
			fprintf(stderr, "%s: invalid --bytes '%s' (e.g. 64M)\n", name, optarg);
			return -1;
		}
		return 0;
	case 'n':
		if (wl_parse_size(optarg, &o->messages) || o->messages == 0) {
			fprintf(stderr, "%s: invalid --messages '%s'\n", name, optarg);
			return -1;
		}
		return 0;
	}
	return 1;	/* not one of these */
}

/* --peer, --netns, --rate, --delay: where the receiving side runs, and its link */
static int parse_peer_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	uint64_t v;

	switch (c) {
	case 'P':
		if (wl_parse_peer(optarg, &o->peer) || (o->peer == WL_PEER_NETNS && !(accept & WL_OPT_PEER))) {
			fprintf(stderr, "%s: invalid --peer '%s' (%s)\n", name, optarg,
				accept & WL_OPT_PEER ? "thread, process or netns" : "thread or process");
			return -1;
		}
		return 0;
	case 'N':
		o->peer = WL_PEER_NETNS;
		return 0;
	case 'R':
		if (wl_parse_rate(optarg, &v)) {
			fprintf(stderr, "%s: invalid --rate '%s' (e.g. 1gbit, 100mbit)\n", name, optarg);
			return -1;
		}
		o->rate = optarg;
		return 0;
	case 'L':
		if (wl_parse_delay(optarg, &v)) {
			fprintf(stderr, "%s: invalid --delay '%s' (e.g. 1ms, 250us; at most 60s)\n", name,
				optarg);
			return -1;
		}
		o->delay = optarg;
		return 0;
	}
	return 1;	/* not one of these */
}

/* ADDR:PORT of --listen and --connect: an IPv4 address and a port */
static int parse_endpoint(const char *s, struct sockaddr_in *addr)
{
	const char *colon = strrchr(s, ':');
	char host[INET_ADDRSTRLEN];
	uint64_t port;

	*addr = (struct sockaddr_in){ .sin_family = AF_INET };
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	if (inet_pton(AF_INET, host, &addr->sin_addr) != 1 || wl_parse_size(colon + 1, &port) ||
	    port == 0 || port > 65535 || strpbrk(colon + 1, "KMGBkmgb"))
		return -EINVAL;
	addr->sin_port = htons(port);
	return 0;
}

/* --listen, --connect: this process is one end, the other runs elsewhere */
static int parse_remote_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	const char *opt = c == 'l' ? "listen" : "connect";

	if (c != 'l' && c != 'c')
		return 1;	/* not one of these */
	if (o->remote != WL_REMOTE_NONE) {
		fprintf(stderr, "%s: --listen and --connect are the two ends: give one of them, once\n", name);
		return -1;
	}
	if (parse_endpoint(optarg, &o->remote_addr)) {
		fprintf(stderr, "%s: invalid --%s '%s' (IPv4ADDR:PORT, e.g. 198.18.1.2:5201)\n", name, opt, optarg);
		return -1;
	}
	o->remote = c == 'l' ? WL_REMOTE_LISTEN : WL_REMOTE_CONNECT;
	return 0;
}

/* --pattern */
static int parse_pattern_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	switch (c) {
	case 'A':
		if (!strcmp(optarg, "seq")) {
			o->pattern = WL_PATTERN_SEQ;
		} else if (!strcmp(optarg, "random")) {
			o->pattern = WL_PATTERN_RANDOM;
		} else {
			fprintf(stderr, "%s: invalid --pattern '%s' (seq or random)\n", name, optarg);
			return -1;
		}
		return 0;
	}
	return 1;	/* not one of these */
}

/* --notice-batch: how often a MSG_ZEROCOPY sender reads its completion notices */
static int parse_notice_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	char *end;
	long v;

	if (c != 'B')
		return 1;	/* not one of these */
	errno = 0;
	v = strtol(optarg, &end, 10);
	if (errno || end == optarg || *end || v < 1 || v > 1000000) {
		fprintf(stderr, "%s: invalid --notice-batch '%s' (1 to 1000000 sends)\n", name, optarg);
		return -1;
	}
	o->notice_batch = v;
	return 0;
}

/* --async, --sqpoll, --no-usage-report: how an io_uring workload's requests reach the kernel */
static int parse_uring_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	switch (c) {
	case 'Y':
		o->uring_async = true;
		return 0;
	case 'Q':
		o->uring_sqpoll = true;
		return 0;
	case 'U':
		o->uring_no_usage = true;
		return 0;
	}
	return 1;	/* not one of these */
}

/* --direct, --fixed, --vectored: how a file workload's requests reach the file */
static int parse_file_io_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	switch (c) {
	case 'O':
		o->direct = true;
		return 0;
	case 'X':
		o->fixed = true;
		return 0;
	case 'V':
		o->vectored = true;
		return 0;
	}
	return 1;	/* not one of these */
}

/* --gso, --ipv6: how a UDP workload's datagrams are made */
static int parse_udp_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	switch (c) {
	case 'G':
		if (wl_parse_size(optarg, &o->gso) || o->gso == 0 || o->gso > WL_UDP_MAX_SIZE) {
			fprintf(stderr, "%s: invalid --gso '%s' (bytes per datagram, 1 to %d)\n", name, optarg,
				WL_UDP_MAX_SIZE);
			return -1;
		}
		return 0;
	case '6':
		o->ipv6 = true;
		return 0;
	}
	return 1;	/* not one of these */
}

/*
 * The UDP options together: a datagram (or a send, segmented) fits one IP packet's 64K, and a
 * segment fits the link's MTU, as udp_send_skb() demands; refused here by name, not as EINVAL
 * from the first send. 0 or -1 having said why.
 */
int wl_udp_max_payload(const struct wl_opts *o)
{
	int mtu = o->peer == WL_PEER_NETNS ? WL_NETNS_MTU : WL_LOOPBACK_MTU;

	return mtu - (o->ipv6 ? 40 : 20) - 8;
}

static int check_udp_opts(const char *name, struct wl_opts *o)
{
	int max_seg = wl_udp_max_payload(o);

	if (!o->size_set)
		o->size = WL_UDP_DEFAULT_SIZE;
	if (o->size > WL_UDP_MAX_SIZE) {
		fprintf(stderr, "%s: --size %llu is larger than a UDP datagram can be (at most %d)\n", name,
			(unsigned long long)o->size, WL_UDP_MAX_SIZE);
		return -1;
	}
	if (o->ipv6 && o->peer == WL_PEER_NETNS) {
		fprintf(stderr, "%s: --ipv6 is for loopback (::1): the veth link between the namespaces has "
			"IPv4 addresses alone\n", name);
		return -1;
	}
	if (!o->gso)
		return 0;
	if (o->gso > o->size) {
		fprintf(stderr, "%s: --gso %llu is larger than --size %llu (a segment is part of one send)\n",
			name, (unsigned long long)o->gso, (unsigned long long)o->size);
		return -1;
	}
	if ((o->size + o->gso - 1) / o->gso > WL_UDP_MAX_SEGMENTS) {
		fprintf(stderr, "%s: --gso %llu cuts --size %llu into more than %d datagrams a send\n", name,
			(unsigned long long)o->gso, (unsigned long long)o->size, WL_UDP_MAX_SEGMENTS);
		return -1;
	}
	if ((int)o->gso > max_seg) {
		fprintf(stderr, "%s: --gso %llu does not fit the %s's MTU (at most %d bytes a segment)\n", name,
			(unsigned long long)o->gso, o->peer == WL_PEER_NETNS ? "veth link" : "loopback", max_seg);
		return -1;
	}
	return 0;
}

/* Option @c with its argument in optarg: 0, or -1 having said why in one line. The parsers of
 * the groups return 1 for an option not theirs. */
static int parse_opt(int c, const char *name, unsigned accept, struct wl_opts *o)
{
	static int (*const parsers[])(int, const char *, unsigned, struct wl_opts *) = {
		parse_size_opt, parse_file_opt, parse_conn_opt, parse_amount_opt, parse_peer_opt,
		parse_pattern_opt, parse_uring_opt, parse_udp_opt, parse_file_io_opt, parse_remote_opt,
		parse_notice_opt,
	};
	const struct option *lo = NULL;

	for (const struct option *l = wl_longopts; l->name; l++)
		if (l->val == c)
			lo = l;
	if (c == 'h') {
		usage(stdout, name, accept);
		exit(0);
	}
	if (!lo) {
		fprintf(stderr, "%s: unknown option (try --help)\n", name);
		return -1;
	}
	if (option_group(c) && !(accept & option_group(c))) {
		fprintf(stderr, "%s: --%s is not an option of this workload (try --help)\n", name, lo->name);
		return -1;
	}
	for (size_t i = 0; i < sizeof(parsers) / sizeof(parsers[0]); i++) {
		int err = parsers[i](c, name, accept, o);

		if (err <= 0)
			return err;
	}
	return -1;
}

int wl_parse_opts(int argc, char **argv, const char *name, unsigned accept, struct wl_opts *o)
{
	const char *tmp = getenv("TMPDIR");
	int c;

	*o = (struct wl_opts){ .size = 64 << 10, .threads = 1, .file_size = 1ULL << 30, .notice_batch = 1,
			       .dir = tmp && *tmp ? tmp : "/var/tmp" };
	while ((c = getopt_long(argc, argv, "s:t:d:b:n:p:h", wl_longopts, NULL)) != -1)
		if (parse_opt(c, name, accept, o))
			return -1;
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", name, argv[optind]);
		return -1;
	}
	if (o->remote && (o->peer != WL_PEER_THREAD || o->port)) {
		fprintf(stderr, "%s: --%s runs one end here and the other elsewhere: no --%s with it\n", name,
			o->remote == WL_REMOTE_LISTEN ? "listen" : "connect",
			o->port ? "port (the port is in ADDR:PORT)" : "peer or --netns");
		return -1;
	}
	if (o->remote && o->ipv6) {
		fprintf(stderr, "%s: --%s is IPv4: no --ipv6 with it\n", name,
			o->remote == WL_REMOTE_LISTEN ? "listen" : "connect");
		return -1;
	}
	if ((o->rate || o->delay) && o->peer != WL_PEER_NETNS) {
		fprintf(stderr, "%s: --%s shapes the veth link between the namespaces: it needs --netns\n",
			name, o->rate ? "rate" : "delay");
		return -1;
	}
	if ((accept & WL_OPT_UDP) && check_udp_opts(name, o))
		return -1;
	if ((accept & WL_OPT_AMOUNT) && !o->duration && !o->bytes && !o->messages)
		o->messages = 5000;
	return 0;
}

int wl_check_netns(const char *name, const struct wl_opts *o)
{
	if (o->peer == WL_PEER_NETNS && !getenv(WL_NETNS_FD_ENV)) {
		fprintf(stderr, "%s: --netns: the namespaces are made by 'zctrace run' (run it there)\n", name);
		return -1;
	}
	return 0;
}

/*
 * The workloads' options: the groups a workload takes, their documentation (a workload's --help,
 * 'zctrace list', the manual page), and their parsers. zctrace links this too, to check a
 * workload's options before it starts one and to read sizes and durations as the workloads do.
 */
#ifndef WL_OPTS_H
#define WL_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

enum wl_cache { WL_CACHE_WARM, WL_CACHE_COLD };

/* Option groups a workload accepts besides --size. */
#define WL_OPT_CONN	0x1	/* --threads, --port */
#define WL_OPT_AMOUNT	0x2	/* --messages, --bytes, --duration */
#define WL_OPT_FILE	0x4	/* --file-size, --cache, --dir */
#define WL_OPT_PEER	0x8	/* --peer, --netns, --rate, --delay */
#define WL_OPT_PATTERN	0x10	/* --pattern */
#define WL_OPT_PIPES	0x20	/* --threads (pipes), --peer thread|process: both ends on this host */
#define WL_OPT_URING	0x40	/* --async, --sqpoll, --no-usage-report */
#define WL_OPT_UDP	0x80	/* --gso, --ipv6; --size is a datagram's (default 1400) */
#define WL_OPT_FILE_IO	0x100	/* --direct, --fixed, --vectored: how a file workload's requests reach the file */
#define WL_OPT_REMOTE	0x200	/* --listen, --connect: one end, the other on another host */
#define WL_OPT_NOTICES	0x400	/* --notice-batch: how often MSG_ZEROCOPY's notices are read */
#define WL_OPT_TCP	(WL_OPT_CONN | WL_OPT_AMOUNT | WL_OPT_PEER | WL_OPT_REMOTE)
#define WL_OPT_UDP_PAIRS (WL_OPT_PIPES | WL_OPT_AMOUNT | WL_OPT_PEER | WL_OPT_UDP | WL_OPT_REMOTE)	/* the udp-* workloads */

/*
 * One line of an option list: what a workload's --help prints, and what 'zctrace list' and the
 * manual page say of the workloads' options. Shown to a workload that takes any group of @groups
 * (0: every workload) and none of @unless.
 */
struct wl_opt_doc {
	unsigned groups, unless;
	const char *opt;	/* "--size BYTES" */
	const char *help;	/* its meaning, one line */
};

extern const struct wl_opt_doc wl_opt_docs[];
extern const int wl_nr_opt_docs;

/* Whether a workload taking the groups @accept shows option line @d. */
static inline bool wl_opt_doc_shown(const struct wl_opt_doc *d, unsigned accept)
{
	return (!d->groups || (accept & d->groups)) && !(accept & d->unless);
}

/* Where the receiving side runs. */
enum wl_peer {
	WL_PEER_THREAD,		/* threads of this process, over loopback */
	WL_PEER_PROCESS,	/* a child process, over loopback */
	WL_PEER_NETNS,		/* a child process in its own network namespace, over veth */
};

/*
 * Two hosts on one machine: zctrace runs the workload in the sender's namespace and hands it the
 * receiver's as an open descriptor. Addresses from the benchmarking range (RFC 2544).
 */
#define WL_NETNS_SENDER_ADDR	"198.18.0.1"
#define WL_NETNS_RECEIVER_ADDR	"198.18.0.2"
#define WL_NETNS_PREFIX		30
#define WL_NETNS_FD_ENV		"ZCTRACE_NETNS_RX_FD"
#define WL_NETNS_MTU		1500	/* the veth pair's: the kernel's default, which zctrace keeps */
#define WL_LOOPBACK_MTU		65536

/* UDP: the largest payload of one IPv4 datagram (and of one send, segmented or not) */
#define WL_UDP_MAX_SIZE		65507
#define WL_UDP_DEFAULT_SIZE	1400	/* fits a 1500-byte MTU: no IP fragments on veth */
#define WL_UDP_MAX_SEGMENTS	64	/* UDP_MAX_SEGMENTS before 6.9 (128 since) */

enum wl_pattern { WL_PATTERN_SEQ, WL_PATTERN_RANDOM };

/* Which end of a network workload this process is, the other running elsewhere (remote.h). */
enum wl_remote {
	WL_REMOTE_NONE,		/* both ends here */
	WL_REMOTE_LISTEN,	/* --listen: the receiving end, waiting for the sender */
	WL_REMOTE_CONNECT,	/* --connect: the sending end */
};

struct wl_opts {
	uint64_t size;		/* message size, or bytes per call of the file workloads */
	bool size_set;		/* --size was given */
	int threads;		/* connections, one sender and one receiver thread each */
	double duration;	/* seconds; 0 = not time-bounded */
	uint64_t bytes;		/* payload per connection; 0 = not byte-bounded */
	uint64_t messages;	/* messages per connection; 0 = not count-bounded */
	int port;		/* 0 = let the kernel choose */
	uint64_t file_size;	/* bytes of the file the file workloads copy or serve */
	enum wl_cache cache;	/* page-cache state of that file when the measured phase starts */
	const char *dir;	/* where the files are made (they are unlinked at once) */
	enum wl_peer peer;
	const char *rate;	/* --rate, --delay: the veth link's shaping, done by zctrace */
	const char *delay;
	enum wl_pattern pattern;
	bool uring_async;	/* io_uring: every request issued by io-wq workers (IOSQE_ASYNC) */
	bool uring_sqpoll;	/* io_uring: requests submitted by the ring's SQPOLL thread */
	bool uring_no_usage;	/* io_uring SEND_ZC: not asking whether the data was copied */
	uint64_t gso;		/* UDP_SEGMENT: bytes per datagram a send is cut into; 0 = none */
	bool ipv6;		/* UDP over ::1 */
	bool direct;		/* the files opened O_DIRECT, past the page cache */
	bool fixed;		/* io_uring: registered buffers (READ_FIXED, WRITE_FIXED) */
	bool vectored;		/* io_uring: vectors (READV, WRITEV) */
	enum wl_remote remote;	/* --listen or --connect */
	int notice_batch;	/* MSG_ZEROCOPY: read the completion notices after every N sends (1) */
	struct sockaddr_in remote_addr;	/* ... their ADDR:PORT */
};

const char *wl_peer_name(enum wl_peer p);
int wl_parse_peer(const char *s, enum wl_peer *p);
/* tc rates ("1gbit", "100mbit", "500kbit") and delays ("1ms", "250us"): -EINVAL if not one. */
int wl_parse_rate(const char *s, uint64_t *bits_per_s);
int wl_parse_delay(const char *s, uint64_t *ns);

/* BYTES with an optional K, M or G (KiB, KB) or B; below 2^63. -EINVAL if not one. */
int wl_parse_size(const char *s, uint64_t *out);
/* A decimal number of seconds, > 0 and <= @max: -EINVAL otherwise. */
int wl_parse_seconds(const char *s, double max, double *out);
/* The largest UDP payload one packet carries on the run's link (loopback, or the veth pair). */
int wl_udp_max_payload(const struct wl_opts *o);
/* Parses the options of the groups in @accept (WL_OPT_*); the others are refused by name. */
int wl_parse_opts(int argc, char **argv, const char *name, unsigned accept, struct wl_opts *o);
/* --netns outside zctrace: the namespaces are not there. */
int wl_check_netns(const char *name, const struct wl_opts *o);

#endif

/*
 * membw: memory bandwidth three ways over buffers far larger than the caches: memcpy() of one
 * buffer into another, a sequential read that sums every word, and a sequential write of every
 * word. Each pass over the buffer is one sample, in MB/s. The buffers are pre-faulted (and filled)
 * before the measured phase, so the kernel must count no page fault and no system call in a timed
 * pass; each memcpy() is announced through USDT user_copy, so the ledger's user_copy bytes must
 * equal exactly the bytes this program copied.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "quiet.h"

struct bufs {
	uint64_t *src, *dst;
	uint64_t size;			/* bytes of each */
	uint64_t copies;		/* memcpy() calls made, each announced as a user copy */
};

/* One memcpy() of the whole buffer; the USDT note comes after the clock stops. */
static double pass_memcpy(struct bufs *b, uint64_t pass)
{
	uint64_t t0 = mb_now_ns(), t1;

	memcpy(b->dst, b->src, b->size);
	mb_barrier();
	t1 = mb_now_ns();
	WL_USER_COPY(b->size, 1);
	b->copies++;
	return (double)(t1 - t0);
}

/* Reads every word: four sums so the adds do not serialise the loads; the total is kept. */
static double pass_read(struct bufs *b, uint64_t pass)
{
	const uint64_t *p = b->src;
	uint64_t n = b->size / sizeof(*p), s0 = 0, s1 = 0, s2 = 0, s3 = 0, i, t0 = mb_now_ns();

	for (i = 0; i + 4 <= n; i += 4) {
		s0 += p[i];
		s1 += p[i + 1];
		s2 += p[i + 2];
		s3 += p[i + 3];
	}
	for (; i < n; i++)
		s0 += p[i];
	mb_use(s0 + s1 + s2 + s3);
	return (double)(mb_now_ns() - t0);
}

/* Writes every word with the pass number: a value the compiler cannot know, nothing skipped. */
static double pass_write(struct bufs *b, uint64_t pass)
{
	uint64_t *p = b->dst, n = b->size / sizeof(*p), t0 = mb_now_ns();

	for (uint64_t i = 0; i < n; i++)
		p[i] = pass;
	mb_barrier();
	return (double)(mb_now_ns() - t0);
}

struct kind {
	const char *key;
	const char *name;
	double (*pass)(struct bufs *b, uint64_t pass);
};

static const struct kind kinds[] = {
	{ "memcpy", "memcpy", pass_memcpy },
	{ "read", "sequential read (sum of words)", pass_read },
	{ "write", "sequential write (store every word)", pass_write },
};

/* A buffer of 4 KiB pages whatever the system's THP mode; pre-faulted by writing @fill to it. */
static void *map_buffer(uint64_t size, bool prefault, int fill)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, size, MADV_NOHUGEPAGE);
	if (prefault)	/* a pattern, not zeroes: every page really allocated, none special */
		memset(p, fill, size);
	return p;
}

static struct membw_cfg {
	uint64_t size, reps, warmup;
	const char *only;
	bool no_prefault;
	int cpu;
} cfg = {
	.size = 256ULL << 20, .reps = 50, .warmup = 2, .only = "all",
};

static const struct mb_opt opts[] = {
	{ "size", MB_SIZE, &cfg.size, 4096, 4ULL << 30 },
	{ "kind", MB_CHOICE, &cfg.only },
	{ "reps", MB_COUNT, &cfg.reps, 1, 100000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 100000 },
	{ "no-prefault", MB_FLAG, &cfg.no_prefault },
	{ "cpu", MB_CPU, &cfg.cpu },
	{},
};

/* One kind's passes in one step, the warm-up's dropped; its claims, result and note. */
static void time_kind(struct mb *m, struct bufs *b, const struct kind *c, struct mb_samples *s)
{
	char claim[160];
	long before, nivcsw;
	double med;
	json_object *r;
	int step;

	quiet_reserve(s, cfg.reps);
	before = quiet_nivcsw();
	step = mb_step_begin(m, c->name);
	for (uint64_t pass = 0; pass < cfg.warmup + cfg.reps; pass++) {
		double ns = c->pass(b, pass);

		if (pass >= cfg.warmup)
			s->v[s->n++] = (double)cfg.size * 1e3 / ns;	/* bytes/ns * 1e3 = MB/s */
	}
	mb_step_end(m);
	nivcsw = quiet_nivcsw() - before;

	snprintf(claim, sizeof(claim), "%s: no page fault in %" PRIu64 " passes over %" PRIu64
		 " bytes (the buffers were pre-faulted)", c->name, cfg.warmup + cfg.reps, cfg.size);
	mb_assume_exact(m, step, claim, "page_faults", 0);
	snprintf(claim, sizeof(claim), "%s: no system call", c->name);
	mb_assume_exact(m, step, claim, "syscalls", 0);
	r = mb_result(m, c->name, "MB/s", s, 1, cfg.warmup);
	med = mb_percentile(s, 50);
	json_object_object_add(r, "median_gib_s", json_object_new_double(med * 1e6 / (1 << 30)));
	mb_note(m, "%s: median %.0f MB/s = %.2f GiB/s; %ld involuntary switches in the step",
		c->key, med, med * 1e6 / (1 << 30), nivcsw);
}

/* The closing note and the report's extras: the bytes memcpy() copied, for the ledger. */
static json_object *report_extras(struct mb *m, const struct bufs *b)
{
	json_object *extra;

	mb_note(m, "each sample is one pass over a %" PRIu64 " MiB buffer (4 KiB pages); memcpy counts "
		"the bytes copied, each read once and written once", cfg.size >> 20);
	extra = json_object_new_object();
	/* every byte memcpy()'d in the measured phase, warm-up included: the ledger's user_copy */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(b->copies * cfg.size));
	json_object_object_add(extra, "memcpy_calls", json_object_new_uint64(b->copies));
	json_object_object_add(extra, WL_KEY_SIZE, json_object_new_uint64(cfg.size));
	json_object_object_add(extra, "prefault", json_object_new_boolean(!cfg.no_prefault));
	return extra;
}

int main(int argc, char **argv)
{
	struct bufs b = {};
	struct mb_samples s = {};
	json_object *extra;
	struct mb m;

	if (mb_parse(argc, argv, "membw", "Times memcpy, sequential read and sequential write over "
		     "large buffers; the kernel checks no timed pass faulted.", opts))
		return 2;
	if (cfg.size % 8) {
		fprintf(stderr, "membw: invalid --size %" PRIu64 " (a multiple of 8)\n", cfg.size);
		return 2;
	}
	if (mb_pin("membw", cfg.cpu))
		return 1;
	b.size = cfg.size;
	b.src = map_buffer(cfg.size, !cfg.no_prefault, 0x5a);
	b.dst = b.src ? map_buffer(cfg.size, !cfg.no_prefault, 0xa5) : NULL;
	if (!b.dst) {
		fprintf(stderr, "membw: cannot map 2 x %" PRIu64 " bytes: %s\n", cfg.size, strerror(errno));
		if (b.src)
			munmap(b.src, cfg.size);
		return 1;
	}
	mb_init(&m, "membw", cfg.cpu);
	mb_begin(&m);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if (strcmp(cfg.only, "all") && strcmp(cfg.only, kinds[k].key))
			continue;
		time_kind(&m, &b, &kinds[k], &s);
	}
	extra = report_extras(&m, &b);
	mb_samples_free(&s);
	munmap(b.src, cfg.size);
	munmap(b.dst, cfg.size);
	return mb_finish(&m, extra);
}

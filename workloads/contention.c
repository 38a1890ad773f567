/*
 * contention: N processes, forked together, each read their own cold file at once, for N = 1 up
 * to --max-procs; the time one process takes to read its file, against N. The classic suite
 * assumes every file was read from the disk and every process ran; here the kernel counts the
 * processes forked and reaped, and the pages the step brought into the page cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "filewl.h"
#include "mb.h"

/* What a child hands back to the parent, in memory they share. */
struct child_report {
	uint64_t ns;		/* time to read the whole file */
	int32_t err;		/* 0, or the errno of the failed read */
	int32_t done;
};

/* A child's work: wait for the start, read file @f whole with pread(), report, exit. */
static void __attribute__((noreturn)) child(int start, const struct wl_file *f, char *buf,
					     uint64_t block, struct child_report *rep)
{
	uint64_t t0, off = 0;
	char c;

	/* the parent closes the write end once every child exists: all start together */
	while (read(start, &c, 1) < 0 && errno == EINTR)
		;
	t0 = mb_now_ns();
	while (off < f->size) {
		uint64_t want = f->size - off < block ? f->size - off : block;
		ssize_t n = pread(f->fd, buf, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rep->err = n < 0 ? errno : EIO;
			_exit(1);
		}
		mb_use(buf[0]);
		off += n;
	}
	rep->ns = mb_now_ns() - t0;
	rep->done = 1;
	_exit(0);
}

/* Kills and reaps the @n children in @pids (after a failure): none is left behind. */
static void reap_all(pid_t *pids, int n, bool kill_them)
{
	for (int i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		if (kill_them)
			kill(pids[i], SIGKILL);
		while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
			;
		pids[i] = 0;
	}
}

/*
 * One round: @nprocs children read files[0..nprocs) at once; their times go to @s (ms). Returns 0,
 * or -1 with every child reaped.
 */
static int round_of(struct wl_file *files, int nprocs, char *buf, uint64_t block,
		    struct child_report *reps, pid_t *pids, struct mb_samples *s)
{
	int start[2], failed = 0;

	for (int i = 0; i < nprocs; i++) {
		int64_t left = wl_file_drop(&files[i]);

		if (left) {
			fprintf(stderr, "contention: %s\n", left < 0 ? strerror(-left) :
				"a file's pages would not leave the page cache");
			return -1;
		}
	}
	memset(reps, 0, nprocs * sizeof(*reps));
	if (pipe(start)) {
		perror("contention: pipe");
		return -1;
	}
	for (int i = 0; i < nprocs; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(start[1]);
			child(start[0], &files[i], buf, block, &reps[i]);
		}
		if (pids[i] < 0) {
			perror("contention: fork");
			close(start[0]);
			close(start[1]);
			reap_all(pids, i, true);
			return -1;
		}
	}
	close(start[0]);
	close(start[1]);	/* go */
	for (int i = 0; i < nprocs; i++) {
		int status = 0;
		pid_t got;

		while ((got = waitpid(pids[i], &status, 0)) < 0 && errno == EINTR)
			;
		pids[i] = 0;
		if (got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) || !reps[i].done) {
			fprintf(stderr, "contention: reader %d failed: %s\n", i,
				reps[i].err ? strerror(reps[i].err) : "killed");
			failed = 1;
		}
	}
	if (failed)
		return -1;
	for (int i = 0; i < nprocs && s; i++)
		mb_samples_add(s, reps[i].ns / 1e6);
	return 0;
}

static struct contention_cfg {
	struct wl_opts wo;
	uint64_t max_procs, block, reps, warmup;
} cfg = {
	.wo = { .file_size = 1 << 20, .cache = WL_CACHE_COLD },
	.max_procs = 8, .block = 64 << 10, .reps = 20, .warmup = 1,
};

static const struct mb_opt opts[] = {
	{ "max-procs", MB_COUNT, &cfg.max_procs, 1, 63 },
	{ "file-size", MB_SIZE, &cfg.wo.file_size, 4096, 1ULL << 36 },
	{ "block", MB_SIZE, &cfg.block, 1, 1 << 30 },
	{ "reps", MB_COUNT, &cfg.reps, 1, 10000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 1000 },
	{ "dir", MB_STRING, &cfg.wo.dir },
	{},
};

/* The readers' files, pids, buffer and shared reports, and what the rounds added up to. */
struct readers {
	struct wl_file *files;
	struct child_report *shared;
	pid_t *pids;
	char *buf;
	int made;			/* files made so far */
	uint64_t bytes;			/* bytes the readers read, all rounds */
	double first_med, last_med;	/* median ms per file with one reader, and with the most */
};

/* Memory for --max-procs readers and their files, written back: 0, or -1 having said why. */
static int setup_readers(struct readers *rd)
{
	int err;

	rd->files = calloc(cfg.max_procs, sizeof(*rd->files));
	rd->pids = calloc(cfg.max_procs, sizeof(*rd->pids));
	rd->buf = malloc(cfg.block);
	/* the children report through memory shared with the parent, not copied on fork */
	rd->shared = mmap(NULL, cfg.max_procs * sizeof(*rd->shared), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!rd->files || !rd->pids || !rd->buf || rd->shared == MAP_FAILED) {
		fprintf(stderr, "contention: out of memory\n");
		return -1;
	}
	for (; rd->made < (int)cfg.max_procs; rd->made++) {
		if ((err = wl_file_create(&cfg.wo, "contention", true, &rd->files[rd->made]))) {
			fprintf(stderr, "contention: cannot make the files in %s: %s\n", cfg.wo.dir,
				strerror(-err));
			if (rd->files[rd->made].fd >= 0)
				close(rd->files[rd->made].fd);
			return -1;
		}
	}
	/* nothing of ours left to write back once the readers start */
	if (syncfs(rd->files[0].fd)) {
		perror("contention: syncfs");
		return -1;
	}
	return 0;
}

static void free_readers(struct readers *rd)
{
	for (int i = 0; i < rd->made; i++)
		close(rd->files[i].fd);
	if (rd->shared != MAP_FAILED)
		munmap(rd->shared, cfg.max_procs * sizeof(*rd->shared));
	free(rd->files);
	free(rd->pids);
	free(rd->buf);
}

/* What the kernel must have counted in @step of @n readers: forks, exits, pages read in. */
static void claim_readers(struct mb *m, int step, int n, uint64_t rounds, uint64_t pages)
{
	char claim[200];

	snprintf(claim, sizeof(claim), "%d reader%s forked per round, %" PRIu64 " rounds", n,
		 n > 1 ? "s" : "", rounds);
	mb_assume_exact(m, step, claim, "forks", n * rounds);
	snprintf(claim, sizeof(claim), "every reader exited before the round ended: none left "
		 "behind");
	mb_assume_exact(m, step, claim, "exits", n * rounds);
	snprintf(claim, sizeof(claim), "every file was cold: each reader read in all %" PRIu64
		 " pages of its file, no more", pages);
	mb_assume_exact(m, step, claim, "page_cache_pages", n * rounds * pages);
}

/* The rounds of @n readers at once: one step, a result in ms per file, its claims. */
static int time_readers(struct mb *m, struct readers *rd, int n)
{
	struct mb_samples s = {};
	uint64_t rounds = cfg.warmup + cfg.reps;
	char name[64];
	int step;

	snprintf(name, sizeof(name), "%d reader%s at once", n, n > 1 ? "s" : "");
	step = mb_step_begin(m, name);
	for (uint64_t r = 0; r < rounds; r++) {
		if (round_of(rd->files, n, rd->buf, cfg.block, rd->shared, rd->pids,
			     r >= cfg.warmup ? &s : NULL)) {
			mb_step_end(m);
			mb_samples_free(&s);
			return -1;
		}
		rd->bytes += n * rd->files[0].size;
	}
	mb_step_end(m);
	snprintf(name + strlen(name), sizeof(name) - strlen(name), ": ms per file");
	mb_result(m, name, "ms", &s, 1, cfg.warmup);
	if (n == 1)
		rd->first_med = mb_percentile(&s, 50);
	rd->last_med = mb_percentile(&s, 50);
	mb_samples_free(&s);
	claim_readers(m, step, n, rounds, rd->files[0].pages);
	return 0;
}

/* The notes and the report's extras; the exit code of mb_finish(). */
static int report(struct mb *m, const struct readers *rd, int ra_kb, long ncpus)
{
	json_object *extra;

	mb_note(m, "readers not pinned: the scheduler places them on the machine's %ld CPUs; each "
		"file's pages dropped before every round (fdatasync + POSIX_FADV_DONTNEED, mincore "
		"saw none left)", ncpus);
	mb_note(m, "median %.3f ms per file alone, %.3f ms with %d at once (x%.2f); readahead %d KiB",
		rd->first_med, rd->last_med, (int)cfg.max_procs,
		rd->first_med > 0 ? rd->last_med / rd->first_med : 0, ra_kb);

	extra = json_object_new_object();
	json_object_object_add(extra, "max_procs", json_object_new_uint64(cfg.max_procs));
	json_object_object_add(extra, "block", json_object_new_uint64(cfg.block));
	json_object_object_add(extra, "pinned", json_object_new_boolean(0));
	/* what the readers' pread() copied out of the page cache: zctrace's file_read_copy site */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(rd->bytes));
	wl_file_report(extra, &cfg.wo, &rd->files[0]);
	return mb_finish(m, extra);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	struct readers rd = { .shared = MAP_FAILED };
	int ret = 1, ra_kb;
	struct mb m;
	long ncpus;

	cfg.wo.dir = tmp && *tmp ? tmp : "/var/tmp";
	if (mb_parse(argc, argv, "contention", "N processes each read their own cold file at once, "
		     "N = 1 up to --max-procs; the kernel counts the forks and the pages read in.", opts))
		return 2;
	if (setup_readers(&rd))
		goto out;

	/* sysfs reads count as file reads: done before the measured phase */
	ra_kb = wl_file_readahead_kb(&rd.files[0]);
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);

	mb_init(&m, "contention", -1);
	mb_begin(&m);
	for (int n = 1; n <= (int)cfg.max_procs; n++) {
		if (time_readers(&m, &rd, n))
			goto out;
	}
	ret = report(&m, &rd, ra_kb, ncpus);
out:
	free_readers(&rd);
	return ret;
}

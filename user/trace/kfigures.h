/*
 * The kernel's figures: what zctrace's BPF programs counted, read from their maps and summed over
 * the traced processes. The final ledger and every tick of the live view read them the same way.
 */
#ifndef KFIGURES_H
#define KFIGURES_H

#include "zctrace.h"

struct zctrace_bpf;

typedef void (*kfig_entry_fn)(void *ctx, const void *key, const void *val);
/*
 * Calls @fn on every entry of map @fd (@ksz, @vsz: its key and value sizes, a per-CPU value's
 * copies included); hash and array maps alike, read in batches. A hash map read while the kernel
 * evicts or deletes keys gives each key it still holds once: a walk by get_next_key would start
 * over from the first key each time the key it stood on went, and meet keys again.
 */
void kfig_each_entry(int fd, size_t ksz, size_t vsz, kfig_entry_fn fn, void *ctx);

#define MAX_PC_FILES 64
#define MAX_PROC_SITES 16	/* processes shown side by side */
#define MAX_ZC_PATHS 32
#define MAX_ACCOUNT_ROWS 128	/* (call, file type) pairs kept; the rest folded into one row */
#define ACCOUNT_FOLDED 0xffffffffu	/* the call of the row the rest is folded into */

#define MAX_SKIPPED_PROGS 8

/* A program of zctrace's whose runs the kernel skipped (its recursion_misses). */
struct prog_skips {
	char name[32];
	__u64 runs;
};

/* One traced process's sites: the sender's and the receiver's ledgers. */
struct proc_sites {
	__u32 tgid;
	char comm[16];		/* its name, as the kernel last noted it ("" if never) */
	__u32 netns;		/* its network namespace's inode number (0 if never noted) */
	__u64 count[NR_SITES];
	__u64 bytes[NR_SITES];
};

struct kfigures {
	struct site_stats site[NR_SITES];	/* every site, summed over the processes */
	struct proc_sites procs[MAX_PROC_SITES];	/* by process (those with any site counted), by pid */
	int nproc_sites;
	int nprocs;				/* traced processes (tgids) */
	struct sched_stats sched;
	__u64 syscalls[MAX_SYSCALLS];
	__u64 phase_syscalls[MAX_SYSCALLS];	/* inside the measured phase */
	struct pc_key pc_key[MAX_PC_FILES];	/* files the targets brought pages of into the cache */
	__u64 pc_pages[MAX_PC_FILES];
	int npc;
	struct zc_path_key zp_key[MAX_ZC_PATHS];	/* where the zerocopy skbs went, xmit before receive */
	struct zc_path_stats zp[MAX_ZC_PATHS];
	int nzp;
	/* the boundary account: bytes between user memory and the kernel, by call and file type */
	struct account_key acct_key[MAX_ACCOUNT_ROWS];
	struct account_stats acct[MAX_ACCOUNT_ROWS];
	int nacct;
	struct misc_stats misc;
	/* runs of zctrace's programs the kernel skipped (kfigures_read_skips) */
	struct prog_skips skips[MAX_SKIPPED_PROGS];	/* the programs that skipped any, most first */
	int nskips;
	__u64 skipped;				/* runs, over every program */
	char skips_uncounted[96];		/* which skips this kernel does not count, or "" */
};

/* A microbenchmark's figures per numbered step (USDT zctrace:step), step 0 being "none". */
struct step_figures {
	struct step_stats stats[MAX_STEPS];
	__u64 syscalls[MAX_STEPS][MAX_SYSCALLS];
};

/* Reads every map into @k (zeroed first). */
void kfigures_read(struct kfigures *k, struct zctrace_bpf *obj);
#define MAX_MARKED_PROGS 256

/* How many runs of each of zctrace's programs the kernel had skipped at one moment, by skeleton index. */
struct skip_mark {
	int n;
	__u64 runs[MAX_MARKED_PROGS];
};

/*
 * Marks how many runs of each of @obj's programs the kernel has skipped rather than nest BPF
 * programs on one CPU. Marked as the target starts and as it ends, before zctrace reads a map:
 * a map syscall holds off kprobe programs on its CPU (bpf_disable_instrumentation()), so the
 * reading of a run's figures must not be charged to the run.
 */
void kfigures_mark_skips(struct skip_mark *m, struct zctrace_bpf *obj);
/* The runs skipped between marks @from and @to, by program, into @k (a skipped run's figures are lost). */
void kfigures_read_skips(struct kfigures *k, struct zctrace_bpf *obj, const struct skip_mark *from,
			 const struct skip_mark *to);
/* @k's skipped runs by program, the most first, into @buf ("name runs, ..."); its length. */
size_t kfigures_skips_text(const struct kfigures *k, char *buf, size_t n);
/* Reads the per-step maps into @sf. */
void kfigures_read_steps(struct step_figures *sf, struct zctrace_bpf *obj);

#endif

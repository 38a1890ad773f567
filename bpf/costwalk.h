/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a sample's time goes, decided from its kernel stack: the one rule the sampler runs in the
 * kernel (cost.bpf.c) and the unit tests run on recorded stacks (tests/unit). Each frame carries
 * the role of its function (a word user space makes from the function's name: user/trace/cost.c);
 * the walk reads them from the leaf up and stops at the first frame that decides.
 * - A copy routine (memcpy, _copy_to_iter, rep_movs_alternative, ...) says the sample is copying;
 *   the first site function above it says whose copy it is.
 * - generic_perform_write() is the file write's copy, unless a splice or copy_file_range frame
 *   above it makes it the kernel-internal copy.
 * - Any other known function gives the kind of the time; a site's function that is not copying
 *   gives the kind of its layer (tcp_sendmsg_locked(): the protocol stack).
 * - The syscall layer decides only near the leaf: it is at the root of every stack.
 * - A leaf where interrupts come back on took a sample that was due while they were off.
 * - JITed BPF code (zctrace's programs, their trampolines) is the tracer's time, except above a
 *   copy routine: there it is a trampoline on the copy's way, passed by.
 */
#ifndef ZCTRACE_COSTWALK_H
#define ZCTRACE_COSTWALK_H

#include "zctrace.h"

enum cost_role {
	ROLE_NONE,
	ROLE_COPY,		/* a copy routine */
	ROLE_SITE,		/* a copy site's function: site in the word's second byte */
	ROLE_WRITE_SITE,	/* generic_perform_write(): file_write_copy, or kernel_copy under ROLE_SPLICE */
	ROLE_SPLICE,		/* splice, sendfile and copy_file_range's own functions */
	ROLE_KIND,		/* a function of one kind of time: the class in the word's third byte */
	ROLE_SYSCALL,		/* the syscall layer */
	ROLE_DISPLACE,		/* where interrupts come back on */
	ROLE_BPF,		/* JITed BPF: a program, a trampoline (the tracer's time, or passed by) */
};

/* A function's role word: role, site (ROLE_SITE) and the class of its time outside a copy. */
static inline __u32 cost_word(__u32 role, __u32 site, __u32 cls)
{
	return role | site << 8 | cls << 16;
}

#define COST_ROLE(w) ((w) & 0xff)
#define COST_SITE(w) (((w) >> 8) & 0xff)
#define COST_CLASS(w) (((w) >> 16) & 0xff)
#define COST_SYSCALL_DEPTH 2	/* frames from the leaf where the syscall layer decides */

struct cost_walk {
	__u32 copying;		/* a copy routine was met */
	__u32 pending;		/* a file write's copy was met: kernel_copy if a splice frame follows */
	__u32 cls;		/* the class decided, once done */
};

/* Reads frame @depth's role @word into @w; nonzero once the sample's class is decided (w->cls). */
static inline int cost_step(struct cost_walk *w, __u32 depth, __u32 word)
{
	__u32 role = COST_ROLE(word);

	if (w->pending) {
		/* file_write_copy so far: only a splice frame above changes it */
		if (role == ROLE_SPLICE)
			w->cls = SITE_KERNEL_COPY;
		return role == ROLE_SPLICE;
	}
	switch (role) {
	case ROLE_NONE:
		return 0;
	case ROLE_DISPLACE:
		if (depth)
			return 0;
		w->cls = COST_DISPLACED;
		return 1;
	case ROLE_COPY:
		w->copying = 1;
		return 0;
	case ROLE_BPF:
		/*
		 * Above a copy, JITed code is the trampoline of a program on a copy's function: passed
		 * by, whatever its address (a trampoline made after the function table is named in
		 * none, and falls in the range of the BPF symbol before it). Otherwise the tracer's.
		 */
		if (w->copying)
			return 0;
		w->cls = COST_CLASS(word);
		return 1;
	case ROLE_SITE:
		w->cls = w->copying ? COST_SITE(word) : COST_CLASS(word);
		return 1;
	case ROLE_WRITE_SITE:
		if (!w->copying) {
			w->cls = COST_CLASS(word);
			return 1;
		}
		w->cls = SITE_FILE_WRITE_COPY;
		w->pending = 1;
		return 0;
	case ROLE_SYSCALL:
		if (depth >= COST_SYSCALL_DEPTH && !w->copying)
			return 0;
		w->cls = w->copying ? COST_COPY_OTHER : COST_SYSCALL;
		return 1;
	default:	/* ROLE_SPLICE, ROLE_KIND: the kind of the time, or a copy no site makes */
		w->cls = w->copying ? COST_COPY_OTHER : COST_CLASS(word);
		return 1;
	}
}

/* The class of a sample whose walk read all its @nframes frames without deciding. */
static inline __u32 cost_finish(const struct cost_walk *w, __u32 nframes)
{
	if (w->pending)
		return SITE_FILE_WRITE_COPY;
	if (w->copying)
		return COST_COPY_OTHER;
	return nframes ? COST_KERNEL_OTHER : COST_USER;
}

#endif /* ZCTRACE_COSTWALK_H */

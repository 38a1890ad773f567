/*
 * The kernel's functions the sampler's walk knows (cost.c), as sorted ranges with their role
 * words: the core kernel's and the modules' from /proc/kallsyms, or from the copy of them this
 * boot keeps; the JITed BPF programs' listed live from the kernel.
 */
#ifndef KTABLE_H
#define KTABLE_H

#include <stddef.h>
#include "zctrace.h"

/* Where a boot's copy of the core kernel's and the modules' functions is kept (a tmpfs). */
#define KTABLE_CACHE_DIR "/run/zctrace"
#define KTABLE_CACHE KTABLE_CACHE_DIR "/functions"

#define KTABLE_BPF_UNLISTED 0xffffffffU

/* The role word of a kallsyms symbol (@type its letter), 0 for none. */
typedef __u32 (*ktable_word_fn)(const char *name, char type);

/* How a table was built: read from kallsyms, or from the boot's copy. */
enum ktable_source {
	KTABLE_KALLSYMS,
	KTABLE_CACHED,
};

/*
 * The table into *@table (malloc'd, at most @max ranges, sorted by start) and its length into
 * *@n: every function with a role (@word_of), each to the next symbol's start, then each JITed
 * BPF function's, with @bpf_word (*@nbpf of them, KTABLE_BPF_UNLISTED where the kernel would not
 * list its programs: none is then named). @rules names @word_of's rules: a copy made with other rules is
 * not used. How it was built into *@source. 0, or a negative errno with why in @why.
 */
int ktable_build(struct cost_range **table, unsigned *n, unsigned *nbpf, unsigned max, ktable_word_fn word_of,
		 __u32 bpf_word, __u64 rules, enum ktable_source *source, char *why, size_t whyn);

/* FNV-1a of @len bytes at @p, on from @h (start from KTABLE_HASH_INIT). */
#define KTABLE_HASH_INIT 0xcbf29ce484222325ULL
__u64 ktable_hash(__u64 h, const void *p, size_t len);

#endif

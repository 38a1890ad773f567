/*
 * The user-space copy routines (usercopy.h). zctrace resolves each name in libc as loaded in its
 * own process (not by the global scope, where a sanitizer's interceptors would answer), where the
 * dynamic linker has made the choice it makes in the workloads (the same libc, the same CPU);
 * /proc/self/maps gives the file and the offset in it; the file's build ID names it as the kernel
 * does to the sampler, and its unwind table (.eh_frame, read with libdw: libc keeps it when
 * stripped of its symbols) gives the routine's bounds, and those of the routines it jumps into.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include "trace/usercopy.h"

/* The C library's name as a program loads it (glibc) */
#define LIBC_SO "libc.so.6"

/* The names a program's copy calls: memcpy() and its fortified and mempcpy() kin. */
static const char *const copy_names[] = { "memcpy", "memmove", "mempcpy", "__memcpy_chk", "__memmove_chk",
					   "__mempcpy_chk" };
#define NR_COPY_NAMES (sizeof(copy_names) / sizeof(copy_names[0]))

/* The mapping of this process that holds @addr: its file, and @addr's offset in it. */
struct mapped {
	char path[4096];
	__u64 off;
};

static int find_mapping(unsigned long addr, struct mapped *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4400];
	int err = -ENOENT;

	if (!f) {
		err = -errno;
		return err;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		int at = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*x:%*x %lu %n", &lo, &hi, &off, &ino, &at) < 4 ||
		    addr < lo || addr >= hi)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (!ino || line[at] != '/')
			break;
		snprintf(m->path, sizeof(m->path), "%s", line + at);
		m->off = addr - lo + off;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

/* The loadable segment of @elf holding file offset @off: its file offsets [lo, hi), and p_offset - p_vaddr. */
struct segment {
	__u64 lo, hi;
	long long delta;
};

static int segment_of(Elf *elf, __u64 off, struct segment *seg)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && off >= ph.p_offset &&
		    off < ph.p_offset + ph.p_filesz) {
			*seg = (struct segment){ ph.p_offset, ph.p_offset + ph.p_filesz,
						 (long long)ph.p_offset - (long long)ph.p_vaddr };
			return 0;
		}
	}
	return -ENOENT;
}

/* libc as a file: its ELF, its unwind table and its build ID, opened once for every routine. */
struct libfile {
	char path[4096];
	int fd;
	Elf *elf;
	Dwarf_CFI *cfi;
	__u8 id[USER_COPY_BUILD_ID];
};

static void lib_close(struct libfile *lib)
{
	if (lib->cfi)
		dwarf_cfi_end(lib->cfi);
	if (lib->elf)
		elf_end(lib->elf);
	if (lib->fd >= 0)
		close(lib->fd);
	lib->cfi = NULL;
	lib->elf = NULL;
	lib->fd = -1;
}

static int lib_open(struct libfile *lib, const char *path, char *why, size_t n)
{
	const void *id;

	snprintf(lib->path, sizeof(lib->path), "%s", path);
	if ((lib->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		int err = -errno;

		snprintf(why, n, "cannot open %s: %s", path, strerror(-err));
		return err;
	}
	if (!(lib->elf = elf_begin(lib->fd, ELF_C_READ, NULL))) {
		snprintf(why, n, "%s: %s", path, elf_errmsg(-1));
		return -EINVAL;
	}
	if (!(lib->cfi = dwarf_getcfi_elf(lib->elf))) {
		snprintf(why, n, "%s: no unwind table: %s", path, dwarf_errmsg(-1));
		return -ENOENT;
	}
	if (dwelf_elf_gnu_build_id(lib->elf, &id) != USER_COPY_BUILD_ID) {
		snprintf(why, n, "%s: no %d-byte build ID", path, USER_COPY_BUILD_ID);
		return -ENOENT;
	}
	memcpy(lib->id, id, USER_COPY_BUILD_ID);
	return 0;
}

/* The bounds, in file offsets, of the routine whose unwind entry covers file offset @off (@delta: p_offset - p_vaddr of its segment). */
static int fde_at(const struct libfile *lib, __u64 off, long long delta, struct user_copy_fn *fn)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr start, end;
	int err = 0;

	if (dwarf_cfi_addrframe(lib->cfi, off - delta, &frame) || dwarf_frame_info(frame, &start, &end, NULL) < 0)
		err = -ENOENT;
	else
		*fn = (struct user_copy_fn){ .start = start + delta, .end = end + delta };
	free(frame);
	return err;
}

/* @fn into @fns (@nfns of them so far) unless it is there already; -E2BIG where they are full. */
static int add_fn(struct user_copy_fn *fns, int *nfns, struct user_copy_fn fn)
{
	for (int k = 0; k < *nfns; k++)
		if (fns[k].start == fn.start)
			return 0;
	if (*nfns == USER_COPY_FNS)
		return -E2BIG;
	fns[(*nfns)++] = fn;
	return 0;
}

/*
 * How far from a routine a routine it branches into may lie: the two halves of one source file.
 * glibc's memmove entries for CPUs without ERMS (AMD's Zen 1 and 2, and QEMU's default CPU) are a
 * few dozen bytes that move 32 to 64 bytes themselves and jump into their _erms sibling, a
 * routine of its own in the unwind table, for every other size. Without its bounds a copy of 65
 * bytes or more would not be seen as a copy.
 */
#define NEAR_BRANCH 4096

/*
 * Every routine @fn (at @code in this process) branches into within NEAR_BRANCH bytes, into @fns.
 * The bytes are read for the 5-byte jmp and 6-byte jcc, whose 4-byte displacement can reach the
 * sibling; a pair of bytes that only looks like one lands so near by chance about once in half a
 * million. Short (rel8) forms are left out: read from bytes, they would as often be part of
 * another instruction.
 */
static void add_branch_targets(const struct libfile *lib, const unsigned char *code, struct user_copy_fn fn,
			       const struct segment *seg, struct user_copy_fn *fns, int *nfns)
{
	__u64 len;

	if (fn.start < seg->lo || fn.start >= seg->hi)
		return;		/* only the segment's bytes are mapped as its */
	len = (fn.end < seg->hi ? fn.end : seg->hi) - fn.start;
	for (__u64 i = 0; i + 5 <= len; i++) {
		struct user_copy_fn to;
		__s32 rel;
		__u64 at;

		if (code[i] == 0xe9) {
			memcpy(&rel, code + i + 1, sizeof(rel));
			at = fn.start + i + 5 + rel;
		} else if (code[i] == 0x0f && i + 6 <= len && (code[i + 1] & 0xf0) == 0x80) {
			memcpy(&rel, code + i + 2, sizeof(rel));
			at = fn.start + i + 6 + rel;
		} else {
			continue;
		}
		if ((at >= fn.start && at < fn.end) || at + NEAR_BRANCH < fn.start || at >= fn.end + NEAR_BRANCH ||
		    at < seg->lo || at >= seg->hi)
			continue;
		/* the routines named come first: one found so that finds no room is left out */
		if (!fde_at(lib, at, seg->delta, &to) && add_fn(fns, nfns, to))
			return;
	}
}

int usercopy_find(struct user_copy_fn *fns, __u8 lib_id[USER_COPY_BUILD_ID], char *why, size_t n)
{
	void *libc = dlopen(LIBC_SO, RTLD_NOW | RTLD_NOLOAD);
	const unsigned char *code[NR_COPY_NAMES] = { NULL };
	struct user_copy_fn named[NR_COPY_NAMES];
	struct segment segs[NR_COPY_NAMES];
	struct libfile lib = { .fd = -1 };
	int nfns = 0, err = 0;

	why[0] = '\0';
	if (!libc) {
		snprintf(why, n, "%s is not loaded in zctrace: %s", LIBC_SO, dlerror());
		return -ENOENT;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(why, n, "libelf: %s", elf_errmsg(-1));
		dlclose(libc);
		return -EINVAL;
	}
	for (size_t i = 0; i < NR_COPY_NAMES && !err; i++) {
		void *addr = dlsym(libc, copy_names[i]);
		struct user_copy_fn fn;
		struct mapped m;

		if (!addr)
			continue;
		if ((err = find_mapping((unsigned long)addr, &m))) {
			snprintf(why, n, "%s at %p: %s", copy_names[i], addr, err == -ENOENT ? "in no file zctrace maps"
				 : strerror(-err));
			break;
		}
		/* one library's: the sampler knows it by one build ID */
		if (lib.fd < 0) {
			if ((err = lib_open(&lib, m.path, why, n)))
				break;
		} else if (strcmp(lib.path, m.path)) {
			snprintf(why, n, "%s resolves to %s, another file than %s's", copy_names[i], m.path, copy_names[0]);
			err = -EINVAL;
			break;
		}
		if (segment_of(lib.elf, m.off, &segs[i])) {
			snprintf(why, n, "%s: no loadable segment holds offset 0x%llx", m.path, (unsigned long long)m.off);
			err = -ENOENT;
		} else if (fde_at(&lib, m.off, segs[i].delta, &fn)) {
			snprintf(why, n, "%s: no unwind entry covers offset 0x%llx: %s", m.path, (unsigned long long)m.off,
				 dwarf_errmsg(-1));
			err = -ENOENT;
		} else if ((err = add_fn(fns, &nfns, fn))) {
			snprintf(why, n, "more than %d copy routines", USER_COPY_FNS);
		} else {
			/* the routine's code as mapped here: @addr is file offset m.off */
			named[i] = fn;
			code[i] = (const unsigned char *)addr - (m.off - fn.start);
		}
	}
	for (size_t i = 0; i < NR_COPY_NAMES && !err; i++)
		if (code[i])
			add_branch_targets(&lib, code[i], named[i], &segs[i], fns, &nfns);
	if (!err && nfns)
		memcpy(lib_id, lib.id, USER_COPY_BUILD_ID);
	lib_close(&lib);
	dlclose(libc);
	if (!err && !nfns) {
		snprintf(why, n, "no copy routine (memcpy and kin) resolves in %s", LIBC_SO);
		err = -ENOENT;
	}
	return err ? err : nfns;
}

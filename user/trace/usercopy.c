/*
 * The user-space copy routines (usercopy.h). zctrace resolves each name in libc as loaded in its
 * own process (not by the global scope, where a sanitizer's interceptors would answer), where the
 * dynamic linker has made the choice it makes in the workloads (the same libc, the same CPU);
 * /proc/self/maps gives the file and the offset in it; the file's build ID names it as the kernel
 * does to the sampler, and its unwind table (.eh_frame, read with libdw: libc keeps it when
 * stripped of its symbols) gives the routine's bounds.
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

/* The loadable segment of @elf holding file offset @off: its p_offset - p_vaddr, in @delta. */
static int segment_of(Elf *elf, __u64 off, long long *delta)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && off >= ph.p_offset &&
		    off < ph.p_offset + ph.p_filesz) {
			*delta = (long long)ph.p_offset - (long long)ph.p_vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* The routine at file offset @m->off of @m->path: its bounds, in file offsets, into @fn, its file's build ID into @id. */
static int bounds_of(const struct mapped *m, struct user_copy_fn *fn, __u8 idbuf[USER_COPY_BUILD_ID], char *why,
		     size_t n)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC), err = 0;
	Dwarf_Addr start, end;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi = NULL;
	const void *id;
	long long delta;
	ssize_t len;
	Elf *elf;

	if (fd < 0) {
		err = -errno;
		snprintf(why, n, "cannot open %s: %s", m->path, strerror(-err));
		return err;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		snprintf(why, n, "%s: %s", m->path, elf_errmsg(-1));
		err = -EINVAL;
	} else if (segment_of(elf, m->off, &delta)) {
		snprintf(why, n, "%s: no loadable segment holds offset 0x%llx", m->path, (unsigned long long)m->off);
		err = -ENOENT;
	} else if (!(cfi = dwarf_getcfi_elf(elf)) || dwarf_cfi_addrframe(cfi, m->off - delta, &frame) ||
		   dwarf_frame_info(frame, &start, &end, NULL) < 0) {
		snprintf(why, n, "%s: no unwind entry covers offset 0x%llx: %s", m->path, (unsigned long long)m->off,
			 dwarf_errmsg(-1));
		err = -ENOENT;
	} else if ((len = dwelf_elf_gnu_build_id(elf, &id)) != USER_COPY_BUILD_ID) {
		snprintf(why, n, "%s: no %d-byte build ID", m->path, USER_COPY_BUILD_ID);
		err = -ENOENT;
	} else {
		*fn = (struct user_copy_fn){ .start = start + delta, .end = end + delta };
		memcpy(idbuf, id, USER_COPY_BUILD_ID);
	}
	free(frame);
	if (cfi)
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

int usercopy_find(struct user_copy_fn *fns, __u8 lib[USER_COPY_BUILD_ID], char *why, size_t n)
{
	void *libc = dlopen(LIBC_SO, RTLD_NOW | RTLD_NOLOAD);
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
	for (size_t i = 0; i < sizeof(copy_names) / sizeof(copy_names[0]) && !err; i++) {
		void *addr = dlsym(libc, copy_names[i]);
		__u8 id[USER_COPY_BUILD_ID];
		struct user_copy_fn fn;
		struct mapped m;
		bool seen = false;

		if (!addr)
			continue;
		if ((err = find_mapping((unsigned long)addr, &m))) {
			snprintf(why, n, "%s at %p: %s", copy_names[i], addr, err == -ENOENT ? "in no file zctrace maps"
				 : strerror(-err));
			break;
		}
		if ((err = bounds_of(&m, &fn, id, why, n)))
			break;
		/* one library's: the sampler knows it by one build ID */
		if (!nfns)
			memcpy(lib, id, USER_COPY_BUILD_ID);
		else if (memcmp(lib, id, USER_COPY_BUILD_ID)) {
			snprintf(why, n, "%s resolves to %s, another file than %s's", copy_names[i], m.path, copy_names[0]);
			err = -EINVAL;
			break;
		}
		for (int k = 0; k < nfns; k++)
			seen |= fns[k].start == fn.start;
		if (seen)
			continue;
		if (nfns == USER_COPY_FNS) {
			snprintf(why, n, "more than %d copy routines", USER_COPY_FNS);
			err = -E2BIG;
			break;
		}
		fns[nfns++] = fn;
	}
	dlclose(libc);
	if (!err && !nfns) {
		snprintf(why, n, "no copy routine (memcpy and kin) resolves in %s", LIBC_SO);
		err = -ENOENT;
	}
	return err ? err : nfns;
}

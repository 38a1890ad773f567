/*
 * The sampler's function table (ktable.h). The core kernel's and the modules' functions change
 * only with a boot or a module loaded or unloaded, yet /proc/kallsyms hands them out anew to
 * every run: 170,000 names or more, each formatted by the kernel and parsed here, half a second
 * of a run under QEMU's emulation. So a run keeps what it read in KTABLE_CACHE (root's alone,
 * on a tmpfs that a boot empties), named for the boot (its boot_id), the modules loaded and
 * where (/proc/modules, hashed) and the rules it was made with; the next run whose three match
 * reads that instead. JITed BPF programs come and go with every run, zctrace's own among them:
 * each run lists them live from the kernel (BPF_PROG_GET_NEXT_ID and each one's jited_ksyms),
 * never from either. A trampoline is named in neither, and falls in the range of the program
 * before it, as every trampoline made after the table was read always did.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "trace/ktable.h"

/* The next symbol's start ends a function; one longer than this ends at it (a section's last). */
#define MAX_FUNC_LEN (1U << 20)
/* No kernel has this many module symbols: a copy that says so is not one. */
#define MAX_BOUNDS (1U << 22)

__u64 ktable_hash(__u64 h, const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}

/*
 * The part of the table kallsyms gives for a whole boot: the functions with a role, each to the
 * next symbol, and (bounds) the start of every module symbol, which ends a BPF program's range
 * where one follows it: programs are placed among the modules.
 */
struct part {
	struct cost_range *ranges;
	__u64 *bounds;
	size_t nranges, nbounds;
};

static void part_free(struct part *p)
{
	free(p->ranges);
	free(p->bounds);
	*p = (struct part){ 0 };
}

/* What names a copy: the boot, the modules and where they are, the rules. */
struct cache_key {
	char boot_id[40];
	__u64 modules;
	__u64 rules;
};

struct cache_head {
	char magic[8];
	struct cache_key key;
	__u64 nranges, nbounds;
};

static const char cache_magic[8] = "zcktab1";

/*
 * The modules loaded and where, into *@h: each one's name, size, state and address from
 * /proc/modules, and its build ID (/sys/module/NAME/notes), so that a module built anew and
 * loaded again at the same place names another copy. Not the other columns: a module's users
 * come and go with mounts and probes while its functions stay. 0, or a negative errno.
 */
static int hash_modules(__u64 *h)
{
	FILE *f = fopen("/proc/modules", "re");
	char line[4096];

	*h = KTABLE_HASH_INIT;
	if (!f)
		return errno == ENOENT ? 0 : -errno;	/* a kernel without modules: the empty hash */
	while (fgets(line, sizeof(line), f)) {
		char name[64], state[16], path[160], id[64];
		unsigned long size;
		unsigned long long addr;
		int fd;
		ssize_t got;

		if (sscanf(line, "%63s %lu %*s %*s %15s %llx", name, &size, state, &addr) != 4)
			continue;
		*h = ktable_hash(*h, name, strlen(name) + 1);
		*h = ktable_hash(*h, &size, sizeof(size));
		*h = ktable_hash(*h, state, strlen(state) + 1);
		*h = ktable_hash(*h, &addr, sizeof(addr));
		snprintf(path, sizeof(path), "/sys/module/%s/notes/.note.gnu.build-id", name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			if ((got = read(fd, id, sizeof(id))) > 0)
				*h = ktable_hash(*h, id, got);
			close(fd);
		}
	}
	fclose(f);
	return 0;
}

/* zctrace's own build ID, from its program headers: a copy made by another build is not read. */
static int own_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	__u64 *h = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *desc = p + sizeof(*n) + ((n->n_namesz + 3) & ~3U);

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(p + sizeof(*n), "GNU", 4) &&
			    desc + n->n_descsz <= end) {
				*h = ktable_hash(*h, desc, n->n_descsz);
				return 1;
			}
			p = desc + ((n->n_descsz + 3) & ~3U);
		}
	}
	return 1;	/* the first object is the program: none of the others */
}

/* This boot's key for @rules: 0, or a negative errno (no copy is read or kept then). */
static int key_of_now(struct cache_key *k, __u64 rules)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC), err;
	__u64 build = KTABLE_HASH_INIT;
	ssize_t got;

	memset(k, 0, sizeof(*k));
	if (fd < 0)
		return -errno;
	got = read(fd, k->boot_id, sizeof(k->boot_id) - 1);
	err = got < 0 ? -errno : got == 0 ? -EIO : 0;
	close(fd);
	if (err)
		return err;
	k->boot_id[strcspn(k->boot_id, "\n")] = '\0';
	dl_iterate_phdr(own_build_id, &build);
	if (build == KTABLE_HASH_INIT)
		return -ENOENT;
	k->rules = ktable_hash(rules, &build, sizeof(build));
	return hash_modules(&k->modules);
}

/* One symbol as read: its start, role word, and whether a module's. */
struct ksym {
	__u64 addr;
	__u32 word;
	__u32 module;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int u64_cmp(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * One line of /proc/kallsyms, "ADDR TYPE NAME" with "\t[MODULE]" after it for a module's (or
 * "[bpf]"), split in place. False where it is not one. By hand: sscanf() took as long as the
 * kernel took to write the 100,000 lines or more.
 */
static bool split_ksym(char *line, unsigned long long *addr, char *type, char **name, const char **module)
{
	char *end, *tab;

	*addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ' || !end[3])
		return false;
	*type = end[1];
	*name = end + 3;
	*module = "";
	if ((tab = strchr(*name, '\t'))) {
		*tab = '\0';
		*module = tab + 1;
	}
	return true;
}

/* Adds one symbol to @syms (grown as needed). 0 or -ENOMEM. */
static int add_ksym(struct ksym **syms, size_t *nsyms, size_t *cap, struct ksym s)
{
	if (*nsyms == *cap) {
		/* room for a distribution kernel's 170,000 symbols or more at once: no copy as it grows */
		size_t want = *cap ? *cap * 2 : 1 << 18;
		struct ksym *grown = realloc(*syms, want * sizeof(**syms));

		if (!grown)
			return -ENOMEM;
		*syms = grown;
		*cap = want;
	}
	(*syms)[(*nsyms)++] = s;
	return 0;
}

/*
 * Every symbol of /proc/kallsyms but those that come and go within a boot: BPF's ("[bpf]",
 * listed live) and the kernel's own trampolines and probe pages ("[__builtin__ftrace]",
 * "[__builtin__kprobes]"). 0, or a negative errno with why in @why.
 */
static int read_kallsyms(struct ksym **syms, size_t *nsyms, ktable_word_fn word_of, char *why, size_t whyn)
{
	enum { KSYMS_BUF = 1 << 20 };
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	size_t cap = 0, have = 0;
	bool any_addr = false;
	char *buf;
	ssize_t got;
	int err = 0;

	*syms = NULL;
	*nsyms = 0;
	if (fd < 0) {
		err = -errno;
		snprintf(why, whyn, "cannot read /proc/kallsyms: %s", strerror(-err));
		return err;
	}
	if (!(buf = malloc(KSYMS_BUF + 1))) {
		close(fd);
		snprintf(why, whyn, "out of memory reading /proc/kallsyms");
		return -ENOMEM;
	}
	/* whole lines from each read; a line cut at the end of one waits for the next */
	while (!err && (got = read(fd, buf + have, KSYMS_BUF - have)) > 0) {
		char *line = buf, *nl;

		have += got;
		buf[have] = '\0';
		while (!err && (nl = memchr(line, '\n', buf + have - line))) {
			unsigned long long addr;
			const char *module;
			char type, *name;

			*nl = '\0';
			if (split_ksym(line, &addr, &type, &name, &module) && strcmp(module, "[bpf]") &&
			    strncmp(module, "[__builtin__", 12)) {
				any_addr |= addr != 0;
				err = add_ksym(syms, nsyms, &cap, (struct ksym){ addr, word_of(name, type), module[0] != 0 });
			}
			line = nl + 1;
		}
		have = buf + have - line;
		memmove(buf, line, have);
		if (have == KSYMS_BUF)
			have = 0;	/* no line is a megabyte long: not kallsyms */
	}
	if (got < 0 && !err)
		err = -errno;
	free(buf);
	close(fd);
	if (!err && !any_addr) {
		snprintf(why, whyn, "/proc/kallsyms shows no addresses (kernel.kptr_restrict)");
		err = -EPERM;
	} else if (err) {
		snprintf(why, whyn, err == -ENOMEM ? "out of memory reading /proc/kallsyms" : "cannot read /proc/kallsyms: %s",
			 strerror(-err));
	}
	if (err) {
		free(*syms);
		*syms = NULL;
	}
	return err;
}

/* The boot's part from /proc/kallsyms. 0, or a negative errno with why in @why. */
static int part_from_kallsyms(struct part *p, unsigned max, ktable_word_fn word_of, char *why, size_t whyn)
{
	struct ksym *syms;
	size_t nsyms;
	int err = read_kallsyms(&syms, &nsyms, word_of, why, whyn);

	if (err)
		return err;
	/* kallsyms lists vmlinux's symbols by address; loaded modules can break the order */
	for (size_t i = 1; i < nsyms; i++)
		if (syms[i].addr < syms[i - 1].addr) {
			qsort(syms, nsyms, sizeof(*syms), ksym_cmp);
			break;
		}
	*p = (struct part){ 0 };
	p->ranges = calloc(max ? max : 1, sizeof(*p->ranges));
	p->bounds = malloc((nsyms ? nsyms : 1) * sizeof(*p->bounds));
	if (!p->ranges || !p->bounds) {
		free(syms);
		part_free(p);
		snprintf(why, whyn, "out of memory for the function table");
		return -ENOMEM;
	}
	for (size_t i = 0, j; i < nsyms; i = j) {
		__u32 word = 0;
		bool module = false;
		__u64 end;

		/* aliases (memcpy, __memcpy, __pi_memcpy) share a start: the first that has a role names it */
		for (j = i; j < nsyms && syms[j].addr == syms[i].addr; j++) {
			word = word ? word : syms[j].word;
			module |= syms[j].module;
		}
		if (module && p->nbounds < MAX_BOUNDS)
			p->bounds[p->nbounds++] = syms[i].addr;
		end = j < nsyms ? syms[j].addr : syms[i].addr + 1;
		if (!word || p->nranges == max)
			continue;
		p->ranges[p->nranges++] = (struct cost_range){
			.start = syms[i].addr, .len = end - syms[i].addr > MAX_FUNC_LEN ? MAX_FUNC_LEN : end - syms[i].addr,
			.word = word };
	}
	free(syms);
	return 0;
}

/* Reads exactly @len bytes into @p: 0, or -EIO on a short file. */
static int read_all(int fd, void *p, size_t len)
{
	while (len) {
		ssize_t got = read(fd, p, len);

		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		p = (char *)p + got;
		len -= got;
	}
	return 0;
}

/*
 * The boot's part from its copy, if the copy is root's alone (or this user's), and named for this
 * boot, these modules and these rules. 0, or a negative errno (none to use: read kallsyms).
 */
static int part_from_cache(struct part *p, unsigned max, const struct cache_key *key)
{
	int fd = open(KTABLE_CACHE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), err = -EINVAL;
	struct cache_head h;
	struct stat st;

	*p = (struct part){ 0 };
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    read_all(fd, &h, sizeof(h)) || memcmp(h.magic, cache_magic, sizeof(cache_magic)) ||
	    memcmp(&h.key, key, sizeof(*key)) || h.nranges > max || h.nbounds > MAX_BOUNDS ||
	    (__u64)st.st_size != sizeof(h) + h.nranges * sizeof(*p->ranges) + h.nbounds * sizeof(*p->bounds))
		goto out;
	p->ranges = calloc(max ? max : 1, sizeof(*p->ranges));
	p->bounds = malloc((h.nbounds ? h.nbounds : 1) * sizeof(*p->bounds));
	err = -ENOMEM;
	if (!p->ranges || !p->bounds)
		goto out;
	p->nranges = h.nranges;
	p->nbounds = h.nbounds;
	if ((err = read_all(fd, p->ranges, p->nranges * sizeof(*p->ranges))) ||
	    (err = read_all(fd, p->bounds, p->nbounds * sizeof(*p->bounds))))
		goto out;
	/* sorted, as written: a copy that is not is no copy */
	err = -EINVAL;
	for (size_t i = 1; i < p->nranges; i++)
		if (p->ranges[i].start < p->ranges[i - 1].start)
			goto out;
	for (size_t i = 1; i < p->nbounds; i++)
		if (p->bounds[i] < p->bounds[i - 1])
			goto out;
	err = 0;
out:
	close(fd);
	if (err)
		part_free(p);
	return err;
}

/*
 * Keeps @p as this boot's copy: written aside, then renamed over the last, in a folder root's
 * alone. A copy that cannot be kept costs the next run a read of kallsyms, nothing more.
 */
static void part_keep(const struct part *p, const struct cache_key *key)
{
	struct cache_head h = { .key = *key, .nranges = p->nranges, .nbounds = p->nbounds };
	char tmp[] = KTABLE_CACHE ".XXXXXX";
	struct stat st;
	bool ok;
	int fd;

	memcpy(h.magic, cache_magic, sizeof(h.magic));
	if (mkdir(KTABLE_CACHE_DIR, 0700) && errno != EEXIST)
		return;
	if (lstat(KTABLE_CACHE_DIR, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return;
	if ((fd = mkstemp(tmp)) < 0)
		return;
	ok = write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h) &&
	     write(fd, p->ranges, p->nranges * sizeof(*p->ranges)) == (ssize_t)(p->nranges * sizeof(*p->ranges)) &&
	     write(fd, p->bounds, p->nbounds * sizeof(*p->bounds)) == (ssize_t)(p->nbounds * sizeof(*p->bounds));
	if (close(fd))
		ok = false;
	if (!ok || rename(tmp, KTABLE_CACHE))
		unlink(tmp);
}

/* The starts of every JITed function of every BPF program loaded now, sorted, into *@starts. */
static int bpf_starts(__u64 **starts, size_t *n)
{
	size_t cap = 0;
	__u32 id = 0;
	int err = 0, next = 0;

	*starts = NULL;
	*n = 0;
	while (!err && !(next = bpf_prog_get_next_id(id, &id))) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info), nsyms;
		int fd = bpf_prog_get_fd_by_id(id);
		__u64 *grown;

		if (fd < 0)
			continue;	/* unloaded since it was listed */
		/* a program the kernel runs in its interpreter names the interpreter: none of it is BPF's */
		if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.jited_prog_len || !(nsyms = info.nr_jited_ksyms)) {
			close(fd);
			continue;
		}
		if (*n + nsyms > cap) {
			cap = (*n + nsyms) * 2;
			if (!(grown = realloc(*starts, cap * sizeof(**starts)))) {
				close(fd);
				err = -ENOMEM;
				break;
			}
			*starts = grown;
		}
		memset(&info, 0, sizeof(info));
		info.nr_jited_ksyms = nsyms;
		info.jited_ksyms = (__u64)(uintptr_t)(*starts + *n);
		len = sizeof(info);
		/* a kernel that hides addresses from this user gives zeros: none of them is named */
		if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
			__u64 *got = *starts + *n;
			size_t kept = 0;

			for (__u32 k = 0; k < nsyms && k < info.nr_jited_ksyms; k++)
				if (got[k])
					got[kept++] = got[k];
			*n += kept;
		}
		close(fd);
	}
	/* the end of the list, or a kernel that lists programs to no one but its administrator (EPERM) */
	if (!err && next != -ENOENT)
		err = next;
	if (err) {
		free(*starts);
		*starts = NULL;
		*n = 0;
		return err;
	}
	if (*n > 1)
		qsort(*starts, *n, sizeof(**starts), u64_cmp);
	return 0;
}

/*
 * The range of BPF function @k of @starts: to the next start of a BPF function or a module symbol
 * (@p's bounds, from *@bound on), as kallsyms would have ended it.
 */
static struct cost_range bpf_range(const __u64 *starts, size_t nstarts, size_t k, const struct part *p,
				   size_t *bound, __u32 word)
{
	__u64 s = starts[k], end = s + MAX_FUNC_LEN;
	size_t next = k + 1;

	while (next < nstarts && starts[next] == s)
		next++;
	if (next < nstarts && starts[next] < end)
		end = starts[next];
	while (*bound < p->nbounds && p->bounds[*bound] <= s)
		(*bound)++;
	if (*bound < p->nbounds && p->bounds[*bound] < end)
		end = p->bounds[*bound];
	return (struct cost_range){ .start = s, .len = end - s, .word = word };
}

int ktable_build(struct cost_range **table, unsigned *n, unsigned *nbpf, unsigned max, ktable_word_fn word_of,
		 __u32 bpf_word, __u64 rules, enum ktable_source *source, char *why, size_t whyn)
{
	struct cost_range *out;
	struct cache_key key, again;
	size_t nstarts, i = 0, k = 0, bound = 0;
	bool keyed = !key_of_now(&key, rules);
	__u64 *bpf;
	struct part p;
	int err;

	*table = NULL;
	*n = *nbpf = 0;
	if (keyed && !part_from_cache(&p, max, &key)) {
		*source = KTABLE_CACHED;
	} else {
		if ((err = part_from_kallsyms(&p, max, word_of, why, whyn)))
			return err;
		*source = KTABLE_KALLSYMS;
		/* kept only where no module came or went while kallsyms was read */
		if (keyed && !key_of_now(&again, rules) && !memcmp(&again, &key, sizeof(key)))
			part_keep(&p, &key);
	}
	/* programs that cannot be listed are named in no range, and said so (KTABLE_BPF_UNLISTED) */
	if ((err = bpf_starts(&bpf, &nstarts)) && err != -ENOMEM)
		*nbpf = KTABLE_BPF_UNLISTED;
	if (err == -ENOMEM || !(out = calloc(max ? max : 1, sizeof(*out)))) {
		free(bpf);
		part_free(&p);
		snprintf(why, whyn, "out of memory for the function table");
		return -ENOMEM;
	}
	while (*n < max && (i < p.nranges || k < nstarts)) {
		if (k < nstarts && (i == p.nranges || bpf[k] < p.ranges[i].start)) {
			out[(*n)++] = bpf_range(bpf, nstarts, k, &p, &bound, bpf_word);
			(*nbpf)++;	/* never KTABLE_BPF_UNLISTED here: unlisted, there are no starts */
			while (++k < nstarts && bpf[k] == bpf[k - 1])
				;
		} else {
			out[(*n)++] = p.ranges[i++];
		}
	}
	free(bpf);
	part_free(&p);
	*table = out;
	return 0;
}

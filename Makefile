# zctrace: build, test, demo, install.  `make V=1` shows the commands.
# Every core builds, unless JOBS says how many (make JOBS=1: one job at a time); a make under
# another (make check's fuzz build, debian/rules') takes its jobs from the one above.
ifeq ($(MAKELEVEL),0)
JOBS ?= $(shell nproc)
MAKEFLAGS += -j$(JOBS)
endif
OUTPUT := .output
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool || echo /usr/sbin/bpftool)
LLVM_OBJDUMP ?= llvm-objdump
# the system's Python: the one Debian's python3-* packages (matplotlib, prometheus-client) serve
PYTHON ?= /usr/bin/python3
CC ?= cc
PREFIX ?= /usr/local
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/;s/ppc64le/powerpc/;s/riscv64/riscv/;s/s390x/s390/')
# root runs the privileged steps directly; anyone else through sudo
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

CFLAGS ?= -g -O2
# compiler flags of the sanitizer builds (make sanitize, make fuzz); empty in the normal build
SANFLAGS ?=
CFLAGS += $(SANFLAGS) $(CPPFLAGS) -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -MMD -MP
# the CLI's and the tests' headers: the generated ones, bpf/'s shared ones, user/'s layers, and the
# contract with the workloads by its path (contract/report.h); a workload's add its own library's
INCLUDES := -I$(OUTPUT) -Ibpf -Iuser -I.
WL_INCLUDES := -I$(OUTPUT) -Ibpf -I. -Iworkloads/lib
# the CLI's libraries (libdw: the sampler reads libc's unwind table for its copy routines' bounds;
# libmicrohttpd, GnuTLS, libyaml, libcrypt: zctrace export's HTTP server, its
# TLS, its --web-config file and its password hashes), also linked into the unit
# tests and fuzzers, which link the CLI's modules
LDLIBS := -lbpf -lelf -ldw -lz -ljson-c -lmicrohttpd -lgnutls -lyaml -lcrypt -lm
# clang's own system includes, for <bpf/usdt.bpf.h> and friends, as libbpf-bootstrap does
CLANG_BPF_SYS_INCLUDES := $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# the CLI, a folder per layer (docs/ARCHITECTURE.md): os, trace, ledger, report, cmd
USER_SRCS := $(wildcard user/*/*.c)
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
# the io_uring harness needs liburing: linked into the uring-* workloads alone
URING_LIB_SRCS := workloads/lib/uringwl.c
URING_LIB_OBJS := $(patsubst workloads/lib/%.c,$(OUTPUT)/wl/%.o,$(URING_LIB_SRCS))
URING_CFLAGS := $(shell pkg-config --cflags liburing 2>/dev/null)
URING_LIBS := $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
WL_LIB_SRCS := $(filter-out $(URING_LIB_SRCS),$(wildcard workloads/lib/*.c))
WL_LIB_OBJS := $(patsubst workloads/lib/%.c,$(OUTPUT)/wl/%.o,$(WL_LIB_SRCS))
# the contract between the workloads and the CLI, one small library both link: the report's keys,
# kind and parser (report.c), the workloads' options, their parsers and documentation (opts.c,
# mbdocs.c)
SHARED_OBJS := $(patsubst contract/%.c,$(OUTPUT)/contract/%.o,$(wildcard contract/*.c))
SHARED_LIB := $(OUTPUT)/libcontract.a
WORKLOADS := $(patsubst workloads/%.c,%,$(wildcard workloads/*.c))
WL_BINS := $(patsubst %,$(OUTPUT)/workloads/%,$(WORKLOADS))
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS)) $(OUTPUT)/tests/copyloop \
	$(OUTPUT)/tests/copyloop-static
# unit tests link the CLI's pure modules, not its main()
UNIT_LINK_OBJS := $(filter-out $(OUTPUT)/user/cmd/main.o,$(USER_OBJS)) $(WL_LIB_OBJS) $(SHARED_OBJS)
# the CLI itself; the sanitizer build puts its own in its output directory
ZCTRACE_BIN := zctrace
FUZZ_SRCS := $(wildcard tests/fuzz/*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all deps docs samples check test test-kernels demo bench install uninstall deb-check clean sanitize fuzz fuzz-targets \
	bpf-alone
all: $(ZCTRACE_BIN) $(WL_BINS) $(UNIT_BINS) $(OUTPUT)/docs.stamp

deps:
	$(Q)$(SUDO) tools/install-deps.sh

$(OUTPUT) $(OUTPUT)/user $(OUTPUT)/wl $(OUTPUT)/contract $(OUTPUT)/workloads $(OUTPUT)/tests $(OUTPUT)/fuzz:
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -MMD -MP -MT $@ -MF $(OUTPUT)/$*.bpf.d \
		-I$(OUTPUT) -Ibpf $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

# The same object for kernels before bpf_loop() (5.17): bpf/common.bpf.h's ZCT_COMPAT. zctrace opens it
# through zctrace.skel.h's skeleton, so its global variables must lie where zctrace.bpf.o's do: checked.
$(OUTPUT)/zctrace_compat.bpf.o: bpf/zctrace.bpf.c $(OUTPUT)/vmlinux.h $(OUTPUT)/zctrace.bpf.o | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -DZCT_COMPAT -MMD -MP -MT $@ \
		-MF $(OUTPUT)/zctrace_compat.bpf.d -I$(OUTPUT) -Ibpf $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp
	$(Q)for o in $(OUTPUT)/zctrace.bpf.o $@; do \
		$(BPFTOOL) btf dump file $$o | awk '/DATASEC/ { p = 1; sub(/^\[[0-9]+\] /, ""); print; next } /^\[/ { p = 0 } p { sub(/type_id=[0-9]+ /, ""); print }' \
			> $$o.layout || exit 1; done
	$(Q)cmp -s $(OUTPUT)/zctrace.bpf.o.layout $@.layout || \
		{ echo "$@: its global variables lie elsewhere than zctrace.bpf.o's" >&2; rm -f $@; exit 1; }

# Each part of the BPF object (bpf/*.bpf.c) and each of its headers compiles alone, with the
# object's flags and warnings as errors, as both objects: a part includes what it uses, so the order
# zctrace.bpf.c includes them in is the object's layout only. Checked by the compiler's front end
# (-fsyntax-only); a stamp in $(OUTPUT)/alone for each.
BPF_ALONE_SRCS := $(filter-out bpf/zctrace.bpf.c,$(wildcard bpf/*.bpf.c)) $(wildcard bpf/*.bpf.h)
BPF_ALONE_STAMPS := $(patsubst bpf/%,$(OUTPUT)/alone/%.ok,$(BPF_ALONE_SRCS)) \
	$(patsubst bpf/%,$(OUTPUT)/alone/%.compat.ok,$(BPF_ALONE_SRCS))
BPF_ALONE_CC = $(CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) -MMD -MP -MT $@ -MF $@.d \
	-I$(OUTPUT) -Ibpf $(CLANG_BPF_SYS_INCLUDES) -fsyntax-only
bpf-alone: $(BPF_ALONE_STAMPS)

$(OUTPUT)/alone:
	$(Q)mkdir -p $@

$(OUTPUT)/alone/%.bpf.c.ok: bpf/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)/alone
	$(call msg,ALONE,$<)
	$(Q)$(BPF_ALONE_CC) $< && touch $@

$(OUTPUT)/alone/%.bpf.c.compat.ok: bpf/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)/alone
	$(call msg,ALONE,$< (compat))
	$(Q)$(BPF_ALONE_CC) -DZCT_COMPAT $< && touch $@

# a header as a part that includes it sees it: its unused functions are no part's
$(OUTPUT)/alone/%.bpf.h.ok: bpf/%.bpf.h $(OUTPUT)/vmlinux.h | $(OUTPUT)/alone
	$(call msg,ALONE,$<)
	$(Q)$(BPF_ALONE_CC) -include $< -x c /dev/null && touch $@

$(OUTPUT)/alone/%.bpf.h.compat.ok: bpf/%.bpf.h $(OUTPUT)/vmlinux.h | $(OUTPUT)/alone
	$(call msg,ALONE,$< (compat))
	$(Q)$(BPF_ALONE_CC) -DZCT_COMPAT -include $< -x c /dev/null && touch $@

# an empty program at each of zctrace's attach points, for zctrace floor
$(OUTPUT)/floor.bpf.c: $(OUTPUT)/zctrace.bpf.o tools/gen-floor.py
	$(call msg,GEN,$@)
	$(Q)$(LLVM_OBJDUMP) -t $< > $@.syms && $(PYTHON) tools/gen-floor.py $@.syms > $@.tmp && mv $@.tmp $@ && rm -f $@.syms

$(OUTPUT)/floor.bpf.o: $(OUTPUT)/floor.bpf.c
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) \
		-I$(OUTPUT) -Ibpf $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# syscall number -> name, from the C library's own <sys/syscall.h>
$(OUTPUT)/syscall_names.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)echo '#include <sys/syscall.h>' | $(CC) -dM -E - \
		| sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9]*\)$$/[\2] = "\1",/p' > $@

# every CLI object may include the skeleton
$(USER_OBJS): $(OUTPUT)/zctrace.skel.h $(OUTPUT)/syscall_names.h
$(OUTPUT)/user/cmd/floor.o: $(OUTPUT)/floor.skel.h
$(OUTPUT)/user/trace/tracer.o: $(OUTPUT)/zctrace_compat.skel.h
$(OUTPUT)/user/%.o: user/%.c | $(OUTPUT)/user
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@

$(SHARED_LIB): $(SHARED_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# the CLI parses sizes and workload options as the workloads do, their reports with report.c, and
# describes their options as they do: the contract's library
$(ZCTRACE_BIN): $(USER_OBJS) $(SHARED_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# the distribution's linker flags (dpkg-buildflags: relro, bindnow) on the programs make install
# installs; the compiler ignores them where a prerequisite of these is only compiled
$(ZCTRACE_BIN) $(WL_BINS): CFLAGS += $(LDFLAGS)
# the workloads at fixed addresses: a kernel without BPF cookies (before 5.15) has libbpf find a USDT
# probe by its address, which in a position-independent program is known only once it is mapped
$(WL_BINS): CFLAGS += -no-pie

# the blocks of the manual page and docs/ made from the workload table (zctrace list --format):
# rewritten where they differ, on every build that changes zctrace (tools/docblocks.py)
GENERATED_MAN := docs/zctrace.8
GENERATED_MD := docs/workloads.md docs/microbenchmarks.md
$(OUTPUT)/docs.stamp: $(ZCTRACE_BIN) tools/docblocks.py | $(OUTPUT)
	$(call msg,GEN,$(GENERATED_MAN) $(GENERATED_MD))
	$(Q)$(abspath $(ZCTRACE_BIN)) list --format man > $@.man
	$(Q)$(abspath $(ZCTRACE_BIN)) list --format markdown > $@.md
	$(Q)$(PYTHON) tools/docblocks.py $(GENERATED_MAN) < $@.man
	$(Q)$(PYTHON) tools/docblocks.py $(GENERATED_MD) < $@.md
	$(Q)rm -f $@.man $@.md && touch $@

docs: $(ZCTRACE_BIN)
	$(Q)rm -f $(OUTPUT)/docs.stamp
	$(Q)$(MAKE) --no-print-directory $(OUTPUT)/docs.stamp

# README.md's sample outputs, from real runs of the commands they show (tools/samples.py)
samples: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(SUDO) $(PYTHON) tools/samples.py

$(OUTPUT)/wl/%.o: workloads/lib/%.c | $(OUTPUT)/wl
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WL_INCLUDES) -c $< -o $@

$(OUTPUT)/contract/%.o: contract/%.c | $(OUTPUT)/contract
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUTPUT) -Ibpf -I. -c $< -o $@

$(OUTPUT)/workloads/%: workloads/%.c $(WL_LIB_OBJS) $(SHARED_LIB) | $(OUTPUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WL_INCLUDES) -MF $(OUTPUT)/wl/$*.d $< $(WL_LIB_OBJS) $(SHARED_LIB) -ljson-c -lz -lpthread -lm -o $@

$(URING_LIB_OBJS): CFLAGS += $(URING_CFLAGS)
$(OUTPUT)/workloads/uring-%: workloads/uring-%.c $(WL_LIB_OBJS) $(URING_LIB_OBJS) $(SHARED_LIB) | $(OUTPUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(URING_CFLAGS) $(WL_INCLUDES) -MF $(OUTPUT)/wl/uring-$*.d $< $(WL_LIB_OBJS) $(URING_LIB_OBJS) $(SHARED_LIB) \
		$(URING_LIBS) -ljson-c -lz -lpthread -lm -o $@

$(OUTPUT)/tests/%: tests/unit/%.c $(UNIT_LINK_OBJS) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -MF $(OUTPUT)/tests/$*.d $< $(UNIT_LINK_OBJS) \
		$(LDLIBS) -o $@

# a command of a user's for the sampler's tests, linked to libc and statically, as a user builds it:
# no sanitizer (its interceptors would take memcpy() from libc)
$(OUTPUT)/tests/copyloop: tests/progs/copyloop.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -fno-builtin $< -o $@
$(OUTPUT)/tests/copyloop-static: tests/progs/copyloop.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -fno-builtin -static $< -o $@

# libFuzzer targets: the CLI's pure modules, compiled with -fsanitize=fuzzer-no-link (make fuzz)
$(OUTPUT)/fuzz/%: tests/fuzz/%.c $(UNIT_LINK_OBJS) | $(OUTPUT)/fuzz
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $(INCLUDES) -MF $(OUTPUT)/fuzz/$*.d $< $(UNIT_LINK_OBJS) \
		$(LDLIBS) -lm -o $@

fuzz-targets: $(FUZZ_BINS)

# the fast loop, as any user: no root, no BPF loaded (the tests declared root=False: the unit tests,
# the decoders, the source's shape, each BPF part compiled alone, ...), then each fuzz target for
# CHECK_FUZZ_SECONDS (default 3)
CHECK_FUZZ_SECONDS ?= 3
check: all
	$(Q)$(PYTHON) tests/run.py --check
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(FUZZ_OUTPUT) CC=$(CLANG) SANFLAGS="$(FUZZ_FLAGS)" fuzz-targets
	$(Q)tools/fuzz.sh $(FUZZ_OUTPUT) $(CHECK_FUZZ_SECONDS)

# the fast loop first, then the tests that need root, TEST_JOBS of them side by side
TEST_JOBS ?= 4
test: deps
	$(Q)$(MAKE) --no-print-directory check
	$(Q)$(SUDO) $(PYTHON) tests/run.py --root -j $(TEST_JOBS)

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(SUDO) tools/demo.sh

# the portable part of the suite on Debian's stock 6.1 and 6.12 kernels, booted under QEMU over this
# machine's root file system (tools/kernels.sh; the kernels and virtme-ng go to .kernels/)
test-kernels: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(SUDO) tools/kernels.sh test

# variants of one job side by side in one run, medians of BENCH_REPS (default 5)
bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(SUDO) $(PYTHON) tools/bench.py

# ASan + UBSan build of zctrace, the workloads and the unit tests in .output-san/ (the normal
# build is left alone), then the whole suite against it; every sanitizer report fails it
SAN_OUTPUT := .output-san
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
sanitize: deps
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(SAN_OUTPUT) ZCTRACE_BIN=$(SAN_OUTPUT)/zctrace \
		CC=$(CLANG) SANFLAGS="$(SAN_FLAGS)" all
	$(Q)$(SUDO) tools/sanitize.sh $(SAN_OUTPUT) $(TESTS)

# libFuzzer (clang, with ASan + UBSan): each target for FUZZ_SECONDS (default 60), in .output-fuzz/
FUZZ_OUTPUT := .output-fuzz
FUZZ_SECONDS ?= 60
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
fuzz: deps
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(FUZZ_OUTPUT) CC=$(CLANG) SANFLAGS="$(FUZZ_FLAGS)" fuzz-targets
	$(Q)tools/fuzz.sh $(FUZZ_OUTPUT) $(FUZZ_SECONDS)

# zctrace finds its workloads in ../libexec/zctrace and zctrace-plot its script in ../share/zctrace,
# both beside their own directory, so PREFIX moves them all together. Units go where systemd looks:
# PREFIX/lib/systemd/system (/usr/local's too); the .deb says /lib/systemd/system.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALLED := sbin/zctrace bin/zctrace-plot share/zctrace/plot share/zctrace/findings.py \
	share/zctrace/microfigures.py \
	share/man/man8/zctrace.8 share/bash-completion/completions/zctrace \
	$(patsubst %,libexec/zctrace/%,$(WORKLOADS))
install: all
	install -D -m 0755 $(ZCTRACE_BIN) $(DESTDIR)$(PREFIX)/sbin/zctrace
	install -d $(DESTDIR)$(PREFIX)/libexec/zctrace
	install -m 0755 $(WL_BINS) $(DESTDIR)$(PREFIX)/libexec/zctrace/
	install -D -m 0755 tools/plot $(DESTDIR)$(PREFIX)/share/zctrace/plot
	install -D -m 0644 tools/findings.py $(DESTDIR)$(PREFIX)/share/zctrace/findings.py
	install -D -m 0644 tools/microfigures.py $(DESTDIR)$(PREFIX)/share/zctrace/microfigures.py
	install -D -m 0755 tools/zctrace-plot $(DESTDIR)$(PREFIX)/bin/zctrace-plot
	install -D -m 0644 docs/zctrace.8 $(DESTDIR)$(PREFIX)/share/man/man8/zctrace.8
	install -D -m 0644 tools/zctrace.bash-completion $(DESTDIR)$(PREFIX)/share/bash-completion/completions/zctrace
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|@SBINDIR@|$(PREFIX)/sbin|' tools/zctrace-export.service.in \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/zctrace-export.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/zctrace-export.service

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALLED)) $(DESTDIR)$(SYSTEMDUNITDIR)/zctrace-export.service
	-rmdir $(DESTDIR)$(PREFIX)/libexec/zctrace $(DESTDIR)$(PREFIX)/share/zctrace 2>/dev/null
	-rm -rf $(DESTDIR)/run/zctrace

# the .deb built from a copy of the tree, installed, used, purged (tools/deb-check.sh)
deb-check: deps
	$(Q)$(SUDO) tools/deb-check.sh

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf $(OUTPUT) $(SAN_OUTPUT) $(FUZZ_OUTPUT) zctrace

.DELETE_ON_ERROR:
.SECONDARY:

-include $(wildcard $(OUTPUT)/*.d $(OUTPUT)/*/*.d $(OUTPUT)/*/*/*.d)

#!/usr/bin/env bash
# Debian's stock kernels under QEMU (TCG) over this machine's root file system, with virtme-ng:
#   kernels.sh fetch              the newest images the package index offers of each kernel in
#                                 $ZCTRACE_KERNEL_SETS (default "stock rt old"): stock, Debian 12's 6.1
#                                 and 6.12; rt, their PREEMPT_RT builds; old, Debian 11's 5.10
#   kernels.sh list               their versions, one a line (after fetch)
#   kernels.sh run VERSION CMD    boot VERSION, run CMD as root in the project directory, exit with CMD's status
#   kernels.sh test               make test-kernels: the portable suite on each (on RT builds, its rt
#                                 part; on 5.10, its old part; a stock kernel's in two guests, a
#                                 slice each) and the device path on each stock kernel
#                                 (two NIC pairs on QEMU hubs, device-suite.sh), $ZCTRACE_KERNEL_JOBS
#                                 guests at a time; then one table
# The kernels, their modules and virtme-ng live in $ZCTRACE_KERNELS (default .kernels/ here):
# virtme-ng finds each image's modules in its unpacked package (and runs depmod there). The host's
# apt configuration, /lib/modules and bootloader are never touched.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KDIR=${ZCTRACE_KERNELS:-$ROOT/.kernels}
VNG_VERSION=1.42
# the package name patterns of the kernels users run: Debian 12's 6.1 and the 6.12 LTS, their
# PREEMPT_RT builds, and Debian 11's 5.10 (bullseye: an apt configuration of its own, old_apt())
STOCK=('^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$')
RT=('^linux-image-6\.1\.0-[0-9]+-rt-amd64-unsigned$' '^linux-image-6\.12\.[0-9]+\+deb12-rt-amd64-unsigned$')
OLD='^linux-image-5\.10\.0-[0-9]+-amd64-unsigned$'
SETS=${ZCTRACE_KERNEL_SETS:-stock rt old}
APT_OPTS=()

# Says what failed and exits, once the unpackings under way have ended (settle_unpacked).
die() {
	echo "kernels: $*" >&2
	settle_unpacked || true
	exit 1
}

newest() {
	apt-cache "${APT_OPTS[@]}" search --names-only "$1" | cut -d' ' -f1 | sort -V | tail -n 1
}

# APT_OPTS for Debian 11's index, in $KDIR/apt-bullseye: its own sources list, lists and cache, on
# the host's own Debian mirror; the host's apt configuration and state stay as they are.
old_apt() {
	local d=$KDIR/apt-bullseye uri
	uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n' | grep -v security | head -n 1)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	[ -n "$uri" ] || die "no Debian mirror in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri bullseye main" >"$d/sources.list"
	APT_OPTS=(-o "Dir::Etc::sourcelist=$d/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$d/lists"
		  -o "Dir::Cache=$d/cache" -o APT::Get::List-Cleanup=0)
	[ -n "$(newest "$OLD")" ] || apt-get "${APT_OPTS[@]}" update -qq || die "cannot read Debian 11's package index"
}

# Downloads kernel package $1 and unpacks it in the background, beside the next download and the
# other unpackings (settle_unpacked). Its version goes to versions.new in the order asked.
UNPACKING=()
fetch_one() {
	local pkg=$1 ver
	ver=${pkg#linux-image-}
	ver=${ver%-unsigned}
	if [ ! -e "$KDIR/$ver/boot/vmlinuz-$ver" ]; then
		echo "kernels: fetching $pkg"
		rm -f "$KDIR"/debs/"$pkg"_*.deb
		# apt's warning that root downloads unsandboxed is noise here; a failed download is not
		(cd "$KDIR/debs" && apt-get "${APT_OPTS[@]}" download -q "$pkg" 2>&1) | grep -v '^W: Download is performed unsandboxed' || true
		compgen -G "$KDIR/debs/${pkg}_*.deb" >/dev/null || die "cannot download $pkg"
		rm -rf "$KDIR/$ver.tmp"
		dpkg -x "$KDIR"/debs/"$pkg"_*.deb "$KDIR/$ver.tmp" &
		UNPACKING+=("$!:$pkg:$ver")
	fi
	echo "$ver" >>"$KDIR/versions.new"
}

# Waits for each unpacking fetch_one() started and moves those that ended well in place (their .deb
# goes); one that failed leaves nothing, and is named. 1 if any failed. dpkg -x in the background
# ignores Ctrl-C (as a script's background jobs do), so a fetch stopped is let finish its unpackings.
settle_unpacked() {
	local pid pkg ver ok rc=0
	while [ ${#UNPACKING[@]} -gt 0 ]; do
		IFS=: read -r pid pkg ver <<<"${UNPACKING[0]}"
		# a signal ends the wait early and its trap settles again: the job stays listed until here
		ok=0
		wait "$pid" && ok=1
		UNPACKING=("${UNPACKING[@]:1}")
		if [ $ok = 1 ]; then
			rm -f "$KDIR"/debs/"$pkg"_*.deb
			mv "$KDIR/$ver.tmp" "$KDIR/$ver"
		else
			rm -rf "$KDIR/$ver.tmp"
			echo "kernels: cannot unpack $pkg" >&2
			rc=1
		fi
	done
	return $rc
}

fetch_vng() {
	[ -x "$KDIR/venv/bin/vng" ] && return 0
	python3 -m venv "$KDIR/venv" 2>/dev/null || /usr/bin/python3 -m venv "$KDIR/venv" ||
		die "cannot make a Python venv for virtme-ng (install python3-venv)"
	"$KDIR/venv/bin/pip" install -q "virtme-ng==$VNG_VERSION" || die "cannot install virtme-ng $VNG_VERSION from PyPI"
}

cmd_fetch() {
	local pkg set pats
	mkdir -p "$KDIR/debs"
	[ -n "$(newest "${STOCK[0]}")" ] || apt-get update -qq
	rm -f "$KDIR/versions.new"
	trap 'settle_unpacked || true; exit 130' INT
	trap 'settle_unpacked || true; exit 143' TERM
	for set in $SETS; do
		case $set in
		stock) pats=("${STOCK[@]}") ;;
		rt) pats=("${RT[@]}") ;;
		old) old_apt; pats=("$OLD") ;;
		*) die "unknown kernel set '$set' in ZCTRACE_KERNEL_SETS (stock, rt, old)" ;;
		esac
		for p in "${pats[@]}"; do
			pkg=$(newest "$p")
			[ -n "$pkg" ] || die "no package matches $p in the package index"
			fetch_one "$pkg"
		done
		APT_OPTS=()
	done
	fetch_vng
	settle_unpacked || die "the kernels above could not be unpacked"
	trap - INT TERM
	mv "$KDIR/versions.new" "$KDIR/versions"
}

# The host's TSC rate in kHz, from its kernel's log (empty if not there): what a guest's TSC runs
# at under TCG, which reads the host's. A guest that measures it itself, booting on a busy host,
# can be off by a factor (its clock, and every timeout in it, then runs that much fast).
host_tsc_khz() {
	{ dmesg 2>/dev/null || journalctl -k -b -q 2>/dev/null || true; } |
		sed -n -E 's/.*tsc: (Detected|Refined TSC clocksource calibration:?) ([0-9]+)\.([0-9]{3}) MHz.*/\2\3/p' | tail -n 1
}

cmd_run() {
	local ver=$1 rc khz
	shift
	[ -e "$KDIR/$ver/boot/vmlinuz-$ver" ] || die "kernel $ver not fetched (run: tools/kernels.sh fetch)"
	out=$(mktemp -d "${TMPDIR:-/tmp}/zctrace-vm.XXXXXX")
	trap 'rm -rf "$out"' EXIT
	# the command's status comes back through the shared directory, not the console
	cat >"$out/guest.sh" <<-EOF
	#!/bin/sh
	cd '$ROOT' || exit 99
	mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	export ZCTRACE_KERNEL_UNDER_TEST='$ver'
	# the file workloads' files (in /var/tmp) on ext4, as on the host: the guest's /var is an overlay
	if modprobe loop 2>/dev/null; truncate -s 1G /tmp/zctrace-ext4.img && mkfs.ext4 -q -F /tmp/zctrace-ext4.img &&
		mount -o loop /tmp/zctrace-ext4.img /var/tmp; then
		chmod 1777 /var/tmp
	else
		echo "kernels: no ext4 scratch file system in the guest; files go to the overlay" >&2
	fi
	$*
	echo \$? > '$out/status'
	EOF
	chmod +x "$out/guest.sh"
	# /dev/kvm here may be a PVM host that cannot run stock kernels: TCG always works
	# one host thread per guest (thread=single): multi-threaded TCG crashed 6.12 in __schedule,
	# inside code the kernel had just patched; make test-kernels runs guests side by side instead
	# a guest that hangs (a stalled CPU under emulation) is stopped, and its console shown
	# ZCTRACE_VM_NET=loop: two NIC pairs, each on a QEMU hub of its own (tools/nic-pair.sh sets
	# them up inside): virtio-net (virtme-ng's loop, hub 0) and Intel e1000e (hub 1)
	# the guest's TSC rate is the host's (tsc_early_khz), not measured in the guest (host_tsc_khz)
	# QEMU's CPU less ERMS and FSRM: the kernel then copies and clears pages with rep movsq and
	# rep stosq, which TCG runs 8 bytes a step, not rep movsb's one, and glibc with vector loops;
	# less 5-level paging, whose page walks TCG emulates too. A CPU without ERMS is a real one's too (AMD's Zen 1 and 2): glibc's memmove then jumps
	# into another routine's loops.
	local qopts="-accel tcg,thread=single -cpu max,erms=off,fsrm=off,la57=off"
	[ "${ZCTRACE_VM_NET:-}" = loop ] && qopts="$qopts -netdev hubport,id=sg0,hubid=1 -device e1000e,netdev=sg0 \
-netdev hubport,id=sg1,hubid=1 -device e1000e,netdev=sg1"
	khz=$(host_tsc_khz)
	PATH="$KDIR/venv/bin:$PATH" timeout --kill-after=30 "${ZCTRACE_VM_TIMEOUT:-2700}" vng --disable-kvm -v -r "$KDIR/$ver/boot/vmlinuz-$ver" --memory 4G --cpus 2 \
		${ZCTRACE_VM_NET:+--network "$ZCTRACE_VM_NET" --no-dhcp} \
		--qemu-opts="$qopts" --append "tsc=reliable${khz:+ tsc_early_khz=$khz}" --rwdir "$out" --exec "$out/guest.sh" >"$out/console" 2>&1 || true
	# the guest's console: keep what the command printed, drop the kernel's boot messages
	sed -n -e 's/\r$//' -e '/virtme-ng-init: starting script/,$p' "$out/console" | sed -e 1d -e '/^\[ *[0-9]*\.[0-9]*\] /d'
	if [ ! -s "$out/status" ]; then
		echo "kernels: $ver did not run the command to its end (a guest is stopped after ${ZCTRACE_VM_TIMEOUT:-2700} s); the console:" >&2
		if grep -q -E '(BUG|Oops|panic|WARNING):' "$out/console"; then
			sed -n -E '/(BUG|Oops|panic|WARNING):/,$p' "$out/console" | head -n 60 >&2
		else
			tail -n 30 "$out/console" >&2
		fi
		return 1
	fi
	rc=$(cat "$out/status")
	return "$rc"
}

# The part of tests/kernel-suite.sh kernel VERSION runs: all of it on a stock kernel (""), what
# preemption changes on a PREEMPT_RT build (rt), the one-line refusal on 5.10 (old).
suite_part() {
	case $1 in *-rt-*) echo rt ;; 5.10.*) echo old ;; esac
}

# One guest of make test-kernels: "VERSION PART [K/N]", PART the part of tests/kernel-suite.sh it
# runs (suite: all of it, on a stock kernel; rt; old), K/N the slice of it (a suite shared by N
# guests), or nic, the device path (tests/device-suite.sh, two NIC pairs on QEMU hubs), into
# results/VERSION.log (a slice: VERSION-sliceK.log; nic: VERSION-nic.log), with the seconds it took
# in results/VERSION[-sliceK|-nic].time.
run_guest() {
	local ver=$1 part=$2 slice=${3:-} log start=$SECONDS rc=0
	if [ "$part" = nic ]; then
		log=$KDIR/results/$ver-nic
		echo "kernels: $(date +%T) booting $ver with two NIC pairs (virtio-net, e1000e) for the device path (QEMU TCG)"
		ZCTRACE_VM_NET=loop cmd_run "$ver" tests/device-suite.sh >"$log.log" 2>&1 || rc=$?
	else
		log=$KDIR/results/$ver${slice:+-slice${slice%/*}}
		if [ "$part" = suite ]; then
			echo "kernels: $(date +%T) booting $ver to run the suite${slice:+ (slice $slice)} (QEMU TCG)"
			part=stock
		else
			echo "kernels: $(date +%T) booting $ver to run the suite (its $part part) (QEMU TCG)"
		fi
		cmd_run "$ver" tests/kernel-suite.sh $part $slice >"$log.log" 2>&1 || rc=$?
	fi
	echo $((SECONDS - start)) >"$log.time"
	return $rc
}

# What one guest did not pass, from its log; 0 if all passed.
guest_report() {
	local ver=$1 part=$2 slice=${3:-} log title
	case $part in
	nic) log=$KDIR/results/$ver-nic title="$ver, two NIC pairs" ;;
	suite) log=$KDIR/results/$ver${slice:+-slice${slice%/*}} title=$ver${slice:+ (slice $slice)} ;;
	*) log=$KDIR/results/$ver title="$ver (its $part part)" ;;
	esac
	echo "==== $title: $(cat "$log.time" 2>/dev/null || echo '?') s"
	grep -E '^(FAIL|SKIP) |^[0-9]+ passed|^nic-pair: |^kernels: ' "$log.log" || true
	grep -A12 -E '^FAIL ' "$log.log" | head -n 60 || true
	grep -q -E '^[0-9]+ passed, 0 failed' "$log.log" || return 1
	[ "$part" != nic ] || grep -q -E '^[0-9]+ passed, 0 failed, 0 skipped' "$log.log"
}

# How many guests make test-kernels runs at once: three for every two host cores, as far as the
# memory available holds 4.5 GiB for each. A guest is one host thread (TCG), but its core is often
# idle: the guest's timers, its tests' sleeps, the 9p root's round trips (served by a thread of
# QEMU's own), and on a PREEMPT_RT build the grace periods its attaches and detaches wait for. A
# third guest beside two fills that time. A fourth does not: four at once, half of 6.1's suite
# took 20-21 minutes, where three at once ran all of it in 23.
default_jobs() {
	local avail jobs=$((($(nproc) * 3 + 1) / 2))
	avail=$(awk '/^MemAvailable:/ { print int($2 / (4.5 * 1024 * 1024)) }' /proc/meminfo)
	[ -n "$avail" ] && [ "$avail" -lt "$jobs" ] && jobs=$avail
	echo $((jobs > 0 ? jobs : 1))
}

# Boots every fetched kernel to run its part of the suite, and each stock kernel once more for the
# device path, then prints what did not pass and one table: site by kernel and method, and each
# kernel's tests passed and failed. The guests, longest first, run $ZCTRACE_KERNEL_JOBS at a time,
# the next one booted as soon as one ends (default_jobs()).
cmd_test() {
	local ver rc=0 stock=() more=() guests=() g running=0 max=${ZCTRACE_KERNEL_JOBS:-$(default_jobs)}
	[[ $max =~ ^[1-9][0-9]*$ ]] || die "ZCTRACE_KERNEL_JOBS must be a number of guests, not '$max'"
	cmd_fetch
	mkdir -p "$KDIR/results"
	rm -f "$KDIR/results/"*.log "$KDIR/results/"*.time
	# this machine's own kernel, through the same script's table part
	"$ROOT/tests/kernel-suite.sh" table >"$KDIR/results/host.log"
	while read -r ver; do
		if [ -z "$(suite_part "$ver")" ]; then stock+=("$ver"); else more+=("$ver"); fi
	done <"$KDIR/versions"
	# the long ones first, so that the last guests to start are the short ones: the RT parts, each
	# stock kernel's suite in two slices, 5.10's part, then the device path (three at once under
	# TCG, about 18 minutes, 9-13, 11 and 4-5). The stock suites, the longest, are shared by two guests each
	# so that no one guest holds the end (most of a guest's time is the fixed cost of each zctrace
	# run, BPF load, verification, attach and detach, 10-20 times slower under TCG than here, so
	# slices of as many tests take about as long).
	for ver in "${more[@]}"; do [ "$(suite_part "$ver")" = rt ] && guests+=("$ver rt"); done
	for ver in "${stock[@]}"; do guests+=("$ver suite 1/2" "$ver suite 2/2"); done
	for ver in "${more[@]}"; do [ "$(suite_part "$ver")" = old ] && guests+=("$ver old"); done
	for ver in "${stock[@]}"; do guests+=("$ver nic"); done
	for g in "${guests[@]}"; do
		if [ "$running" -ge "$max" ]; then
			wait -n || true
			running=$((running - 1))
		fi
		run_guest $g &
		running=$((running + 1))
	done
	wait || true
	for g in "${guests[@]}"; do
		guest_report $g || rc=1
	done
	python3 "$ROOT/tools/kernel-table.py" "$KDIR/results" host "${stock[@]}" "${more[@]}" || rc=1
	return $rc
}

case "${1:-}" in
fetch) cmd_fetch ;;
list) [ -e "$KDIR/versions" ] || die "no kernels fetched (run: tools/kernels.sh fetch)"; cat "$KDIR/versions" ;;
run) [ $# -ge 3 ] || die "usage: kernels.sh run VERSION CMD..."; shift; cmd_run "$@" ;;
test) cmd_test ;;
*) die "usage: kernels.sh fetch | list | run VERSION CMD... | test" ;;
esac

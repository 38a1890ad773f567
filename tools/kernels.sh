#!/usr/bin/env bash
# Debian's stock kernels under QEMU (TCG) over this machine's root file system, with virtme-ng:
#   kernels.sh fetch              the newest 6.1 and 6.12 images the package index offers
#   kernels.sh list               their versions, one a line (after fetch)
#   kernels.sh run VERSION CMD    boot VERSION, run CMD as root in the project directory, exit with CMD's status
# The kernels, their modules and virtme-ng live in $ZCTRACE_KERNELS (default .kernels/ here);
# the host's own apt configuration and bootloader are never touched.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KDIR=${ZCTRACE_KERNELS:-$ROOT/.kernels}
VNG_VERSION=1.42
# the package name patterns of the kernels users run: Debian 12's 6.1 and the 6.12 LTS
PATTERNS=('^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$')

die() { echo "kernels: $*" >&2; exit 1; }

newest() {
	apt-cache search --names-only "$1" | cut -d' ' -f1 | sort -V | tail -n 1
}

fetch_one() {
	local pkg=$1 ver
	ver=${pkg#linux-image-}
	ver=${ver%-unsigned}
	if [ ! -e "$KDIR/$ver/boot/vmlinuz-$ver" ]; then
		echo "kernels: fetching $pkg"
		(cd "$KDIR/debs" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
		rm -rf "$KDIR/$ver.tmp"
		dpkg -x "$KDIR"/debs/"$pkg"_*.deb "$KDIR/$ver.tmp"
		rm -f "$KDIR"/debs/"$pkg"_*.deb
		mv "$KDIR/$ver.tmp" "$KDIR/$ver"
	fi
	# virtme-ng builds the guest's initramfs from /lib/modules/VERSION of the host, which never
	# boots these versions: installing their modules there changes nothing the host runs
	if [ ! -e "/lib/modules/$ver/modules.dep" ]; then
		mkdir -p /lib/modules
		rm -rf "/lib/modules/$ver"
		cp -a "$KDIR/$ver/lib/modules/$ver" /lib/modules/
		depmod "$ver"
	fi
	echo "$ver" >>"$KDIR/versions.new"
}

fetch_vng() {
	[ -x "$KDIR/venv/bin/vng" ] && return 0
	python3 -m venv "$KDIR/venv" 2>/dev/null || /usr/bin/python3 -m venv "$KDIR/venv" ||
		die "cannot make a Python venv for virtme-ng (install python3-venv)"
	"$KDIR/venv/bin/pip" install -q "virtme-ng==$VNG_VERSION" || die "cannot install virtme-ng $VNG_VERSION from PyPI"
}

cmd_fetch() {
	local pkg
	mkdir -p "$KDIR/debs"
	[ -n "$(newest "${PATTERNS[0]}")" ] || apt-get update -qq
	rm -f "$KDIR/versions.new"
	for p in "${PATTERNS[@]}"; do
		pkg=$(newest "$p")
		[ -n "$pkg" ] || die "no package matches $p in the package index"
		fetch_one "$pkg"
	done
	mv "$KDIR/versions.new" "$KDIR/versions"
	fetch_vng
}

cmd_run() {
	local ver=$1 rc
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
	$*
	echo \$? > '$out/status'
	EOF
	chmod +x "$out/guest.sh"
	# /dev/kvm here may be a PVM host that cannot run stock kernels: TCG always works
	PATH="$KDIR/venv/bin:$PATH" vng --disable-kvm -v -r "$KDIR/$ver/boot/vmlinuz-$ver" --memory 4G --cpus 2 \
		--rwdir "$out" --exec "$out/guest.sh" >"$out/console" 2>&1 || true
	# the guest's console: keep what the command printed, drop the kernel's boot messages
	sed -n -e 's/\r$//' -e '/virtme-ng-init: starting script/,$p' "$out/console" | sed -e 1d -e '/^\[ *[0-9]*\.[0-9]*\] /d'
	if [ ! -s "$out/status" ]; then
		echo "kernels: $ver did not run the command to its end; the console's last lines:" >&2
		tail -n 30 "$out/console" >&2
		return 1
	fi
	rc=$(cat "$out/status")
	return "$rc"
}

case "${1:-}" in
fetch) cmd_fetch ;;
list) [ -e "$KDIR/versions" ] || die "no kernels fetched (run: tools/kernels.sh fetch)"; cat "$KDIR/versions" ;;
run) [ $# -ge 3 ] || die "usage: kernels.sh run VERSION CMD..."; shift; cmd_run "$@" ;;
*) die "usage: kernels.sh fetch | list | run VERSION CMD..." ;;
esac

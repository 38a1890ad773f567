#!/usr/bin/env bash
# Installs zctrace's build and test dependencies from Debian packages, only those missing.
set -euo pipefail

# package : a file or command whose presence shows the package is there (libclang-rt: the
# sanitizer and libFuzzer runtimes of clang, for make sanitize and make fuzz)
needs=(
	"clang:/usr/bin/clang"
	"libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"
	"llvm:/usr/bin/llvm-objdump"	# llvm-objdump lists the BPF object's programs for zctrace floor
	"libbpf-dev:/usr/include/bpf/libbpf.h"
	"bpftool:/usr/sbin/bpftool"
	"libelf-dev:/usr/include/libelf.h"
	"libdw-dev:/usr/include/elfutils/libdw.h"	# the sampler finds libc's memcpy in its unwind tables
	"zlib1g-dev:/usr/include/zlib.h"
	"systemtap-sdt-dev:/usr/include/x86_64-linux-gnu/sys/sdt.h"
	"libjson-c-dev:/usr/include/json-c/json.h"
	"liburing-dev:/usr/include/liburing.h"	# the uring-* workloads
	"libmicrohttpd-dev:/usr/include/microhttpd.h"	# zctrace export's HTTP server
	"libgnutls28-dev:/usr/include/gnutls/gnutls.h"	# ... its TLS (--web-config)
	"libyaml-dev:/usr/include/yaml.h"	# ... the web-config file
	"libcrypt-dev:/usr/include/crypt.h"	# ... its bcrypt password hashes
	# zctrace export's tests: promtool checks the exposition, a real Prometheus scrapes it, and
	# an independent OpenMetrics parser reads it
	"prometheus:/usr/bin/promtool"
	"python3-prometheus-client:/usr/lib/python3/dist-packages/prometheus_client/openmetrics/parser.py"
	# ... and with TLS: a CA and certificates made by openssl, requests by curl
	"openssl:/usr/bin/openssl"
	"curl:/usr/bin/curl"
	"pkg-config:/usr/bin/pkg-config"
	"make:/usr/bin/make"
	"gcc:/usr/bin/gcc"
	"python3:/usr/bin/python3"
	"python3-matplotlib:/usr/lib/python3/dist-packages/matplotlib/__init__.py"
	"procps:/usr/bin/pgrep"
	"iproute2:/bin/ip"
	"util-linux:/usr/bin/setpriv"
	"bpftrace:/usr/bin/bpftrace"	# make bench: the overhead section compares with it
	"iperf3:/usr/bin/iperf3"	# ... on a real program too
	# make test-kernels: virtme-ng boots Debian's stock kernels under QEMU; it needs these, and a venv
	"qemu-system-x86:/usr/bin/qemu-system-x86_64"
	"busybox-static:/bin/busybox"
	"cpio:/usr/bin/cpio"
	"kmod:/usr/bin/kmod"
	"python3-venv:/usr/share/doc/python3-venv/copyright"
	"e2fsprogs:/sbin/mkfs.ext4"
	# the manual page's test (man --warnings) and make deb-check (dpkg-buildpackage, apt)
	"man-db:/usr/bin/man"
	"groff-base:/usr/bin/groff"
	"build-essential:/usr/share/build-essential/list"
	"dpkg-dev:/usr/bin/dpkg-buildpackage"
	"debhelper:/usr/bin/dh"
	"fakeroot:/usr/bin/fakeroot-sysv"
)

missing=()
for n in "${needs[@]}"; do
	pkg=${n%%:*}
	path=${n#*:}
	# sys/sdt.h lives in an arch directory on some layouts and in /usr/include on others
	if [ "$pkg" = systemtap-sdt-dev ] && [ -e /usr/include/sys/sdt.h ]; then
		continue
	fi
	# compgen: the path may hold a glob (clang's runtime directory carries its full version)
	compgen -G "$path" >/dev/null || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

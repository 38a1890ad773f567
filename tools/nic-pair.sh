#!/bin/sh
# Inside a QEMU guest booted with NIC pairs (tools/kernels.sh with ZCTRACE_VM_NET=loop), each pair
# joined on a QEMU hub of its own, no frame leaving QEMU:
#   - two virtio-net NICs with no vnet header: no scatter-gather and no checksum offload on the
#     device. The second goes into network namespace zcnic: 198.18.1.1/24 here, 198.18.1.2/24 there.
#   - two Intel e1000e NICs, whose device model checksums and segments, so the driver offers
#     scatter-gather and TSO. The second goes into zcsg: 198.18.2.1/24 here, 198.18.2.2/24 there.
# Loads the drivers from the unpacked kernel package.
#   nic-pair.sh up      make the pairs and wait until a TCP connect crosses each
#   nic-pair.sh down    remove the namespaces
set -eu
case "${1:-up}" in
down) for ns in zcnic zcsg; do ip netns del "$ns" 2>/dev/null || true; done; exit 0 ;;
up) ;;
*) echo "usage: nic-pair.sh up|down" >&2; exit 2 ;;
esac
kver=$(uname -r)
mods="$(cd "$(dirname "$0")/.." && pwd)/.kernels/$kver/lib/modules/$kver/kernel"
for m in net/core/failover drivers/net/net_failover drivers/net/virtio_net drivers/net/ethernet/intel/e1000e/e1000e; do
	f=$(ls "$mods/$m".ko* 2>/dev/null | head -n 1) || true
	[ -n "$f" ] || continue
	insmod "$f" 2>/dev/null || true
done

# The NICs whose driver is $1, in name order.
nics_of() {
	for n in $(ls /sys/class/net | sort); do
		d=$(readlink "/sys/class/net/$n/device/driver" 2>/dev/null) || continue
		[ "${d##*/}" = "$1" ] && echo "$n"
	done
	return 0
}

# pair NS NET DRIVER: the first two NICs of DRIVER, the second moved into NS, NET.1 and NET.2.
pair() {
	ns=$1 net=$2 drv=$3
	set -- $(nics_of "$drv")
	[ $# -ge 2 ] || { echo "nic-pair: two NICs wanted for $ns, found: $*" >&2; return 1; }
	a=$1 b=$2
	ip netns del "$ns" 2>/dev/null || true
	ip netns add "$ns"
	ip link set "$b" netns "$ns"
	ip addr add "$net.1/24" dev "$a"
	ip link set "$a" up
	ip netns exec "$ns" ip addr add "$net.2/24" dev "$b"
	ip netns exec "$ns" ip link set "$b" up
	ip netns exec "$ns" ip link set lo up
	# reachable once a TCP connect to a closed port there is refused (a reset came back), within 20 s
	if /usr/bin/python3 - "$net.2" <<'PY'
import socket, sys, time
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        socket.create_connection((sys.argv[1], 9), timeout=1).close()
        sys.exit(0)
    except ConnectionRefusedError:
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
PY
	then
		echo "nic-pair: $drv $a (${net}.1) <-> $ns:$b (${net}.2)"
		return 0
	fi
	echo "nic-pair: nothing came back across $a and $b in 20 s" >&2
	return 1
}

pair zcnic 198.18.1 virtio_net
pair zcsg 198.18.2 e1000e

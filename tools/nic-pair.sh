#!/bin/sh
# Inside a QEMU guest booted with two NICs on one hub (tools/kernels.sh with ZCTRACE_VM_NET=loop:
# virtio-net, no vnet header, so no scatter-gather and no checksum offload on the device): loads the
# drivers from the unpacked kernel package, moves the second NIC into network namespace zcnic, and
# gives the two 198.18.1.1/24 (here) and 198.18.1.2/24 (in zcnic). No frame leaves QEMU.
#   nic-pair.sh up      make the pair and wait until a ping crosses it
#   nic-pair.sh down    remove the namespace
set -eu
ns=zcnic
case "${1:-up}" in
down) ip netns del "$ns" 2>/dev/null || true; exit 0 ;;
up) ;;
*) echo "usage: nic-pair.sh up|down" >&2; exit 2 ;;
esac
kver=$(uname -r)
mods="$(cd "$(dirname "$0")/.." && pwd)/.kernels/$kver/lib/modules/$kver/kernel"
for m in net/core/failover drivers/net/net_failover drivers/net/virtio_net; do
	f=$(ls "$mods/$m".ko* 2>/dev/null | head -n 1) || true
	[ -n "$f" ] || continue
	insmod "$f" 2>/dev/null || true
done
# the two NICs the hub joins: every ethernet device but loopback
set -- $(ls /sys/class/net | grep -v '^lo$' | sort)
[ $# -ge 2 ] || { echo "nic-pair: two NICs wanted, found: $*" >&2; exit 1; }
a=$1 b=$2
ip netns del "$ns" 2>/dev/null || true
ip netns add "$ns"
ip link set "$b" netns "$ns"
ip addr add 198.18.1.1/24 dev "$a"
ip link set "$a" up
ip netns exec "$ns" ip addr add 198.18.1.2/24 dev "$b"
ip netns exec "$ns" ip link set "$b" up
ip netns exec "$ns" ip link set lo up
# reachable once a TCP connect to a closed port there is refused (a reset came back), within 20 s
if /usr/bin/python3 - <<'PY'
import socket, sys, time
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        socket.create_connection(("198.18.1.2", 9), timeout=1).close()
        sys.exit(0)
    except ConnectionRefusedError:
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
PY
then
	echo "nic-pair: $a (198.18.1.1) <-> $ns:$b (198.18.1.2)"
	exit 0
fi
echo "nic-pair: nothing came back across $a and $b in 20 s" >&2
exit 1

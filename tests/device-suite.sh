#!/bin/sh
# The device path, run inside a guest that make test-kernels boots with two NIC pairs on QEMU hubs
# (tools/kernels.sh with ZCTRACE_VM_NET=loop): the pairs set up by tools/nic-pair.sh (virtio-net
# without scatter-gather to zcnic's 198.18.1.2, e1000e with it to zcsg's 198.18.2.2), then the tests
# that send across them.
cd "$(dirname "$0")/.." || exit 2
tools/nic-pair.sh up || exit 1
# Interrupts on the last CPU, the tests (and all they trace) on CPU 0: a NIC's softirq then never
# transmits on a CPU in the middle of a kprobe program of the traced tasks, which would make the
# kernel skip the transmit path's kprobe programs (docs/sites-and-kernels.md, the device path).
last=$(($(nproc) - 1))
for f in /proc/irq/default_smp_affinity /proc/irq/*/smp_affinity_list; do
	[ "$f" = /proc/irq/default_smp_affinity ] && { printf '%x\n' $((1 << last)) >"$f" 2>/dev/null || true; continue; }
	echo "$last" >"$f" 2>/dev/null || true
done
echo "device-suite: interrupts steered to CPU $last where the kernel allows, the tests on CPU 0"
ZCTRACE_NIC_PAIR=198.18.1.2 ZCTRACE_NIC_PAIR_SG=198.18.2.2 taskset -c 0 /usr/bin/python3 tests/run.py --part nic
rc=$?
tools/nic-pair.sh down
exit $rc

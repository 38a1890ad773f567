#!/bin/sh
# The device path, run inside a guest that make test-kernels boots with two NIC pairs on QEMU hubs
# (tools/kernels.sh with ZCTRACE_VM_NET=loop): the pairs set up by tools/nic-pair.sh (virtio-net
# without scatter-gather to zcnic's 198.18.1.2, e1000e with it to zcsg's 198.18.2.2), then the tests
# that send across them.
cd "$(dirname "$0")/.." || exit 2
tools/nic-pair.sh up || exit 1
ZCTRACE_NIC_PAIR=198.18.1.2 ZCTRACE_NIC_PAIR_SG=198.18.2.2 /usr/bin/python3 tests/run.py 'nic_'
rc=$?
tools/nic-pair.sh down
exit $rc

#!/bin/sh
# The device path, run inside a guest that make test-kernels boots with two NICs on one QEMU hub
# (tools/kernels.sh with ZCTRACE_VM_NET=loop): the pair set up by tools/nic-pair.sh, then the tests
# that send across it.
cd "$(dirname "$0")/.." || exit 2
tools/nic-pair.sh up || exit 1
ZCTRACE_NIC_PAIR=198.18.1.2 /usr/bin/python3 tests/run.py 'nic_'
rc=$?
tools/nic-pair.sh down
exit $rc

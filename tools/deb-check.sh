#!/usr/bin/env bash
# Builds zctrace's .deb (dpkg-buildpackage -b) from a copy of the tree's tracked files, installs it
# with apt, runs the installed zctrace (probes, one traced workload whose ledger must balance),
# then purges it. The copy, the .deb and every other product of the build live in one temporary
# directory, removed on any exit: nothing is left in the tree or beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'deb-check: %s\n' "$*"; }
fail() { say "$*" >&2; exit 1; }
step_start=$SECONDS
all_start=$SECONDS
lap() { say "$1 ($((SECONDS - step_start)) s)"; step_start=$SECONDS; }

[ "$(id -u)" -eq 0 ] || fail "needs root (apt-get install, BPF)"
# purging at the end must not take away a zctrace someone installed on purpose
if dpkg-query -W -f='${Status}' zctrace 2>/dev/null | grep -q ' installed$'; then
	fail "a zctrace package is installed already; remove it first (apt-get purge zctrace)"
fi
git rev-parse --git-dir >/dev/null 2>&1 || fail "run it from a git checkout (it builds the tracked files)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zctrace-deb.XXXXXX")
installed=
cleanup() {
	if [ -n "$installed" ]; then
		apt-get purge -y -qq zctrace >/dev/null 2>&1 || say "could not purge zctrace" >&2
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# the tracked files as they are in the work tree, edits included; no .output, no .kernels
mkdir "$tmp/zctrace"
git ls-files -z | tar -c --null -T - --ignore-failed-read -f - | tar -x -C "$tmp/zctrace"
say "building in $tmp"
if ! (cd "$tmp/zctrace" && dpkg-buildpackage -b -us -uc -j"$(nproc)") >"$tmp/build.log" 2>&1; then
	tail -n 40 "$tmp/build.log" >&2
	fail "dpkg-buildpackage failed (the last lines above)"
fi
debs=("$tmp"/zctrace_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "dpkg-buildpackage made no single zctrace_*.deb"
deb=${debs[0]}
lap "built $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"

# what the package holds, read from the .deb itself (an image may keep dpkg from unpacking man pages)
contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
for f in ./usr/sbin/zctrace ./usr/bin/zctrace-plot ./usr/libexec/zctrace/tcp-onecopy \
	./usr/share/zctrace/plot ./usr/share/zctrace/findings.py ./usr/share/zctrace/microfigures.py \
	./usr/share/man/man8/zctrace.8.gz \
	./usr/share/bash-completion/completions/zctrace ./lib/systemd/system/zctrace-export.service; do
	grep -qx -- "$f" <<<"$contents" || fail "the package lacks $f"
done

installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >"$tmp/apt.log" 2>&1 ||
	{ cat "$tmp/apt.log" >&2; fail "apt-get install of $(basename "$deb") failed"; }
lap "installed"

zct=/usr/sbin/zctrace
[ -x "$zct" ] || fail "$zct is not installed"
grep -qx 'ExecStart=/usr/sbin/zctrace export --listen 127.0.0.1:9435' /lib/systemd/system/zctrace-export.service ||
	fail "zctrace-export.service does not run /usr/sbin/zctrace export"
# installed, not enabled: no wants link anywhere under /etc/systemd/system
if find /etc/systemd/system -name zctrace-export.service 2>/dev/null | grep -q .; then
	fail "the package enabled zctrace-export.service"
fi

# from / with no hint where the workloads are: the installed layout alone must find them
cd /
env -u ZCTRACE_WORKLOADS "$zct" probes >"$tmp/probes.txt" 2>&1 || { cat "$tmp/probes.txt" >&2; fail "zctrace probes failed"; }
grep -q '^send_copy ' "$tmp/probes.txt" || fail "zctrace probes printed no send_copy row"
ledger=$tmp/ledger.json
if ! env -u ZCTRACE_WORKLOADS "$zct" run --no-hist --json "$ledger" tcp-onecopy --messages 2000 --size 4K \
	>"$tmp/run.txt" 2>&1; then
	tail -n 30 "$tmp/run.txt" >&2
	fail "zctrace run tcp-onecopy failed"
fi
/usr/bin/python3 - "$ledger" <<'EOF' || fail "the installed zctrace's ledger did not balance"
import json, sys
led = json.load(open(sys.argv[1]))
wl, sites = led["workload"], led["sites"]
want = 2000 * 4096
figures = {"workload bytes": wl["bytes"], "bytes received": wl["bytes_received"],
           "send_copy": sites["send_copy"]["bytes"], "recv_copy": sites["recv_copy"]["bytes"]}
failed = [c["name"] for c in led["checks"] if not c["ok"]]
bad = {k: v for k, v in figures.items() if v != want}
if bad or failed or led["unattributed"] != 0 or sites["user_copy"]["bytes"] != 0:
    print(f"deb-check: want {want} bytes: {bad}, failed checks {failed}, "
          f"unattributed {led['unattributed']}", file=sys.stderr)
    sys.exit(1)
print(f"deb-check: ledger balanced: send_copy = recv_copy = workload = {want} bytes, "
      f"{len(led['checks'])} checks held")
EOF
/usr/bin/zctrace-plot --help >/dev/null || fail "zctrace-plot --help failed"
lap "ran probes and tcp-onecopy"
cd - >/dev/null

apt-get purge -y -qq zctrace >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; fail "apt-get purge zctrace failed"; }
installed=
for f in "$zct" /usr/libexec/zctrace /usr/share/zctrace /lib/systemd/system/zctrace-export.service /run/zctrace; do
	[ ! -e "$f" ] || fail "$f is left after the purge"
done
lap "purged"
say "passed in $((SECONDS - all_start)) s"

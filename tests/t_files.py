"""File workloads: exact ledgers, cache state and syscalls per chunk; a file system without write
events, bad options, and checks that must fail when the expectation is wrong.
"""

import os
import re
import subprocess
import tempfile

from harness import case, declare, TIMEOUT, WORKLOADS, ZCTRACE, assert_eq, site_bytes, traced, zctrace
from checks import FILE_SIZE, check_file_ledger


# ---- file workloads: exact ledgers, cache state and syscalls per chunk ----

def make_file_test(workload, cache, size=None, threads=1):
    def t():
        check_file_ledger(workload, cache, size, threads)
    t.__name__ = f"file_{workload}_{cache}" + (f"_{size}" if size else "") + (f"_{threads}thr" if threads > 1 else "")
    return t


# The guest parts that run a file ledger (workload, cache) besides this machine: each kind of
# copy once, cold or warm; the servers' 64 KiB cold reads on a stock kernel alone.
FILE_PARTS = {("file-readwrite", "cold"): ("stock", "rt", "old"), ("file-sendfile", "warm"): ("stock", "rt", "old"),
              ("file-splice", "cold"): ("stock", "rt", "old"), ("file-copyrange", "warm"): ("stock", "old")}
for w in ("file-readwrite", "file-sendfile", "file-splice", "file-copyrange"):
    for cache in ("cold", "warm"):
        declare(make_file_test(w, cache), *FILE_PARTS.get((w, cache), ()))
for args in (("file-readwrite", "warm", "4K"), ("file-readwrite", "cold", "1M"), ("file-sendfile", "warm", "64K"),
             ("file-splice", "cold", "64K"), ("file-copyrange", "warm", "1M")):
    declare(make_file_test(*args))
for w in ("serve-readsend", "serve-sendfile"):
    for size in ("4K", "64K"):
        declare(make_file_test(w, "cold", size, 2 if size == "4K" else 1), *(("stock",) if size == "64K" else ()))
    declare(make_file_test(w, "warm", "64K", 2))


@case()
def file_sites_on_a_filesystem_without_write_events():
    """On tmpfs (mounted here for the test) there is no per-folio write event: write() is counted
    from its returns, exactly, and the ledger says so; a copy_file_range the tracepoint path cannot
    see is reported as not measured (a failed check), never as a clone or as 0 copies."""
    d = tempfile.mkdtemp()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "zctrace-test", d], check=True)
        try:
            p, led = traced("file-readwrite", "--file-size", str(FILE_SIZE), "--dir", d)
            assert p.returncode == 0, p.stdout[-1200:]
            assert_eq("fs", led["workload"]["fs"], "tmpfs")
            assert_eq("file_write_copy", site_bytes(led, "file_write_copy"), FILE_SIZE)
            assert_eq("write bytes counted from returns", led["write_bytes_by_return"], FILE_SIZE)
            assert_eq("file_read_copy", site_bytes(led, "file_read_copy"), FILE_SIZE)
            assert "counted from write()'s return" in p.stdout, p.stdout[-1500:]
            p, led = traced("file-copyrange", "--file-size", str(FILE_SIZE), "--dir", d)
            assert p.returncode == 1, f"exit {p.returncode}"
            assert_eq("unseen bytes", led["file_bytes_unseen"], FILE_SIZE)
            bad = [c for c in led["checks"] if not c["ok"]]
            assert len(bad) == 1 and "not measured" in bad[0]["detail"], bad
            assert "cloned" not in bad[0]["detail"], bad
        finally:
            subprocess.run(["umount", d], check=True)
    finally:
        os.rmdir(d)


@case()
def file_workload_bad_options():
    """A TCP option given to a file workload, or a bad cache mode, is refused by name before the run
    (a usage error, exit 2); a directory that cannot hold the files fails the run."""
    for args, msg in ((["--messages", "5"], "--messages is not an option"),
                      (["--cache", "lukewarm"], "invalid --cache 'lukewarm'"),
                      (["--file-size", "12Q"], "invalid --file-size '12Q'")):
        p = zctrace("run", "--no-hist", "file-readwrite", *args)
        assert p.returncode == 2, f"{args}: exit {p.returncode}"
        assert msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, f"{args}: {p.stderr!r}"
        assert p.stdout == "", p.stdout[-300:]
    p = zctrace("run", "--no-hist", "file-readwrite", "--dir", "/nonexistent-dir")
    assert p.returncode == 1, f"exit {p.returncode}"
    assert "cannot make the files in /nonexistent-dir" in p.stderr, p.stderr
    assert "[FAIL] workload succeeded" in p.stdout, p.stdout[-300:]


@case()
def check_can_fail():
    """The checks are real: tcp-onecopy's expectation (user_copy == 0) applied to the twocopy
    binary, which does copy in user space, must fail. ZCTRACE_WORKLOADS swaps the binary in."""
    env = dict(os.environ, ZCTRACE_WORKLOADS=tempfile.mkdtemp())
    try:
        os.symlink(os.path.join(WORKLOADS, "tcp-twocopy"), os.path.join(env["ZCTRACE_WORKLOADS"], "tcp-onecopy"))
        p = subprocess.run([ZCTRACE, "run", "--no-hist", "tcp-onecopy", "--size", "4K", "--messages", "200"],
                           capture_output=True, text=True, env=env, timeout=TIMEOUT)
    finally:
        link = os.path.join(env["ZCTRACE_WORKLOADS"], "tcp-onecopy")
        if os.path.lexists(link):
            os.unlink(link)
        os.rmdir(env["ZCTRACE_WORKLOADS"])
    assert p.returncode == 1, f"exit {p.returncode}"
    assert re.search(r"\[FAIL\] user_copy bytes == 0: kernel 819200", p.stdout), p.stdout[-800:]

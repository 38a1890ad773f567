#!/usr/bin/python3
"""README.md's sample outputs, from real runs of the commands they show (make samples, as root).

Each sample is a block of README.md between "BEGIN GENERATED sample-NAME" and "END GENERATED
sample-NAME" (tools/docblocks.py): the command as typed, then what it printed. A sample's setup
(a file to read, a process to attach to, traffic for top) is made before the command and removed
after it. tests/run.py runs them again and holds the checked-in samples to the same shape."""
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import docblocks  # noqa: E402

README = os.path.join(ROOT, "README.md")
FILE = "/var/tmp/f"	# the command's and the process's input, as the samples name it
TIMEOUT = 600


def make_file():
    with open(FILE, "wb") as f:
        f.write(os.urandom(1000000))


def drop_files():
    for p in (FILE, FILE + ".gz"):
        if os.path.exists(p):
            os.unlink(p)


def run(zctrace, args):
    """zctrace's output as a terminal shows it: stderr's lines first (stdout to a pipe is flushed
    at the end), then stdout; no blank line first."""
    p = subprocess.run([zctrace, *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
    if p.returncode != 0:
        # a run whose checks failed says which on stdout
        failed = [l.strip() for l in p.stdout.splitlines() if "[FAIL]" in l or l.startswith("checks:")]
        raise RuntimeError(f"zctrace {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-500:]} "
                           f"{' '.join(failed)[-800:]}")
    return (p.stderr + p.stdout).lstrip("\n")


def sample_workload(zctrace):
    args = ["run", "-H", "tcp-zerocopy", "--size", "64K", "--threads", "2", "--messages", "2000"]
    return "$ ./zctrace " + " ".join(args), run(zctrace, args)


def sample_command(zctrace):
    cmd = f"cat {FILE} | gzip -1 > {FILE}.gz"
    make_file()
    try:
        return f"$ ./zctrace run -H -- sh -c '{cmd}'", run(zctrace, ["run", "-H", "--", "sh", "-c", cmd])
    finally:
        drop_files()


LOOP = "import time\nwhile True:\n    open(%r, 'rb').read()\n    time.sleep(0.1)\n" % FILE


def sample_process(zctrace):
    make_file()
    loop = subprocess.Popen(["/usr/bin/python3", "-c", LOOP])
    try:
        time.sleep(0.5)
        args = ["run", "-H", "-p", str(loop.pid), "-d", "2"]
        out = run(zctrace, args)
        return f"$ ./zctrace {' '.join(args)}      # a Python loop reading a 1 MB file every 0.1 s", out
    finally:
        loop.kill()
        loop.wait()
        drop_files()


def sample_top(zctrace):
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", "5299"], **quiet)
    client = None
    try:
        time.sleep(0.5)
        client = subprocess.Popen(["iperf3", "-c", "127.0.0.1", "-p", "5299", "-t", "6"], **quiet)
        time.sleep(1)
        args = ["top", "-C", "-n", "1", "-i", "2"]
        return "$ ./zctrace " + " ".join(args), run(zctrace, args)
    finally:
        for p in (client, server):
            if p:
                p.kill()
                p.wait()


SAMPLES = {"sample-workload": sample_workload, "sample-command": sample_command,
           "sample-process": sample_process, "sample-top": sample_top}


def text(name, zctrace):
    """Sample @name as its block holds it, fences included, markers not."""
    shown, out = SAMPLES[name](zctrace)
    return "```\n" + shown + "\n" + out.rstrip("\n") + "\n```\n"


def block(name, body):
    return (f"<!-- BEGIN GENERATED {name} (made by make samples: tools/samples.py) -->\n" + body +
            f"<!-- END GENERATED {name} -->\n")


# A row of "CPU time by site" without ns per byte: a site that copied no bytes, there because the
# sampler happened to land in it (a command's own memcpy, user_copy), or not.
SAMPLED_ONLY = re.compile(r"^  \w+ +\d+ +[\d.]+ +[\d.]+% +- ")


def shape(body):
    """A sample's lines as a fresh run must repeat them: each line's indent and first word, digits
    masked; lines that start with a figure (a time, a pid, an amount) say nothing of the shape, nor
    do the rows that only a sample's luck puts in the CPU time table."""
    out = []
    for line in body.splitlines():
        words = line.split()
        if not words or words[0][0].isdigit() or SAMPLED_ONLY.match(line):
            continue
        out.append(" " * (len(line) - len(line.lstrip())) + re.sub(r"\d+", "#", words[0]))
    return out


def checked_in(path=README):
    """README.md's samples: {name: body, fences included, markers not}."""
    have, _, _ = docblocks.parse(open(path).read())
    return {n: "".join(b.splitlines(keepends=True)[1:-1]) for n, b in have.items() if n in SAMPLES}


def main(argv):
    zctrace = os.path.join(ROOT, "zctrace")
    names = argv or list(SAMPLES)
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        print(f"samples.py: unknown sample {unknown[0]} ({', '.join(SAMPLES)})", file=sys.stderr)
        return 2
    try:
        generated = "".join(block(n, text(n, zctrace)) for n in names)
        differ = docblocks.splice([README], generated)
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as e:
        print(f"samples.py: {e}", file=sys.stderr)
        return 1
    print(f"samples.py: {len(names)} samples run, {len(differ)} changed in README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Installed as the tools beside it are: make install, the manual page, bash completion, the generated
docs, the README's samples, the Debian package's build dependencies.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import case, ROOT, TIMEOUT, ZCTRACE, assert_eq, scratch, site_bytes, zctrace
from checks import tcp_sweep_refused_here


# ---- installed as the tools beside it are: make install, the manual page, bash completion ----

MAN_PAGE = os.path.join(ROOT, "docs", "zctrace.8")
COMPLETION = os.path.join(ROOT, "tools", "zctrace.bash-completion")


def help_options(text):
    """The long options an option list prints: argp's lines ("  -x, --name=ARG", "      --name")
    and the workloads' and probes' ("  --name ARG")."""
    return set(re.findall(r"^  (?:-[^-], |    )?(--[a-z][a-z0-9-]*)", text, re.M))


def workload_names():
    p = zctrace("list", "--names")
    assert p.returncode == 0 and p.stdout.strip(), (p.returncode, p.stderr)
    return p.stdout.split()


@case(root=False)
def man_page_covers_the_cli():
    """docs/zctrace.8 cannot fall behind the CLI: every command 'zctrace --help' names, every long
    option 'zctrace CMD --help' and 'zctrace run WORKLOAD --help' print, and every workload of
    'zctrace list --names' is in it; man renders it without a warning."""
    src = open(MAN_PAGE).read()
    # the text as read: troff's escaped hyphens and font changes undone
    text = re.sub(r"\\f[BIRP]|\\&|\\c", "", src.replace("\\-", "-"))
    missing = []

    def need(word, where):
        if not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
            missing.append(f"{word} ({where})")

    top = zctrace("--help")
    assert top.returncode == 0, top.stderr
    commands = sorted(set(re.findall(r"^(?:usage:)? +zctrace ([a-z]+)\b", top.stdout, re.M)))
    assert {"run", "sweep", "probes", "list"} <= set(commands), commands
    for cmd in commands:
        if not re.search(rf'^\.SS "?{cmd}\b', src, re.M):
            missing.append(f"a section for {cmd}")
        p = zctrace(cmd, "--help")
        assert p.returncode == 0, f"zctrace {cmd} --help: exit {p.returncode}: {p.stderr.strip()}"
        for opt in help_options(p.stdout):
            need(opt, f"zctrace {cmd} --help")
    names = workload_names()
    for name in names:
        need(name, "zctrace list --names")
        p = zctrace("run", name, "--help")
        assert p.returncode == 0, f"zctrace run {name} --help: exit {p.returncode}: {p.stderr.strip()}"
        for opt in help_options(p.stdout):
            need(opt, f"zctrace run {name} --help")
    assert not missing, f"docs/zctrace.8 lacks {', '.join(sorted(set(missing)))}"
    p = subprocess.run(["man", "--warnings", "-l", MAN_PAGE], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MANWIDTH="80"))
    assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr)
    assert "zctrace run" in p.stdout and "EXIT STATUS" in p.stdout, p.stdout[:500]


def installed_files(workloads, prefix="usr/local", unitdir="usr/local/lib/systemd/system"):
    return sorted([f"{prefix}/sbin/zctrace", f"{prefix}/bin/zctrace-plot", f"{prefix}/share/zctrace/plot",
                   f"{prefix}/share/zctrace/findings.py", f"{prefix}/share/zctrace/microfigures.py",
                   f"{prefix}/share/man/man8/zctrace.8",
                   f"{prefix}/share/bash-completion/completions/zctrace", f"{unitdir}/zctrace-export.service"]
                  + [f"{prefix}/libexec/zctrace/{w}" for w in workloads])


def tree_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def tools_module(name):
    """A module of tools/ (docblocks, samples), imported as the Makefile runs it."""
    if os.path.join(ROOT, "tools") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "tools"))
    return __import__(name)


@case(root=False)
def generated_docs_match_the_table():
    """The manual page's workload and option blocks and the workload tables of docs/ are what
    'zctrace list --format man|markdown' prints now: a change to the workload table or to the
    options' lines that was not rebuilt fails here, and so would a block edited by hand; a block
    the generator prints that no file holds is an error; a bad --format is one line and exit 2."""
    docblocks = tools_module("docblocks")
    files = {"man": [MAN_PAGE], "markdown": [os.path.join(ROOT, "docs", "workloads.md"),
                                             os.path.join(ROOT, "docs", "microbenchmarks.md")]}
    for fmt, paths in files.items():
        p = zctrace("list", "--format", fmt)
        assert p.returncode == 0 and "BEGIN GENERATED" in p.stdout, (fmt, p.returncode, p.stderr)
        differ = docblocks.splice(paths, p.stdout, check=True)
        assert not differ, f"out of date (run make docs): {differ}"
        with tempfile.TemporaryDirectory() as d:
            copies = [shutil.copy(path, d) for path in paths]
            text = open(copies[0]).read()
            name, block = next(iter(docblocks.parse(text)[0].items()))
            lines = block.splitlines(keepends=True)
            edited = lines[0] + lines[1].rstrip("\n") + " (edited)\n" + "".join(lines[2:])
            open(copies[0], "w").write(text.replace(block, edited, 1))
            differ = docblocks.splice(copies, p.stdout, check=True)
            assert differ == [f"{copies[0]}: {name}"], (fmt, differ)
            try:
                docblocks.splice(copies[1:] or [os.path.join(ROOT, "README.md")], p.stdout, check=True)
                assert False, f"{fmt}: a block that no file holds was not refused"
            except ValueError as e:
                assert "no file holds" in str(e), e
    assert zctrace("list", "--format", "text").stdout == zctrace("list").stdout
    for args, what in ((["--format", "roff"], "unknown --format 'roff'"), (["--format"], "--format needs a value"),
                       (["--format=man", "x"], "unexpected argument 'x'")):
        p = zctrace("list", *args)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and what in p.stderr, \
            (args, p.returncode, p.stderr)


@case(root=False)
def sample_shape_leaves_out_rows_of_chance():
    """A sample's shape holds every line but those that start with a figure and the CPU time rows
    of sites that copied nothing (shown only where a sample happened to land): README.md's own
    command sample with such a row added has the same shape; with a row of a site that copied (a
    figure per byte) it has another."""
    samples = tools_module("samples")
    body = samples.checked_in()["sample-command"]
    header = next(l for l in body.splitlines(keepends=True) if l.startswith("  SITE/KIND "))
    chance = header + "  user_copy               1       1.0    3.4%   -                             -\n"
    copied = header + "  user_copy               1       1.0    3.4%   2.006 (0.550-7.315)         0.5\n"
    assert_eq("shape with a sampled-only row", samples.shape(body.replace(header, chance)), samples.shape(body))
    assert samples.shape(body.replace(header, copied)) != samples.shape(body)


@case(alone=True)
def readme_samples_have_the_shape_of_a_fresh_run():
    """README.md's sample outputs (make samples) have the shape of a run of their commands now:
    the same lines, each with its indent and first word (digits masked), lines that start with a
    figure left out; the numbers are free to differ. A line that says this machine's verifier
    refused the census's TCP sweep (tcp_sweep_refused_here()) is not held against it."""
    samples = tools_module("samples")
    have = samples.checked_in()
    assert set(have) == set(samples.SAMPLES), sorted(have)
    for name in samples.SAMPLES:
        for attempt in range(3):
            try:
                fresh = samples.text(name, ZCTRACE)
                break
            except RuntimeError as e:
                # a zerocopy run's rare loss of an skb's sender on the tracepoint path, which only
                # its deferred_copy checks fail (ownerless_zc_skbs()): once more, as traced() does
                if attempt == 2 or "[FAIL] deferred_copy" not in str(e) or re.search(r"\[FAIL\] (?!deferred_copy)", str(e)):
                    raise
                print(f"  ({name}: its deferred_copy checks failed; once more)", flush=True)
        # this machine's verifier may refuse the census's TCP sweep, which its not-measured lines then name
        fresh = "".join(l for l in fresh.splitlines(keepends=True) if not tcp_sweep_refused_here(l))
        want, got = samples.shape(have[name]), samples.shape(fresh)
        assert want == got, (name, [l for l in want if l not in got], [l for l in got if l not in want],
                             fresh[-2500:])


@case()
def make_install_runs_from_destdir():
    """make install DESTDIR=... lays out zctrace, its workloads, the manual page, completion, the plot
    tool and the exporter's unit, and nothing else; the installed zctrace finds its workloads
    there (no ZCTRACE_WORKLOADS, the tree out of sight) and a traced run balances; zctrace-plot runs
    from there; make uninstall takes every file away."""
    dest = tempfile.mkdtemp(prefix="install.", dir=scratch)
    p = subprocess.run(["make", "-s", "install", f"DESTDIR={dest}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout[-1000:] + p.stderr[-1000:]
    names = workload_names()
    assert_eq("installed files", tree_files(dest), installed_files(names))
    prefix = os.path.join(dest, "usr", "local")
    zct = os.path.join(prefix, "sbin", "zctrace")
    env = {k: v for k, v in os.environ.items() if k != "ZCTRACE_WORKLOADS"}
    run = lambda *a, **kw: subprocess.run([zct, *a], capture_output=True, text=True, cwd="/",  # noqa: E731
                                          env=env, timeout=TIMEOUT, **kw)
    p = run("probes")
    assert p.returncode == 0 and re.search(r"^send_copy\s+\S+", p.stdout, re.M), (p.returncode, p.stderr)
    p = run("list", "--names")
    assert p.returncode == 0 and p.stdout.split() == names, (p.returncode, p.stdout, p.stderr)
    p = run("list")
    assert p.returncode == 0 and "tcp-onecopy" in p.stdout, p.stderr
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = run("run", "--no-hist", "--passes", "traced", "--json", f.name, "tcp-onecopy", "--size", "4K",
                "--messages", "500")
        assert p.returncode == 0, (p.returncode, p.stderr[-500:], p.stdout[-800:])
        led = json.load(open(f.name))
    assert_eq("send_copy (installed)", site_bytes(led, "send_copy"), led["workload"]["bytes"])
    assert_eq("bytes sent (installed)", led["workload"]["bytes"], 500 * 4096)
    unit = open(os.path.join(prefix, "lib", "systemd", "system", "zctrace-export.service")).read()
    assert "ExecStart=/usr/local/sbin/zctrace export --listen 127.0.0.1:9435\n" in unit, unit
    p = subprocess.run([os.path.join(prefix, "bin", "zctrace-plot"), "--help"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and "SWEEP_FILE" in p.stdout, (p.returncode, p.stderr)
    assert not os.path.exists(os.path.join(prefix, "share", "zctrace", "__pycache__")), "bytecode left installed"
    p = subprocess.run(["make", "-s", "uninstall", f"DESTDIR={dest}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and tree_files(dest) == [], (p.stderr, tree_files(dest))


@case(root=False)
def deb_build_depends_match_install_deps():
    """debian/control's Build-Depends and tools/install-deps.sh agree: every library the build
    links or includes (a -dev package there), clang, bpftool and pkg-config is a build dependency,
    and every build dependency is one install-deps installs (CI builds the .deb with what it put)."""
    deps = re.findall(r'^\s*"([a-z0-9.+-]+):', open(os.path.join(ROOT, "tools", "install-deps.sh")).read(), re.M)
    control = open(os.path.join(ROOT, "debian", "control")).read()
    field = re.search(r"^Build-Depends:(.*?)^\S", control, re.M | re.S).group(1)
    build_deps = {re.match(r"\s*([a-z0-9.+-]+)", d).group(1) for d in field.split(",") if d.strip()}
    build_deps.discard("debhelper-compat")  # debhelper's own way of naming its version
    # the sanitizer and libFuzzer runtimes serve make sanitize and make fuzz, not the package, and
    # dpkg-dev is what builds it (build-essential)
    wanted = {d for d in deps if d.endswith("-dev") and not d.startswith(("libclang-rt", "dpkg-dev"))}
    wanted |= {"clang", "bpftool", "pkg-config"}
    assert wanted <= build_deps, f"debian/control's Build-Depends lack {sorted(wanted - build_deps)}"
    assert build_deps <= set(deps), f"tools/install-deps.sh does not install {sorted(build_deps - set(deps))}"


def complete(*words):
    """What the completion script offers for the command line @words (the last one being typed)."""
    script = (f"source {COMPLETION}\n"
              "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1))\n"
              "_zctrace\n"
              "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "-c", script, "bash", ZCTRACE, *words], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", (words, p.returncode, p.stderr)
    return p.stdout.split()


@case(root=False)
def bash_completion_offers_workloads_and_options():
    """The completion script parses, and a real call of its function offers the commands, the
    workload names, run's and a workload's options and an option's values, all asked of zctrace."""
    p = subprocess.run(["bash", "-n", COMPLETION], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert {"run", "sweep", "probes", "list"} <= set(complete("")), complete("")
    assert complete("run", "tcp-one") == ["tcp-onecopy"], complete("run", "tcp-one")
    assert set(complete("run", "")) == set(workload_names()), complete("run", "")
    assert "--json=" in complete("run", "--j"), complete("run", "--j")
    assert "--prog-stats" in complete("run", "--"), complete("run", "--")
    assert "--messages" in complete("run", "-j", "x.json", "tcp-onecopy", "--size", "4K", "--"), "workload options"
    assert complete("run", "--passes", "") == ["both", "traced"], complete("run", "--passes", "")
    assert complete("probes", "--method", "=", "tr") == ["tracepoint"], complete("probes", "--method", "=", "tr")
    assert complete("sweep", "tcp-twocopy,udp-z") == ["tcp-twocopy,udp-zerocopy"], complete("sweep", "tcp-twocopy,udp-z")
    assert complete("list", "--") == ["--names"], complete("list", "--")
    assert "--max-keys=" in complete("top", "--"), complete("top", "--")
    assert complete("top", "-j", "") == [], "top's -j takes no argument"

"""The source tree's shape: each BPF part compiles alone, user/'s folders are layers that include only
downward, and every test is declared where it is written.
"""

import ast
import os
import re
import shutil
import subprocess

from harness import case, ROOT, Skip


@case(root=False)
def bpf_files_compile_alone():
    """Each BPF part and header includes what it uses: make bpf-alone compiles every one alone."""
    if not shutil.which("make") or not shutil.which("clang"):
        raise Skip("no make or clang here")
    p = subprocess.run(["make", "-s", "-j2", "bpf-alone"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    parts = [f for f in os.listdir(os.path.join(ROOT, "bpf")) if f.endswith((".bpf.c", ".bpf.h"))]
    done = os.listdir(os.path.join(ROOT, ".output", "alone"))
    missing = [f"{f}{c}.ok" for f in parts if f != "zctrace.bpf.c" for c in ("", ".compat")
               if f"{f}{c}.ok" not in done]
    assert not missing, f"not checked alone: {missing}"


USER_LAYERS = ["os", "trace", "ledger", "report", "cmd"]


@case(root=False)
def layers_include_downward():
    """user/ holds a folder per layer (docs/ARCHITECTURE.md): each file includes headers of its
    own folder or of a lower one, by the folder's name, never of a higher one; every folder is
    a layer; the contract (contract/: the workloads' report and options) is layer 0 of both the CLI and
    the workloads, included by its path, and includes neither; the workloads include nothing of the CLI."""
    user = os.path.join(ROOT, "user")
    assert sorted(os.listdir(user)) == sorted(USER_LAYERS), os.listdir(user)
    seen, up = 0, []
    for rank, layer in enumerate(USER_LAYERS):
        for name in sorted(os.listdir(os.path.join(user, layer))):
            text = open(os.path.join(user, layer, name)).read()
            for inc in re.findall(r'^#include "([^"]+)"', text, re.M):
                top = inc.split("/")[0]
                if os.path.isfile(os.path.join(user, layer, inc)):
                    up.append(f"{layer}/{name}: \"{inc}\" (say {layer}/{inc})")
                elif top in USER_LAYERS:
                    seen += 1
                    if USER_LAYERS.index(top) > rank:
                        up.append(f"{layer}/{name} includes {inc}")
    assert seen > 100 and not up, (seen, up)
    # the contract (layer 0 of both sides) includes nothing of either; the workloads nothing of the
    # CLI; the CLI nothing of the workloads but the contract, by its path
    for folder, banned in (("contract", USER_LAYERS + ["workloads"]), ("workloads/lib", USER_LAYERS),
                           ("workloads", USER_LAYERS)):
        path = os.path.join(ROOT, folder)
        for name in sorted(f for f in os.listdir(path) if f.endswith((".c", ".h"))):
            incs = re.findall(r'^#include "([^"]+)"', open(os.path.join(path, name)).read(), re.M)
            assert not [i for i in incs if i.split("/")[0] in banned], (folder, name, incs)
    contract = {f for f in os.listdir(os.path.join(ROOT, "contract")) if f.endswith(".h")}
    for layer in USER_LAYERS:
        for name in sorted(os.listdir(os.path.join(user, layer))):
            for inc in re.findall(r'^#include "([^"]+)"', open(os.path.join(user, layer, name)).read(), re.M):
                assert not inc.startswith("workloads/") and inc not in contract, \
                    f"{layer}/{name} includes {inc}: the CLI reaches the workloads through contract/, by path"


def returns_a_value(fn):
    """Whether function node @fn returns a value anywhere in its own body (not a nested function's)."""
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False


@case(root=False)
def tests_declared_where_written():
    """No test is left out of the suite: every function of a topic module (or checks.py) that takes
    no argument and returns nothing is a test, and is declared one (@case); every test run.py
    finds is declared once, by name; the guest suites select tests by part, naming none."""
    import run  # the suite as run.py finds it
    declared = {t.__name__ for t in run.all_tests()}
    tests_dir = os.path.join(ROOT, "tests")
    undeclared = []
    for f in sorted(os.listdir(tests_dir)):
        if not (f.startswith("t_") and f.endswith(".py")) and f != "checks.py":
            continue
        tree = ast.parse(open(os.path.join(tests_dir, f)).read())
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            a = node.args
            if a.args or a.vararg or a.kwonlyargs or a.kwarg or returns_a_value(node):
                continue
            if not any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "case" for d in node.decorator_list):
                undeclared.append(f"{f}: {node.name}")
            elif node.name not in declared:
                undeclared.append(f"{f}: {node.name} (declared, but run.py does not find it)")
    assert not undeclared, f"tests not declared with @case: {undeclared}"
    for script in ("kernel-suite.sh", "device-suite.sh"):
        text = open(os.path.join(tests_dir, script)).read()
        named = [n for n in declared if re.search(rf"\b{re.escape(n)}\b", text)]
        assert not named, f"{script} names tests {named}: a test's parts are declared where it is written"


@case(root=False)
def guest_slices_share_each_part():
    """The slices that guests share a part by (run.py --slice K/N) run each of the part's tests once:
    together they are the part, in its order, and no two run the same test."""
    import sys
    run_py = os.path.join(ROOT, "tests", "run.py")

    def listed(*args):
        p = subprocess.run([sys.executable, run_py, "--list", *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()

    for part in ("stock", "rt", "old"):
        whole = listed("--part", part)
        for n in (1, 2, 3):
            slices = [listed("--part", part, "--slice", f"{k}/{n}") for k in range(1, n + 1)]
            joined = sorted((whole.index(t), t) for s in slices for t in s)
            assert [t for _, t in joined] == whole, f"{part} in {n} slices: {[len(s) for s in slices]} of {len(whole)}"
            assert max(map(len, slices)) - min(map(len, slices)) <= 1, f"{part} in {n} slices: {[len(s) for s in slices]}"
    bad = subprocess.run([sys.executable, run_py, "--list", "--slice", "3/2"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--slice" in bad.stderr, (bad.returncode, bad.stderr)

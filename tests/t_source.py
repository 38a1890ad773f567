"""The source tree's shape: each BPF part compiles alone, and user/'s folders are layers that
include only downward.
"""

import os
import re
import shutil
import subprocess

from harness import ROOT, Skip


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


def layers_include_downward():
    """user/ holds a folder per layer (docs/ARCHITECTURE.md): each file includes headers of its
    own folder or of a lower one, by the folder's name, never of a higher one; every folder is
    a layer, and the workloads' library includes nothing of the CLI."""
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
    lib = os.path.join(ROOT, "workloads", "lib")
    for name in sorted(os.listdir(lib)):
        incs = re.findall(r'^#include "([^"]+)"', open(os.path.join(lib, name)).read(), re.M)
        assert not [i for i in incs if i.split("/")[0] in USER_LAYERS], (name, incs)

#!/usr/bin/python3
"""Generated blocks of the manual page and the Markdown docs.

A block is the lines from a troff or HTML comment line that starts "BEGIN GENERATED NAME" to one
that starts "END GENERATED NAME"; the text around it is written by hand. A generator prints blocks
whole, markers included (zctrace list --format man|markdown, tools/samples.py), and

    docblocks.py [--check] FILE... < BLOCKS

puts each block in place of the block of the same name in the FILEs, writing a file only when it
changes; --check writes nothing and exits 1 naming the blocks that differ. A block of the input
that no FILE holds, or that one holds twice, is an error (exit 2)."""
import re
import sys

# a marker opens a troff or HTML comment line
BEGIN = re.compile(r'^(?:\.\\"|<!--) BEGIN GENERATED ([\w-]+)')
END = r'^(?:\.\\"|<!--) END GENERATED {}\b'


def parse(text):
    """The blocks of @text in order: {name: the block's lines, markers included}."""
    blocks, lines, name = {}, text.splitlines(keepends=True), None
    for i, line in enumerate(lines):
        m = BEGIN.search(line)
        if m and name is None:
            name, start = m.group(1), i
        elif name is not None and re.match(END.format(re.escape(name)), line):
            if name in blocks:
                raise ValueError(f"block {name} twice")
            blocks[name] = (start, i + 1)
            name = None
    if name is not None:
        raise ValueError(f"block {name} has no END GENERATED {name}")
    return {n: "".join(lines[a:b]) for n, (a, b) in blocks.items()}, blocks, lines


def splice(files, generated, check=False):
    """Puts the blocks of @generated in @files; the names of the blocks that differed."""
    new, _, _ = parse(generated)
    if not new:
        raise ValueError("no block in the input")
    found, differ, texts = {}, [], {}
    for path in files:
        have, spans, lines = parse(open(path).read())
        for name in have:
            if name in new:
                if name in found:
                    raise ValueError(f"block {name} in both {found[name]} and {path}")
                found[name] = path
        out, pos = [], 0
        for name, (a, b) in sorted(spans.items(), key=lambda kv: kv[1][0]):
            out += lines[pos:a]
            if name in new and new[name] != have[name]:
                differ.append(f"{path}: {name}")
            out.append(new.get(name, have[name]))
            pos = b
        out += lines[pos:]
        texts[path] = "".join(out)
    missing = set(new) - set(found)
    if missing:
        raise ValueError(f"no file holds the block(s) {', '.join(sorted(missing))}")
    if not check:
        for path in {d.split(": ")[0] for d in differ}:
            with open(path, "w") as f:
                f.write(texts[path])
    return differ


def main(argv):
    check = "--check" in argv
    files = [a for a in argv if a != "--check"]
    if not files:
        print("usage: docblocks.py [--check] FILE... < BLOCKS", file=sys.stderr)
        return 2
    try:
        differ = splice(files, sys.stdin.read(), check)
    except (OSError, ValueError) as e:
        print(f"docblocks.py: {e}", file=sys.stderr)
        return 2
    if check and differ:
        print(f"docblocks.py: out of date: {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

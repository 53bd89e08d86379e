#!/usr/bin/python3
"""Regenerates the example blocks of docs/*.md from real runs, or checks them.

A block is written between two markers:

    <!-- example: NAME -->
        ...output of docs/examples/NAME.sh, indented by four spaces...
    <!-- /example -->

docs/examples/NAME.sh runs in a fresh scratch directory with BIN (the built
tools) and SRC (the source tree) in its environment and PATH starting with
BIN; what it prints becomes the block. So the docs show what the tools print
today and cannot go stale unnoticed:

    tools/docs-examples.py build/bin            # rewrite the blocks
    tools/docs-examples.py build/bin --check    # exit 1, with a diff, if any block differs (ctest docs.examples)
"""
import difflib
import os
import pathlib
import re
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"(<!-- example: ([\w.-]+) -->\n)(.*?)(<!-- /example -->)", re.S)


def render(name, bin_dir, src):
    script = src / "docs" / "examples" / f"{name}.sh"
    if not script.exists():
        sys.exit(f"docs-examples: error: no {script} for the block 'example: {name}'")
    with tempfile.TemporaryDirectory(prefix=f"popc-doc-{name}-") as tmp:
        env = dict(os.environ, BIN=str(bin_dir), SRC=str(src), PATH=f"{bin_dir}:{os.environ['PATH']}",
                   POPC_CACHE_DIR="", LC_ALL="C")
        env.pop("POPC_LOG_LEVEL", None)
        run = subprocess.run(["bash", str(script)], cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            sys.exit(f"docs-examples: error: {script} failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    lines = run.stdout.rstrip("\n").split("\n")
    return "".join(("    " + line).rstrip() + "\n" for line in lines)


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    bin_dir = pathlib.Path(sys.argv[1]).resolve()
    check = "--check" in sys.argv[2:]
    src = pathlib.Path(__file__).resolve().parent.parent
    stale = []
    for doc in sorted((src / "docs").glob("*.md")) + [src / "README.md"]:
        text = doc.read_text()
        new = BLOCK.sub(lambda m: m.group(1) + "\n" + render(m.group(2), bin_dir, src) + "\n" + m.group(4), text)
        if new == text:
            continue
        stale.append(doc)
        if check:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                       str(doc.relative_to(src)), "generated"))
        else:
            doc.write_text(new)
            print(f"rewrote examples in {doc.relative_to(src)}")
    if check and stale:
        print(f"docs-examples: error: {len(stale)} file(s) show output the tools no longer print; "
              f"fix: tools/docs-examples.py {sys.argv[1]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Runs the README's quick start as a new user would: the fenced blocks marked for testing.

A block is tested when the line before its opening fence is `<!-- readme-test: NAME ... -->`.
The marked blocks run in README order in one bash session (`set -euo pipefail`), a ```python
block through `python -`, in a scratch folder that links every top-level entry of the repository,
so that the README's relative paths work and what the blocks write (tiny_bert.onnx) lands in the
scratch folder, never in the clone.

    python tests/docs/readme_quickstart.py                  # reuse the build tree (what ctest runs)
    python tests/docs/readme_quickstart.py --as-written     # every line as written: setup.sh (apt,
                                                            # sudo), build_wheel.sh (a full build)

Reusing the build tree keeps the test at seconds: the lines that install are swapped for what they
would give, and each swap is listed in REUSED below and printed when it happens. `bash
scripts/demo.sh` runs with the build tree's tools (ONNXC_DEMO_REUSE_BUILD: its setup and build
are the suite's own), `bash scripts/test.sh` is the suite itself (.ci/run), `bash
scripts/setup.sh` becomes a check that the repository's .venv has the pinned packages it installs
(the venv this test runs in), `bash scripts/build_wheel.sh` is skipped (python/wheel builds and
installs the wheel), and `pip install dist/onnxc-*.whl` becomes PYTHONPATH at the build tree's copy of
the package (`--python-package`, build/python by default, which the normal CMake build assembles).
Every other line runs as written. The test fails when a block fails.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = re.compile(r"^<!-- readme-test: ([\w-]+).*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")

# Each install line of the README and what stands for it when the build tree is reused.
REUSED = {
    "bash scripts/demo.sh":
        'ONNXC_DEMO_REUSE_BUILD=1 ONNXC_BUILD_DIR="$ONNXC_BUILD_TREE" bash scripts/demo.sh',
    "bash scripts/test.sh":
        'echo "   (the whole suite: .ci/run runs exactly this command, this test among it)" >&2',
    "bash scripts/setup.sh":
        '.venv/bin/python -c "import numpy, onnx, onnxruntime, torch" '
        '|| { echo "run scripts/setup.sh first: its .venv is what the README activates" >&2; exit 1; }',
    "bash scripts/build_wheel.sh":
        'echo "   (the wheel itself is tested by python/wheel: tests/python/test_wheel.py)" >&2',
    "pip install dist/onnxc-*.whl":
        'export PYTHONPATH="$ONNXC_PYTHON_PACKAGE"',
}


def marked_blocks(readme):
    """[(name, language, text)] of the blocks marked for testing, in order."""
    blocks, lines = [], open(readme, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        mark = MARK.match(lines[i])
        fence = FENCE.match(lines[i + 1]) if mark and i + 1 < len(lines) else None
        if not fence:
            i += 1
            continue
        end = i + 2
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        blocks.append((mark.group(1), fence.group(1), "\n".join(lines[i + 2:end])))
        i = end + 1
    return blocks


def command_of(line):
    """The command of a shell line, without its comment."""
    return line.split("  #", 1)[0].strip()


def script(blocks, as_written):
    parts = ["set -euo pipefail"]
    for name, language, text in blocks:
        parts.append(f"echo '== readme block {name}' >&2")
        if language == "python":
            parts.append(f"python - <<'README_PYTHON_BLOCK'\n{text}\nREADME_PYTHON_BLOCK")
            continue
        if language not in ("sh", "bash", "shell"):
            raise SystemExit(f"README block {name}: a marked block must be sh or python, not {language!r}")
        for line in text.splitlines():
            command = command_of(line)
            if not as_written and command in REUSED:
                parts.append(f"echo '   reused build tree: {command}' >&2")
                parts.append(REUSED[command])
            elif command:
                parts.append(command)
    return "\n".join(parts) + "\n"


def scratch_folder(root):
    """A folder that looks like the clone: a link per top-level entry, build folders left out."""
    for entry in os.listdir(REPO):
        if entry.startswith("build") or entry in (".git",):
            continue
        os.symlink(os.path.join(REPO, entry), os.path.join(root, entry))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--as-written", action="store_true",
                        help="run the install lines too (setup.sh with apt, pip install .)")
    parser.add_argument("--python-package", default=os.path.join(REPO, "build", "python"),
                        help="the folder holding the build tree's onnxc package (build/python)")
    parser.add_argument("--readme", default=os.path.join(REPO, "README.md"))
    args = parser.parse_args()
    blocks = marked_blocks(args.readme)
    if not blocks:
        raise SystemExit(f"{args.readme}: no block is marked '<!-- readme-test: NAME -->'")
    if not args.as_written and not os.path.isdir(os.path.join(args.python_package, "onnxc")):
        raise SystemExit(f"{args.python_package}/onnxc is missing: build the module "
                         "(ninja -C build _onnxc) or pass --as-written")
    env = dict(os.environ, ONNXC_PYTHON_PACKAGE=os.path.abspath(args.python_package),
               ONNXC_BUILD_TREE=os.path.dirname(os.path.abspath(args.python_package)))
    # The README activates the repository's venv itself: start from a plain environment.
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory(prefix="onnxc-readme-") as root:
        scratch_folder(root)
        result = subprocess.run(["bash", "-c", script(blocks, args.as_written)], cwd=root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, end="")
    if result.returncode != 0:
        raise SystemExit(f"the README's quick start failed (exit {result.returncode}); its output is above")
    print(f"README quick start: {len(blocks)} blocks ran")


if __name__ == "__main__":
    main()

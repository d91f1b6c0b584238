"""ONNXC_MODEL_CHECKS: how much of a whole-model test script a build runs (CONTRIBUTING.md, the
CI legs). One variable for every such script (tests/models, tests/generate, tests/controlflow,
tests/frontend, tests/python/test_generate.py):

  full    (default) everything: the JIT and compiled .so's against onnxruntime at every shape.
  passes  what ctest sets in the sanitizer builds (ONNXC_SANITIZE): the compiler's own C++ on every
          model and none of the kernels it emits, which ASan cannot see into: import, -O3 with every
          pass verified, lowering to LLVM IR, verified and not optimized (`verify_and_lower`: LLVM's
          optimizer is not instrumented either), and the reference evaluator
          against onnxruntime on one small input. The JIT and .so runs, long loops and repeated
          shapes are the normal build's; a script whose point is running a compiled library keeps
          its smallest case and skips the rest, saying why.
"""

import os
import subprocess

MODEL_CHECKS = os.environ.get("ONNXC_MODEL_CHECKS", "full")
if MODEL_CHECKS not in ("full", "passes"):
    raise ValueError(f"ONNXC_MODEL_CHECKS={MODEL_CHECKS}: use full or passes")
PASS_LEVEL = MODEL_CHECKS == "passes"
# The skip reason of a test that only runs compiled kernels.
KERNELS_REASON = "ONNXC_MODEL_CHECKS=passes: compiled kernels run in the normal build"
TIMEOUT_SECONDS = 600
# `onnxc compile` options of the pass level: every pass verified, then lowered to LLVM IR and the
# IR verified, not optimized: LLVM's -O3 is not instrumented, and it was most of the time these
# checks took (1.6 of bert's 1.7 CPU seconds in the normal build).
LOWER_OPTIONS = ["-O3", "--verify-each", "--emit=llvm-unoptimized"]


def skip_at_pass_level(reason: str = KERNELS_REASON):
    """A pytest mark: skipped at the pass level, with the reason."""
    import pytest
    return pytest.mark.skipif(PASS_LEVEL, reason=reason)


def verify_and_lower(onnxc: str, model: str, output: str, options=()) -> str:
    """`onnxc compile MODEL -O3 --verify-each --emit=llvm-unoptimized -o OUTPUT OPTIONS...`: every
    pass verified, then lowered to LLVM IR and the IR verified, nothing optimized or run. None when it succeeded and emitted a function, else what
    went wrong (the end of stderr). `lowered_with_output` also gives what it printed."""
    return lowered_with_output(onnxc, model, output, options)[0]


def lowered_with_output(onnxc: str, model: str, output: str, options=()) -> tuple:
    """(what went wrong or None, its stdout and stderr) of `verify_and_lower`'s command."""
    command = [onnxc, "compile", model, *LOWER_OPTIONS, "-o", output, *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    if done.returncode != 0:
        problem = f"exit {done.returncode}: {' '.join(command)}\n{done.stderr.strip()[-2000:]}"
        return problem, done.stdout + done.stderr
    with open(output) as f:
        if "define" not in f.read():
            return f"{output}: no function was emitted", done.stdout + done.stderr
    return None, done.stdout + done.stderr

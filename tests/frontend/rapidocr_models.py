#!/usr/bin/env python3
"""The PP-OCRv4 models of the rapidocr-onnxruntime wheel (paddle2onnx, opsets 11 and 12) through onnxc.

    .venv/bin/python tests/frontend/rapidocr_models.py ONNXC CACHE_DIR [--strict]

Fetches the wheel from PyPI with `pip download` into CACHE_DIR (once; nothing is committed),
takes its three models (text detection, text recognition, direction classifier), and for each
runs `onnxc run` with the reference evaluator and the JIT on one small input, compared with
onnxruntime on the original file (rel err <= 1e-4). Prints one line per model and backend.

A model refused with "unsupported ops: ..." naming only ops in PENDING_OPS (ops someone is
adding) is an expected failure: it is reported, and the script still exits 0. The set is empty
now that Resize, ConvTranspose, pooling and Pad have landed (issue 14 item 2), so every model
must match. Anything else (a conversion error, a missing op, a crash, a mismatch) exits 1, and
--strict makes the expected failures count too. Exits 77 (a skip for ctest) when the wheel
cannot be fetched.

At the pass level (ONNXC_MODEL_CHECKS=passes, tests/models/model_checks.py: the sanitizer builds)
the JIT is not run (ASan cannot see into the kernels it emits); instead each model is compiled at
its input shape with -O3 --verify-each --emit=llvm-unoptimized (every pass verified, lowered to LLVM IR).
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))

from model_checks import PASS_LEVEL, verify_and_lower  # noqa: E402
from ort_reference import output_file_name, run_ort  # noqa: E402

WHEEL = "rapidocr-onnxruntime==1.4.4"
# Ops being added while this test already runs; a model needing only these is an expected failure.
PENDING_OPS = set()
# model file -> one input shape (NCHW; the detector wants multiples of 32)
SHAPES = {
    "ch_PP-OCRv4_det_infer.onnx": (1, 3, 64, 96),
    "ch_PP-OCRv4_rec_infer.onnx": (1, 3, 48, 160),
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": (1, 3, 48, 192),
}
RTOL, ATOL = 1e-4, 1e-5


def fetch_models(cache_dir: str) -> dict:
    os.makedirs(cache_dir, exist_ok=True)
    wheels = glob.glob(os.path.join(cache_dir, "rapidocr_onnxruntime-*.whl"))
    if not wheels:
        result = subprocess.run([sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "-q",
                                 "-d", cache_dir], capture_output=True, text=True, timeout=600)
        wheels = glob.glob(os.path.join(cache_dir, "rapidocr_onnxruntime-*.whl"))
        if result.returncode != 0 or not wheels:
            print(f"skipped: pip download {WHEEL} failed: {result.stderr.strip()[-500:]}")
            sys.exit(77)
    models = {}
    with zipfile.ZipFile(wheels[0]) as wheel:
        for member in wheel.namelist():
            name = os.path.basename(member)
            if name in SHAPES:
                path = os.path.join(cache_dir, name)
                if not os.path.exists(path):
                    with wheel.open(member) as src, open(path + ".tmp", "wb") as dst:
                        dst.write(src.read())
                    os.replace(path + ".tmp", path)
                models[name] = path
    missing = sorted(set(SHAPES) - set(models))
    if missing:
        print(f"error: {wheels[0]} lacks {missing}")
        sys.exit(1)
    return models


def unsupported_ops(message: str) -> set:
    """The op names of an "unsupported ops: A (node 'x'), B (nodes ...)" error, or empty."""
    match = re.search(r"unsupported ops: (.*)", message)
    if not match:
        return set()
    return set(re.findall(r"(?:^|, )([A-Za-z0-9_.]+) \(nodes? ", match.group(1)))


def first_input(path: str) -> str:
    import onnx
    return onnx.load(path, load_external_data=False).graph.input[0].name


def check_lowered(onnxc: str, path: str, shape: tuple, workdir: str) -> tuple:
    """The pass level's check: (status, detail) of -O3 --verify-each --emit=llvm-unoptimized at SHAPE."""
    dims = "x".join(str(d) for d in shape)
    problem = verify_and_lower(onnxc, path, os.path.join(workdir, "model.ll"),
                               ["--shape", f"{first_input(path)}={dims}"])
    return ("fail", problem) if problem else ("pass", f"every pass verified, lowered at {dims}")


def check(onnxc: str, path: str, shape: tuple, backend: str, workdir: str) -> tuple:
    """(status, detail): status is 'pass', 'expected' (pending ops only) or 'fail'."""
    if backend == "lower":
        return check_lowered(onnxc, path, shape, workdir)
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    import onnx
    input_name = onnx.load(path, load_external_data=False).graph.input[0].name
    input_file = os.path.join(workdir, "x.npy")
    np.save(input_file, x)
    output_dir = os.path.join(workdir, f"out-{backend}")
    command = [onnxc, "run", path, "--input", f"{input_name}={input_file}", "--output-dir", output_dir,
               f"--backend={backend}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    if result.returncode != 0:
        message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit {result.returncode}"
        ops = unsupported_ops(message)
        if ops and ops <= PENDING_OPS and result.returncode == 1:
            return "expected", f"needs {', '.join(sorted(ops))} (issue 14 item 2, being added)"
        return "fail", message
    want = run_ort(path, {input_name: x})
    for name, expected in want.items():
        got_path = os.path.join(output_dir, output_file_name(name))
        if not os.path.exists(got_path):
            return "fail", f"onnxc wrote no {got_path}"
        got = np.load(got_path)
        if got.shape != expected.shape:
            return "fail", f"output {name}: shape {got.shape}, onnxruntime {expected.shape}"
        if not np.allclose(got, expected, rtol=RTOL, atol=ATOL):
            worst = float(np.max(np.abs(got - expected) / (np.abs(expected) + ATOL)))
            return "fail", f"output {name}: relative error {worst:.3g} > {RTOL}"
    return "pass", "matches onnxruntime"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("onnxc")
    parser.add_argument("cache_dir")
    parser.add_argument("--strict", action="store_true", help="expected failures fail too")
    args = parser.parse_args()
    models = fetch_models(args.cache_dir)
    counts = {"pass": 0, "expected": 0, "fail": 0}
    for name in SHAPES:
        for backend in ("ref", "lower") if PASS_LEVEL else ("ref", "jit"):
            with tempfile.TemporaryDirectory() as workdir:
                status, detail = check(args.onnxc, models[name], SHAPES[name], backend, workdir)
            counts[status] += 1
            label = {"pass": "PASS", "expected": "XFAIL", "fail": "FAIL"}[status]
            what = "-O3 --verify-each --emit=llvm-unoptimized" if backend == "lower" else f"--backend={backend}"
            print(f"{label} {name} {what}: {detail}", flush=True)
    print(f"rapidocr models: {counts['pass']} passed, {counts['expected']} expected failures, "
          f"{counts['fail']} failed")
    return 1 if counts["fail"] or (args.strict and counts["expected"]) else 0


if __name__ == "__main__":
    sys.exit(main())

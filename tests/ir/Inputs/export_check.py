#!/usr/bin/env python3
"""Runs an ONNX model written by `onnxc dump --format=onnx` in onnxruntime and compares it with
onnxc's reference evaluator on the graph it came from, on the same random inputs.

    export_check.py EXPORTED.onnx ORIGINAL.ir|.onnx --shape NAME=2x7x8 ... [--seed N]

Float inputs are standard normal, integer ones 0 or 1 (mask-like: some rows may hide every key),
bool ones random. Prints the largest error of each output; exits 1 beyond rtol 1e-4 / atol 1e-5.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
from ort_reference import output_file_name, run_ort  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("exported")
    parser.add_argument("original")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=2x7x8")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import onnx
    model = onnx.load(args.exported)
    onnx.checker.check_model(model)
    dtypes = {i.name: onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
              for i in model.graph.input}
    rng = np.random.default_rng(args.seed)
    feeds = {}
    for pair in args.shape:
        name, _, dims = pair.partition("=")
        shape = tuple(int(d) for d in dims.split("x"))
        dtype = np.dtype(dtypes[name])
        if dtype.kind == "f":
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[name] = rng.random(shape) < 0.7
        else:
            feeds[name] = rng.integers(0, 2, shape).astype(dtype)
    ok = True
    with tempfile.TemporaryDirectory() as work:
        command = ["onnxc", "run", args.original, "--backend=ref", "-O0", "--output-dir", work]
        for name, value in feeds.items():
            path = os.path.join(work, f"input_{name}.npy")
            np.save(path, value)
            command += ["--input", f"{name}={path}"]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        got = run_ort(args.exported, feeds)
        for output in model.graph.output:
            want = np.load(os.path.join(work, output_file_name(output.name)))
            value = got[output.name]
            close = value.shape == want.shape and np.allclose(value, want, rtol=1e-4, atol=1e-5,
                                                              equal_nan=True)
            error = np.nanmax(np.abs(value.astype(np.float64) - want.astype(np.float64))) if want.size else 0
            print(f"{output.name}: shape {value.shape}, max |onnxruntime - onnxc| = {error:.2e} -> "
                  f"{'match' if close else 'MISMATCH'}")
            ok &= close
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

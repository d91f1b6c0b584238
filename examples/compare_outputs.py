#!/usr/bin/env python3
"""Compares the .npy files of two output folders (onnxc's and onnxruntime's) and prints the
largest absolute and relative difference of each; exits 1 beyond rtol 1e-4 / atol 1e-5.

    .venv/bin/python examples/compare_outputs.py ONNXC_DIR ORT_DIR
"""

import os
import sys

import numpy as np


def main() -> int:
    if len(sys.argv) != 3:
        print(f"usage: {sys.argv[0]} ONNXC_DIR ORT_DIR", file=sys.stderr)
        return 2
    ours_dir, theirs_dir = sys.argv[1:]
    ok = True
    for name in sorted(os.listdir(theirs_dir)):
        want = np.load(os.path.join(theirs_dir, name))
        got = np.load(os.path.join(ours_dir, name))
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        rel = diff / np.maximum(np.abs(want.astype(np.float64)), 1e-5)
        close = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        ok &= close
        print(f"{name}: shape {got.shape}, max |onnxc - onnxruntime| = {diff.max():.2e}, "
              f"max relative = {rel.max():.2e} -> {'match' if close else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

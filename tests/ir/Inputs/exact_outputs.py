#!/usr/bin/env python3
"""Exits 1 unless every .npy in DIR_B has a bit-identical twin in DIR_A (same shape, dtype and
bytes); prints the largest difference and the count of differing elements otherwise. With
--within R, a float output may instead differ by at most R times its largest magnitude (for
rewrites that change only f32 rounding).

    exact_outputs.py DIR_A DIR_B [--within R]
"""

import os
import sys

import numpy as np


def main() -> int:
    first, second = sys.argv[1:3]
    within = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--within" else None
    ok = True
    for name in sorted(os.listdir(second)):
        want = np.load(os.path.join(second, name))
        got = np.load(os.path.join(first, name))
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"{name}: {got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}")
            ok = False
            continue
        differ = got.view(np.uint8) != want.view(np.uint8)
        if differ.any():
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            bound = within * float(np.abs(want).max()) if within is not None else None
            close = bound is not None and np.issubdtype(want.dtype, np.floating) and \
                diff.max() <= bound
            print(f"{name}: {int((got != want).sum())} of {got.size} differ, max {diff.max():.3e}"
                  + (f" (within {bound:.3e})" if close else ""))
            ok = ok and close
        else:
            print(f"{name}: identical ({got.size} elements)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Exits 1 unless every .npy in DIR_B has a bit-identical twin in DIR_A (same shape, dtype and
bytes); prints the largest difference and the count of differing elements otherwise.

    exact_outputs.py DIR_A DIR_B
"""

import os
import sys

import numpy as np


def main() -> int:
    first, second = sys.argv[1:3]
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
            print(f"{name}: {int((got != want).sum())} of {got.size} differ, max {diff.max():.3e}")
            ok = False
        else:
            print(f"{name}: identical ({got.size} elements)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

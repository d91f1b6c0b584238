#!/usr/bin/env python3
"""Writes inputs for the tiny BERT demo model: OUTDIR/input_ids.npy and
OUTDIR/attention_mask.npy, batch 1, sequence 8, fixed seed; prints them.

    .venv/bin/python examples/models/make_inputs.py OUTDIR
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from build_tiny_bert import INPUTS  # noqa: E402  (also puts tests/models on sys.path)
from model_inputs import make_inputs  # noqa: E402

SHAPE = {"batch": 1, "seq": 8}
SEED = 2024


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} OUTDIR", file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    arrays = make_inputs({"name": "tiny_bert", "inputs": INPUTS}, SHAPE, seed=SEED)
    for name, value in arrays.items():
        path = os.path.join(outdir, name + ".npy")
        np.save(path, value)
        print(f"{path}: {value.dtype}{list(value.shape)} = {value.tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

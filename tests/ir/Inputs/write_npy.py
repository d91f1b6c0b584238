#!/usr/bin/env python3
"""Writes small .npy inputs for RUN lines: write_npy.py FILE KIND [SHAPE], KIND one of
true, false (a bool scalar) or arange (f32 of SHAPE, e.g. 2x4: 0, 0.25, ...)."""

import sys

import numpy as np

path, kind = sys.argv[1], sys.argv[2]
if kind in ("true", "false"):
    np.save(path, np.array(kind == "true"))
else:
    shape = [int(d) for d in sys.argv[3].split("x")]
    np.save(path, (np.arange(np.prod(shape), dtype=np.float32) / 4 - 1).reshape(shape))

#!/usr/bin/env python3
"""Copies the ONNX node tests of the integer ops written at opset 10/11 into
OUTDIR with their ai.onnx opset raised to 13.

Usage: restamp_node_tests.py OUTDIR ROOT...

MatMulInteger, ConvInteger, QLinearConv (opset 10) and DynamicQuantizeLinear
(opset 11) have not changed since, and QLinearMatMul only gained types at 21,
so the cases mean the same at opset 13, the oldest onnxc imports; the node
runner skips them at their own opset. Case folders keep their names; the
test data is linked, not copied.
"""

import os
import sys
from pathlib import Path

import onnx

OPS = ("MatMulInteger", "ConvInteger", "QLinearConv", "QLinearMatMul", "DynamicQuantizeLinear")


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for root in map(Path, sys.argv[2:]):
        for case in sorted(root.glob("test_*")):
            model_file = case / "model.onnx"
            if not model_file.exists():
                continue
            model = onnx.load(str(model_file))
            opset = [o for o in model.opset_import if o.domain in ("", "ai.onnx")]
            if not opset or opset[0].version >= 13:
                continue
            if not any(node.op_type in OPS for node in model.graph.node):
                continue
            # Every op of these cases (the _expanded ones use Clip, Cast, ...)
            # keeps its meaning at 13 except Clip (min/max became inputs at
            # 11, already the form at 11) and ReduceMin/Max (unchanged).
            opset[0].version = 13
            target = out / case.name
            target.mkdir(exist_ok=True)
            onnx.save(model, str(target / "model.onnx"))
            for data in case.glob("test_data_set_*"):
                link = target / data.name
                if not link.exists():
                    os.symlink(data.resolve(), link)
            written += 1
    print(f"{written} cases restamped into {out}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())

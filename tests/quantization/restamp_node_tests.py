#!/usr/bin/env python3
"""Copies the ONNX node tests of the integer ops written at opset 10/11 into
OUTDIR with their ai.onnx opset raised to 13, and those of blocked
quantization and the int4/uint4 types, which onnx 1.19 writes at opset 24,
with it lowered to 23.

Usage: restamp_node_tests.py OUTDIR ROOT...

MatMulInteger, ConvInteger, QLinearConv (opset 10) and DynamicQuantizeLinear
(opset 11) have not changed since, and QLinearMatMul only gained types at 21,
so the cases mean the same at opset 13, the oldest onnxc imports; the node
runner skips them at their own opset. QuantizeLinear, DequantizeLinear, Cast
and CastLike took int4, uint4 and block_size at 21; 24 only added the
float8e8m0 type, so the cases of those (and of nothing else) mean the same
at 23, the newest onnxc imports. Case folders keep their names; the test data
is linked, not copied.
"""

import os
import sys
from pathlib import Path

import onnx

OPS = ("MatMulInteger", "ConvInteger", "QLinearConv", "QLinearMatMul", "DynamicQuantizeLinear")


INT4_OPS = {"QuantizeLinear", "DequantizeLinear", "Cast", "CastLike"}
FOUR_BIT = {onnx.TensorProto.INT4, onnx.TensorProto.UINT4}


def uses_int4_or_blocks(model: onnx.ModelProto) -> bool:
    """Whether a graph of INT4_OPS alone has an int4/uint4 value or a block_size."""
    graph = model.graph
    if not graph.node or any(node.op_type not in INT4_OPS for node in graph.node):
        return False
    types = [v.type.tensor_type.elem_type for v in [*graph.input, *graph.output, *graph.value_info]]
    types += [t.data_type for t in graph.initializer]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.name == "block_size" and attribute.i > 0:
                return True
            if attribute.name == "to":
                types.append(attribute.i)
            if attribute.type == onnx.AttributeProto.TENSOR:
                types.append(attribute.t.data_type)
    return bool(FOUR_BIT & set(types))


def new_opset(model: onnx.ModelProto, version: int):
    """The opset the case is re-stamped at, or None to leave it out."""
    if version < 13 and any(node.op_type in OPS for node in model.graph.node):
        # Every op of these cases (the _expanded ones use Clip, Cast, ...)
        # keeps its meaning at 13 except Clip (min/max became inputs at
        # 11, already the form at 11) and ReduceMin/Max (unchanged).
        return 13
    if version == 24 and uses_int4_or_blocks(model):
        return 23
    return None


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
            if not opset:
                continue
            version = new_opset(model, opset[0].version)
            if version is None:
                continue
            opset[0].version = version
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

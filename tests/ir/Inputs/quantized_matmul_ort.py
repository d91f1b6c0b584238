#!/usr/bin/env python3
"""Checks onnxc's reference DynamicQuantizedMatMul against onnxruntime running the ONNX ops it
stands for (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul -> Add, optimizations off).

    quantized_matmul_ort.py GRAPH.ir INPUT.npy ONNXC_OUTPUT.npy

Reads the weight constants %w, %ws, [%wz], [%bias] from the text IR, runs onnxruntime on
INPUT.npy and exits 1 unless its result is bit-identical to ONNXC_OUTPUT.npy.
"""

import re
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

DTYPES = {"i8": np.int8, "u8": np.uint8, "f32": np.float32}


def constants(text):
    found = {}
    pattern = r"const %(\w+): (\w+)\[([^\]]*)\] = dense<(\[[^\]]*\]|[^>]*)>"
    for name, dtype, dims, body in re.findall(pattern, text):
        shape = [int(d) for d in dims.split(",") if d.strip()]
        values = [float(v) for v in body.strip("[]").split(",")]
        found[name] = np.array(values, dtype=np.float64).astype(DTYPES[dtype]).reshape(shape)
    return found


def main() -> int:
    graph_path, input_path, output_path = sys.argv[1:4]
    c = constants(open(graph_path).read())
    a = np.load(input_path)
    wz = c.get("wz", np.zeros([], dtype=c["w"].dtype))
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["a"], ["aq", "as", "az"]),
        helper.make_node("MatMulInteger", ["aq", "w", "az", "wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["as", "ws"], ["scale"]),
        helper.make_node("Mul", ["accf", "scale"], ["y0" if "bias" in c else "y"]),
    ]
    inits = [numpy_helper.from_array(c["w"], "w"), numpy_helper.from_array(wz, "wz"),
             numpy_helper.from_array(c["ws"], "ws")]
    if "bias" in c:
        nodes.append(helper.make_node("Add", ["y0", "bias"], ["y"]))
        inits.append(numpy_helper.from_array(c["bias"], "bias"))
    graph = helper.make_graph(
        nodes, "qmm", [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options).run(None, {"a": a})[0]
    got = np.load(output_path)
    differ = int((got.view(np.uint32) != want.view(np.uint32)).sum())
    print(f"onnxruntime vs onnxc reference: {differ} of {got.size} differ, "
          f"max {np.abs(got.astype(np.float64) - want).max():.3e}")
    return 0 if differ == 0 and got.shape == want.shape else 1


if __name__ == "__main__":
    sys.exit(main())

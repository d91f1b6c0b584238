#!/usr/bin/env python3
"""Checks onnxc's reference DynamicQuantizedMatMul against onnxruntime running the ONNX ops it
stands for (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul -> Add, optimizations off).

    quantized_matmul_ort.py GRAPH.ir INPUT.npy ONNXC_OUTPUT.npy

Reads the weight constants %w, %ws, [%wz], [%bias] from the text IR, runs onnxruntime on
INPUT.npy and exits 1 unless its result is bit-identical to ONNXC_OUTPUT.npy.

MatMulInteger accumulates exactly in int32. onnxruntime's u8 x s8 kernels on some CPUs (vpmaddubsw
without VNNI) saturate a pair of products at 16 bits, so its int32 accumulator is read back too:
where it differs from the exact product of onnxruntime's own quantized operands, onnxruntime is the
one off, and those outputs are reported but not held against onnxc.
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
        [helper.make_tensor_value_info(name, dtype, None)
         for name, dtype in (("y", TensorProto.FLOAT), ("acc", TensorProto.INT32),
                             ("aq", TensorProto.UINT8), ("az", TensorProto.UINT8))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want, acc, aq, az = ort.InferenceSession(model.SerializeToString(), options).run(None, {"a": a})
    exact = np.matmul(aq.astype(np.int64) - az.astype(np.int64),
                      c["w"].astype(np.int64) - wz.astype(np.int64))
    saturated = np.broadcast_to(acc != exact, want.shape)
    got = np.load(output_path)
    if got.shape != want.shape:
        print(f"shapes differ: onnxc {got.shape}, onnxruntime {want.shape}")
        return 1
    differ = got.view(np.uint32) != want.view(np.uint32)
    held = int((differ & ~saturated).sum())
    print(f"onnxruntime vs onnxc reference: {held} of {got.size} differ "
          f"(max {np.abs(got.astype(np.float64) - want)[~saturated].max():.3e}); "
          f"{int(saturated.sum())} outputs where onnxruntime's int32 accumulator is not exact "
          f"left out ({int((differ & saturated).sum())} of them differ)")
    return 0 if held == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

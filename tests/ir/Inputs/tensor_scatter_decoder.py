"""Writes an opset-24 decoder attention layer with a fixed-length KV cache, and inputs for it.

    python tensor_scatter_decoder.py OUT_DIR LENGTH

LENGTH: the cache's length, a number or a symbol name. As opset 24 writes the cache:
present_key = TensorScatter(past_key, k, write_indices) (and the same for values), and the
Attention reads the presents with nonpad_kv_seqlen = write_indices + seq and is_causal. Writes
OUT_DIR/layer.onnx and, for one decode step of 2 rows at positions 5 and 9 after a cache of
random contents, OUT_DIR/inputs/NAME.npy.
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
HIDDEN, HEADS, SIZE = 16, 2, 8


def layer(length):
    rng = np.random.default_rng(7)
    weights = [numpy_helper.from_array(rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32)
                                       * 0.3, name) for name in ("wq", "wk", "wv", "wo")]
    heads = numpy_helper.from_array(np.array([0, 0, HEADS, SIZE], np.int64), "heads")
    merged = numpy_helper.from_array(np.array([0, 0, HIDDEN], np.int64), "merged")
    nodes = []
    for name in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["x", "w" + name], [name + "_flat"]),
                  helper.make_node("Reshape", [name + "_flat", "heads"], [name + "_4d"]),
                  helper.make_node("Transpose", [name + "_4d"], [name], perm=[0, 2, 1, 3])]
    nodes += [
        helper.make_node("TensorScatter", ["past_key", "k", "write_indices"], ["present_key"]),
        helper.make_node("TensorScatter", ["past_value", "v", "write_indices"], ["present_value"]),
        helper.make_node("Shape", ["x"], ["x_shape"], start=1, end=2),
        helper.make_node("Add", ["write_indices", "x_shape"], ["nonpad"]),
        helper.make_node("Attention", ["q", "present_key", "present_value", "", "", "", "nonpad"],
                         ["y"], is_causal=1),
        helper.make_node("Transpose", ["y"], ["y_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["y_t", "merged"], ["y_3d"]),
        helper.make_node("MatMul", ["y_3d", "wo"], ["out"]),
    ]
    cache = ["batch", HEADS, length, SIZE]
    graph = helper.make_graph(
        nodes, "scatter_decoder",
        [helper.make_tensor_value_info("x", F32, ["batch", "seq", HIDDEN]),
         helper.make_tensor_value_info("past_key", F32, cache),
         helper.make_tensor_value_info("past_value", F32, cache),
         helper.make_tensor_value_info("write_indices", I64, ["batch"])],
        [helper.make_tensor_value_info("out", F32, ["batch", "seq", HIDDEN]),
         helper.make_tensor_value_info("present_key", F32, cache),
         helper.make_tensor_value_info("present_value", F32, cache)],
        weights + [heads, merged])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])


def main():
    out, length = sys.argv[1], sys.argv[2]
    length = int(length) if length.isdigit() else length
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    save(layer(length), os.path.join(out, "layer.onnx"))
    rng = np.random.default_rng(3)
    rows = length if isinstance(length, int) else 16
    arrays = {"x": rng.standard_normal((2, 1, HIDDEN)).astype(np.float32),
              "past_key": rng.standard_normal((2, HEADS, rows, SIZE)).astype(np.float32),
              "past_value": rng.standard_normal((2, HEADS, rows, SIZE)).astype(np.float32),
              "write_indices": np.array([5, 9], np.int64)}
    for name, array in arrays.items():
        np.save(os.path.join(out, "inputs", name + ".npy"), array)


if __name__ == "__main__":
    main()

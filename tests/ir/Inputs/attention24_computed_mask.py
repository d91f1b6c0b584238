"""Writes opset-24 Attention layers whose attn_mask is computed inside the graph and composed with
nonpad_kv_seqlen (an external cache), with inputs and the expected output, and one the import
cannot type.

    python attention24_computed_mask.py OUT_DIR

OUT_DIR/bool.onnx: attn_mask = Cast(Unsqueeze(keep), to=bool), keep i64[batch, 6] an input;
OUT_DIR/float.onnx: attn_mask = Where(Unsqueeze(keep_b), 0, -inf) (a float additive mask);
both is_causal with nonpad_kv_seqlen an input; OUT_DIR/untyped.onnx: attn_mask = Add(bias, bias)
(float, but not typed at import). OUT_DIR/inputs/*.npy and OUT_DIR/expected/y.npy: a decode-like
block of 2 queries over a cache of 6 keys, rows at 3 and 5 valid keys, the causal frontier
bottom-right (the spec's errata for the external cache): key j visible to query i of row b when
j < nonpad[b], j <= nonpad[b] - 2 + i and the row's keep mask allows it.
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, save

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
B, H, S, T, D = 2, 2, 2, 6, 4


def layer(kind):
    nodes = [helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("a", I64, [2], [1, 2]))]
    inputs = [helper.make_tensor_value_info(n, F32, [B, H, length, D])
              for n, length in (("q", S), ("k", T), ("v", T))]
    inputs.append(helper.make_tensor_value_info("nonpad", I64, [B]))
    if kind == "bool":
        inputs.append(helper.make_tensor_value_info("keep", I64, [B, T]))
        nodes += [helper.make_node("Unsqueeze", ["keep", "axes"], ["keep4"]),
                  helper.make_node("Cast", ["keep4"], ["mask"], to=BOOL)]
    elif kind == "float":
        inputs.append(helper.make_tensor_value_info("keep_b", BOOL, [B, T]))
        nodes += [helper.make_node("Unsqueeze", ["keep_b", "axes"], ["keep4"]),
                  helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("z", F32, [], [0.0])),
                  helper.make_node("Constant", [], ["hidden"], value=helper.make_tensor("h", F32, [], [-np.inf])),
                  helper.make_node("Where", ["keep4", "zero", "hidden"], ["mask"])]
    else:
        inputs.append(helper.make_tensor_value_info("bias", F32, [B, 1, 1, T]))
        nodes.append(helper.make_node("Add", ["bias", "bias"], ["mask"]))
    nodes.append(helper.make_node("Attention", ["q", "k", "v", "mask", "", "", "nonpad"], ["y"], is_causal=1))
    graph = helper.make_graph(nodes, "computed_mask", inputs,
                              [helper.make_tensor_value_info("y", F32, [B, H, S, D])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])


def expected(q, k, v, nonpad, keep):
    y = np.zeros((B, H, S, D))
    for b in range(B):
        for i in range(S):
            visible = [j for j in range(T) if j < nonpad[b] and j <= nonpad[b] - S + i and keep[b, j]]
            for h in range(H):
                scores = np.array([q[b, h, i] @ k[b, h, j] / np.sqrt(D) for j in visible], np.float64)
                weights = np.exp(scores - scores.max())
                y[b, h, i] = (weights / weights.sum()) @ v[b, h, visible].astype(np.float64)
    return y.astype(np.float32)


def main():
    out = sys.argv[1]
    for folder in ("inputs", "expected"):
        os.makedirs(os.path.join(out, folder), exist_ok=True)
    for kind in ("bool", "float", "untyped"):
        save(layer(kind), os.path.join(out, kind + ".onnx"))
    rng = np.random.default_rng(24)
    arrays = {n: rng.standard_normal((B, H, length, D)).astype(np.float32) for n, length in (("q", S), ("k", T), ("v", T))}
    arrays["nonpad"] = np.array([3, 5], np.int64)
    keep = np.ones((B, T), np.int64)
    keep[1, 0] = 0  # row 1's first key is padding
    arrays["keep"], arrays["keep_b"] = keep, keep.astype(bool)
    for name, array in arrays.items():
        np.save(os.path.join(out, "inputs", name + ".npy"), array)
    np.save(os.path.join(out, "expected", "y.npy"), expected(arrays["q"], arrays["k"], arrays["v"], arrays["nonpad"], keep))


if __name__ == "__main__":
    main()

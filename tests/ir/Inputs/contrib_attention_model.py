"""Writes a one-node model of a com.microsoft attention op for the import tests.

    python contrib_attention_model.py KIND OUT.onnx

KIND: gqa (packed QKV, rotary, local window 3, a past, as onnxruntime-genai's builder writes it),
gqa_softcap, gqa_head_sink, rotary_offset (RotaryEmbedding with a one-element position), mha
(MultiHeadAttention with bias and a [B, T] key padding mask), attention (Attention with a [B]
mask_index and a past), attention_mask3d (a [B, S, T] mask_index: refused).
"""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64


def caches(half):
    angles = np.outer(np.arange(64.0), 1.0 / (10000.0 ** (np.arange(half) / half)))
    return [numpy_helper.from_array(np.cos(angles).astype(np.float32), "cos_cache"),
            numpy_helper.from_array(np.sin(angles).astype(np.float32), "sin_cache")]


def gqa(extra_attrs=None, extra_inputs=()):
    attrs = dict(num_heads=4, kv_num_heads=2, do_rotary=1, local_window_size=3, scale=0.25)
    attrs.update(extra_attrs or {})
    names = ["qkv", "", "", "past_key", "past_value", "seqlens_k", "total", "cos_cache", "sin_cache"]
    names += list(extra_inputs)
    node = helper.make_node("GroupQueryAttention", names, ["y", "present_key", "present_value"],
                            name="gqa", domain="com.microsoft", **attrs)
    inputs = [helper.make_tensor_value_info("qkv", F32, ["b", "s", 128]),
              helper.make_tensor_value_info("past_key", F32, ["b", 2, "p", 16]),
              helper.make_tensor_value_info("past_value", F32, ["b", 2, "p", 16]),
              helper.make_tensor_value_info("seqlens_k", I32, ["b"]),
              helper.make_tensor_value_info("total", I32, [])]
    inputs += [helper.make_tensor_value_info(n, F32, [4]) for n in extra_inputs if n]
    outputs = [helper.make_tensor_value_info("y", F32, ["b", "s", 64]),
               helper.make_tensor_value_info("present_key", F32, ["b", 2, "t", 16]),
               helper.make_tensor_value_info("present_value", F32, ["b", 2, "t", 16])]
    return node, inputs, outputs, caches(8)


def rotary_offset():
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos_cache", "sin_cache"], ["y"],
                            name="rope", domain="com.microsoft")
    inputs = [helper.make_tensor_value_info("x", F32, ["b", "s", 64]),
              helper.make_tensor_value_info("pos", I64, [1])]
    return node, inputs, [helper.make_tensor_value_info("y", F32, ["b", "s", 64])], caches(8)


def mha():
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v", "bias", "mask"], ["y"], name="mha",
                            domain="com.microsoft", num_heads=2)
    inputs = [helper.make_tensor_value_info(n, F32, ["b", "s", 16]) for n in ("q", "k", "v")]
    inputs.append(helper.make_tensor_value_info("mask", I32, ["b", "s"]))
    bias = numpy_helper.from_array(np.zeros(48, np.float32), "bias")
    return node, inputs, [helper.make_tensor_value_info("y", F32, ["b", "s", 16])], [bias]


def attention(mask_rank=1):
    node = helper.make_node("Attention", ["x", "w", "bias", "mask", "past"], ["y", "present"],
                            name="attn", domain="com.microsoft", num_heads=2, unidirectional=1)
    mask_shape = {1: ["b"], 3: ["b", "s", "t"]}[mask_rank]
    inputs = [helper.make_tensor_value_info("x", F32, ["b", "s", 16]),
              helper.make_tensor_value_info("mask", I32, mask_shape),
              helper.make_tensor_value_info("past", F32, [2, "b", 2, "p", 8])]
    outputs = [helper.make_tensor_value_info("y", F32, ["b", "s", 16]),
               helper.make_tensor_value_info("present", F32, [2, "b", 2, "t", 8])]
    weights = [numpy_helper.from_array(np.zeros((16, 48), np.float32), "w"),
               numpy_helper.from_array(np.zeros(48, np.float32), "bias")]
    return node, inputs, outputs, weights


KINDS = {
    "gqa": gqa,
    "gqa_softcap": lambda: gqa({"softcap": 30.0}),
    "gqa_head_sink": lambda: gqa(extra_inputs=("", "", "head_sink")),
    "rotary_offset": rotary_offset,
    "mha": mha,
    "attention": attention,
    "attention_mask3d": lambda: attention(3),
}

node, inputs, outputs, initializers = KINDS[sys.argv[1]]()
graph = helper.make_graph([node], sys.argv[1], inputs, outputs, initializer=initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 8
save(model, sys.argv[2])

"""Small self-attention models whose masks are computed from the sequence length alone, for the
proof of shape-only masks in fuse-attention (passes/attention/masks/AttentionMasks.h): a mask becomes
`is_causal` / `window = r` only when that holds at every length, anything else stays a mask
operand computed at run time. Each model is tested at lengths below, at and above its width.

    band120       |i - j| <= 120 (Abs of a Range difference, compared, Where -inf)   -> window = 120
    sliding128    causal window: j <= i and i - j < 128 (Or of two comparisons)      -> is_causal, window = 127
    sliding4096   the same at Mistral's width 4096, additive 0 / finfo.min           -> is_causal, window = 4095
    block_local   i / 128 == j / 128 (block-diagonal): not a band                      -> operand
    past_causal   queries of x, keys of [past; x]: j <= i + past (lengths differ)    -> operand
    last_keys     only the last 128 keys are visible: depends on the length           -> operand
    band120_torch the r = 120 band written in torch (arange, abs, masked_fill) and exported
    fill_distilbert  padding from attention_mask, masked_fill(mask == 0, finfo.min)  -> operand, mask_fill
    fill_gpt2     causal Where(j > i, finfo.min) then + (1 - mask) * finfo.min        -> is_causal, operand,
                  mask_fill (both test with a batch row whose every key is padding)

Graphs are written with onnx.helper (weights from numpy's default_rng, fixed seeds), except the
torch one, exported with the TorchScript exporter.
"""

import math

import numpy as np
import onnx
from onnx import TensorProto, helper

from handbuilt_models import GraphBuilder


def _float_input(name, shape):
    return {"name": name, "dtype": "float32", "shape": shape, "generator": {"kind": "normal"}}


def _ints(g: GraphBuilder, name: str, values) -> str:
    return g.const(name, np.array(values, np.int64))


class MaskGraph:
    """The integer positions every mask below is built from, as exporters compute them:
    Shape -> Gather -> Range, then Unsqueeze to a column (queries) and a row (keys)."""

    def __init__(self, g: GraphBuilder, queries: str, keys: str):
        self.g = g
        self.q_len = g.op("Gather", [g.op("Shape", [queries], "q_shape"), _ints(g, "c.one", 1)],
                          "q_len", axis=0)
        self.kv_len = self.q_len if keys == queries else g.op(
            "Gather", [g.op("Shape", [keys], "kv_shape"), _ints(g, "c.one_kv", 1)], "kv_len", axis=0)
        zero, one = _ints(g, "c.zero", 0), _ints(g, "c.step", 1)
        self.q_pos = g.op("Range", [zero, self.q_len, one], "q_pos")
        self.kv_pos = g.op("Range", [zero, self.kv_len, one], "kv_pos")
        self.i = g.op("Unsqueeze", [self.q_pos, _ints(g, "c.axes1", [1])], "i")    # [Sq, 1]
        self.j = g.op("Unsqueeze", [self.kv_pos, _ints(g, "c.axes0", [0])], "j")   # [1, Skv]

    def scalar(self, name, value):
        return _ints(self.g, name, value)


def band120_mask(m: MaskGraph):
    """Hidden where |i - j| > 120: the issue's reproducer."""
    g = m.g
    distance = g.op("Abs", [g.op("Sub", [m.i, m.j], "i_minus_j")], "distance")
    return "hidden", g.op("Greater", [distance, m.scalar("c.r120", 120)], "outside_band")


def sliding_mask(width):
    def build(m: MaskGraph):
        """Hidden where j > i (future) or i - j >= width (too far back)."""
        g = m.g
        future = g.op("Greater", [m.j, m.i], "future")
        too_old = g.op("GreaterOrEqual", [g.op("Sub", [m.i, m.j], "age"), m.scalar("c.width", width)],
                       "too_old")
        return "hidden", g.op("Or", [future, too_old], "outside_window")
    return build


def sliding_additive_mask(width):
    def build(m: MaskGraph):
        """HF/Mistral style: visible = (j <= i) and (j > i - width); additive 0 / finfo.min."""
        g = m.g
        not_future = g.op("LessOrEqual", [m.j, m.i], "not_future")
        recent = g.op("Greater", [m.j, g.op("Sub", [m.i, m.scalar("c.width", width)], "oldest")], "recent")
        visible = g.op("And", [not_future, recent], "visible")
        lowest = g.const("c.finfo_min", np.array(np.finfo(np.float32).min, np.float32))
        zero = g.const("c.fzero", np.array(0.0, np.float32))
        return "additive", g.op("Where", [visible, zero, lowest], "window_bias")
    return build


def block_local_mask(block):
    def build(m: MaskGraph):
        """Visible where i and j fall in the same block of `block` positions."""
        g = m.g
        size = m.scalar("c.block", block)
        same = g.op("Equal", [g.op("Div", [m.i, size], "i_block"), g.op("Div", [m.j, size], "j_block")],
                    "same_block")
        return "visible", same
    return build


def past_causal_mask(m: MaskGraph):
    """Query i sits at position i + past: it sees keys j <= i + past."""
    g = m.g
    past = g.op("Sub", [m.kv_len, m.q_len], "past_len")
    return "hidden", g.op("Greater", [m.j, g.op("Add", [m.i, past], "q_position")], "future")


def last_keys_mask(count):
    def build(m: MaskGraph):
        """Every query sees only the last `count` keys: j >= S - count."""
        g = m.g
        first = g.op("Sub", [m.kv_len, m.scalar("c.count", count)], "first_visible")
        return "visible", g.op("GreaterOrEqual", [m.j, first], "recent_keys")
    return build


def make_masked_encoder(name: str, mask_builder, hidden: int = 32, heads: int = 2, layers: int = 2,
                        with_past: bool = False, seed: int = 0, fill: float = -np.inf,
                        extra_inputs=()) -> onnx.ModelProto:
    """`layers` residual self-attention layers on x f32[batch, seq, hidden] (pre-LN, LayerNorm op),
    every layer masked by the same shape-only mask:

        x ─ LayerNorm ─ MatMul q/k/v ─ Reshape ─ Transpose ─ MatMul ─ Div ─ mask ─ Softmax ─ MatMul
          ─ Transpose ─ Reshape ─ MatMul ─ Add(x)
    With `with_past`, keys and values also read a prefix past f32[batch, past, hidden] (its
    projections put before those of x), so there are past + seq keys. A Where mask fills `fill`;
    the builder may return a list of (encoding, mask), applied in order, and `extra_inputs`
    (value infos) are graph inputs it reads.
    """
    g = GraphBuilder(np.random.default_rng(seed))
    head_dim = hidden // heads
    w_scale = 1.0 / math.sqrt(hidden)
    x = "x"
    context_source = g.op("Concat", ["past", x], "past_and_x", axis=1) if with_past else x
    m = MaskGraph(g, x, context_source)
    masks = mask_builder(m)
    masks = masks if isinstance(masks, list) else [masks]
    minus_inf = g.const("c.minus_inf", np.array(fill, np.float32))
    split = _ints(g, "c.split_heads", [0, 0, heads, head_dim])
    merge = _ints(g, "c.merge_heads", [0, 0, hidden])
    sqrt_d = g.const("c.sqrt_head_dim", np.array(math.sqrt(head_dim), np.float32))

    for layer in range(layers):
        gamma = g.const(f"l{layer}.ln.weight", (1.0 + 0.2 * g.rng.standard_normal(hidden)).astype(np.float32))
        beta = g.const(f"l{layer}.ln.bias", (0.1 * g.rng.standard_normal(hidden)).astype(np.float32))
        h = g.op("LayerNormalization", [x, gamma, beta], f"l{layer}_ln", axis=-1, epsilon=1e-5)
        kv_in = h
        if with_past:
            kv_in = g.op("LayerNormalization", [context_source, gamma, beta], f"l{layer}_ln_kv", axis=-1,
                         epsilon=1e-5)

        def project(t, which):
            return g.op("MatMul", [t, g.weight(f"l{layer}.{which}", (hidden, hidden), w_scale)], f"l{layer}_{which}")

        q = g.op("Transpose", [g.op("Reshape", [project(h, "q"), split])], f"l{layer}_q_bhsd", perm=[0, 2, 1, 3])
        k_t = g.op("Transpose", [g.op("Reshape", [project(kv_in, "k"), split])], f"l{layer}_k_bhds",
                   perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [project(kv_in, "v"), split])], f"l{layer}_v_bhsd",
                 perm=[0, 2, 1, 3])
        scores = g.op("Div", [g.op("MatMul", [q, k_t], f"l{layer}_scores"), sqrt_d], f"l{layer}_scaled")
        for encoding, mask in masks:
            if encoding == "hidden":
                scores = g.op("Where", [mask, minus_inf, scores], f"l{layer}_masked")
            elif encoding == "visible":
                scores = g.op("Where", [mask, scores, minus_inf], f"l{layer}_masked")
            else:
                scores = g.op("Add", [scores, mask], f"l{layer}_masked")
        probs = g.op("Softmax", [scores], f"l{layer}_probs", axis=-1)
        attended = g.op("Transpose", [g.op("MatMul", [probs, v], f"l{layer}_context")], f"l{layer}_bshd",
                        perm=[0, 2, 1, 3])
        attended = g.op("Reshape", [attended, merge], f"l{layer}_merged")
        out = g.op("MatMul", [attended, g.weight(f"l{layer}.o", (hidden, hidden), w_scale)], f"l{layer}_out")
        x = g.op("Add", [x, out], f"l{layer}_residual")
    g.nodes[-1].output[0] = "y"

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])]
    inputs += list(extra_inputs)
    if with_past:
        inputs.append(helper.make_tensor_value_info("past", TensorProto.FLOAT, ["batch", "past", hidden]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])]
    return g.model(name, inputs, outputs, opset=17)


def make_band120_torch() -> onnx.ModelProto:
    """The r = 120 band written in torch: positions from arange, |i - j| > 120 masked with -inf.
    Exported by the TorchScript exporter at opset 17 to a temporary file and read back."""
    import os
    import tempfile

    import torch

    class BandAttention(torch.nn.Module):
        def __init__(self, hidden=32, heads=2, layers=2, radius=120):
            super().__init__()
            self.heads, self.radius = heads, radius
            self.qkv = torch.nn.ModuleList(torch.nn.Linear(hidden, 3 * hidden) for _ in range(layers))
            self.out = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden) for _ in range(layers))

        def forward(self, x):
            batch, seq, hidden = x.shape
            positions = torch.arange(seq)
            outside = (positions[:, None] - positions[None, :]).abs() > self.radius
            head_dim = hidden // self.heads
            for qkv, out in zip(self.qkv, self.out):
                q, k, v = qkv(x).split(hidden, dim=-1)
                q, k, v = (t.reshape(batch, seq, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
                scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim)
                probs = torch.softmax(scores.masked_fill(outside, float("-inf")), dim=-1)
                attended = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, hidden)
                x = x + out(attended)
            return x

    torch.manual_seed(120)
    module = BandAttention().eval()
    handle, path = tempfile.mkstemp(suffix=".onnx")
    os.close(handle)
    try:
        torch.onnx.export(module, (torch.randn(2, 7, 32),), path, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
                          opset_version=17, do_constant_folding=True)
        return onnx.load(path)
    finally:
        os.remove(path)


FINFO_MIN = float(np.finfo(np.float32).min)


def _padding(m: MaskGraph):
    """attention_mask i64[batch, seq] == 0, as [batch, 1, 1, seq]: the keys HF hides."""
    g = m.g
    padded = g.op("Equal", ["attention_mask", _ints(g, "c.pad_zero", 0)], "is_padding")
    return g.op("Unsqueeze", [padded, _ints(g, "c.axes12", [1, 2])], "padding_4d")


def distilbert_fill_mask(m: MaskGraph):
    """HF DistilBERT: scores.masked_fill(mask == 0, finfo.min), a Where on input data."""
    return "hidden", _padding(m)


def gpt2_fill_masks(m: MaskGraph):
    """HF GPT-2: Where(causal, scores, finfo.min) (here Where(j > i, finfo.min, scores)), then the
    additive (1 - mask) * finfo.min of the padding."""
    g = m.g
    future = g.op("Greater", [m.j, m.i], "future")
    keep = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", _ints(g, "c.axes12", [1, 2])], "mask_4d")],
                "mask_f32", to=TensorProto.FLOAT)
    inverted = g.op("Sub", [g.const("c.one_f", np.array(1.0, np.float32)), keep], "inverted")
    additive = g.op("Mul", [inverted, g.const("c.finfo_min", np.array(FINFO_MIN, np.float32))], "additive")
    return [("hidden", future), ("additive", additive)]


def _mask_input():
    return helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])


def _shapes(*lengths, batch=1, **extra):
    return [dict({"batch": batch, "seq": n}, **extra) for n in lengths]


X32 = [_float_input("x", ["batch", "seq", 32])]
# attention_mask with the last row of a batch of 2 or more all padding (see model_inputs).
MASK_WITH_EMPTY_ROW = {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "seq"],
                       "generator": {"kind": "attention_mask", "empty_last_row": True}}
X16 = [_float_input("x", ["batch", "seq", 16])]

# name: (maker, opset, description, inputs, test shapes), as build_models.HANDBUILT.
MODELS = {
    "mask_band120": (lambda: make_masked_encoder("mask_band120", band120_mask, seed=120), 17,
                     "2 layers, band |i - j| <= 120 from Abs(Range - Range) > 120, Where -inf",
                     X32, _shapes(50, 120, 121, 300)),
    "mask_sliding128": (lambda: make_masked_encoder("mask_sliding128", sliding_mask(128), seed=128), 17,
                        "2 layers, sliding causal window of 128 (j > i or i - j >= 128 hidden)",
                        X32, _shapes(50, 128, 129, 300)),
    "mask_sliding4096": (lambda: make_masked_encoder("mask_sliding4096", sliding_additive_mask(4096), hidden=16,
                                                     heads=1, layers=1, seed=4096), 17,
                         "1 layer, 1 head, sliding causal window of 4096, additive finfo.min",
                         X16, _shapes(100, 4096, 4200)),
    "mask_block_local": (lambda: make_masked_encoder("mask_block_local", block_local_mask(128), seed=16), 17,
                         "2 layers, block-local attention in blocks of 128 (i / 128 == j / 128)",
                         X32, _shapes(50, 128, 129, 300)),
    "mask_past_causal": (lambda: make_masked_encoder("mask_past_causal", past_causal_mask, with_past=True,
                                                     seed=7), 17,
                         "2 layers, keys of [past; x], causal offset by the past length",
                         X32 + [_float_input("past", ["batch", "past", 32])],
                         [{"batch": 1, "seq": 5, "past": 3}, {"batch": 2, "seq": 16, "past": 1},
                          {"batch": 1, "seq": 129, "past": 40}]),
    "mask_last_keys": (lambda: make_masked_encoder("mask_last_keys", last_keys_mask(128), seed=10), 17,
                       "2 layers, every query sees only the last 128 keys",
                       X32, _shapes(50, 128, 129, 300)),
    "mask_band120_torch": (make_band120_torch, 17,
                           "2 layers exported from torch, band |i - j| <= 120 by arange/abs/masked_fill",
                           X32, _shapes(50, 120, 121, 300)),
    "mask_fill_distilbert": (lambda: make_masked_encoder("mask_fill_distilbert", distilbert_fill_mask, seed=31,
                                                         fill=FINFO_MIN, extra_inputs=[_mask_input()]), 17,
                             "2 layers, padding masked_fill(mask == 0, finfo.min), a row all padding",
                             X32 + [MASK_WITH_EMPTY_ROW], _shapes(7, 30, 129, batch=3)),
    "mask_fill_gpt2": (lambda: make_masked_encoder("mask_fill_gpt2", gpt2_fill_masks, seed=32, fill=FINFO_MIN,
                                                   extra_inputs=[_mask_input()]), 17,
                       "2 layers, causal Where finfo.min then + (1 - mask) * finfo.min, a row all padding",
                       X32 + [MASK_WITH_EMPTY_ROW], _shapes(7, 30, 129, batch=3)),
}

# What -O2 makes of each model's attention blocks (tests/models/test_mask_models.py): how many
# Attention ops, their mask attributes, and, for a mask that stays an operand, the reason
# `--explain` gives for not turning it into an attribute.
_OPERAND = {"is_causal": None, "window": None}
EXPECTED_ATTENTION = {
    "mask_band120": {"count": 2, "attributes": {"is_causal": None, "window": 120}, "operand": None},
    "mask_band120_torch": {"count": 2, "attributes": {"is_causal": None, "window": 120}, "operand": None},
    "mask_sliding128": {"count": 2, "attributes": {"is_causal": 1, "window": 127}, "operand": None},
    "mask_sliding4096": {"count": 1, "attributes": {"is_causal": 1, "window": 4095}, "operand": None},
    "mask_block_local": {"count": 2, "attributes": _OPERAND,
                         "operand": "the mask depends on the query and key positions, not only on their distance"},
    "mask_past_causal": {"count": 2, "attributes": _OPERAND, "operand": "query and key lengths differ"},
    "mask_last_keys": {"count": 2, "attributes": _OPERAND, "operand": "the mask depends on the sequence length"},
    # A finite Where fill: the Attention says so (mask_fill), so fully padded rows stay uniform.
    "mask_fill_distilbert": {"count": 2, "attributes": _OPERAND, "operand": "mask depends on input data",
                             "mask_fill": True},
    "mask_fill_gpt2": {"count": 2, "attributes": {"is_causal": 1, "window": None},
                       "operand": "mask depends on input data", "mask_fill": True},
}

# What -O2 fuses in each (tests/models/test_models.py::test_fusions, by family = model name).
EXPECTED_FUSIONS = {
    name: {"Attention": EXPECTED_ATTENTION[name]["count"], "LayerNorm": layer_norms}
    for name, layer_norms in [("mask_band120", 2), ("mask_band120_torch", 0), ("mask_sliding128", 2),
                              ("mask_sliding4096", 1), ("mask_block_local", 2), ("mask_past_causal", 4),
                              ("mask_last_keys", 2), ("mask_fill_distilbert", 2), ("mask_fill_gpt2", 2)]
}

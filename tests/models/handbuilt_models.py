"""Transformer blocks written directly with onnx.helper, for graph forms no torch exporter of
ours emits: the opset-23 Attention / RMSNormalization / RotaryEmbedding ops, and a windowed
(band) attention mask sliced from a constant by Shape/Slice.

Weights come from numpy's default_rng with fixed seeds.
"""

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


# Rows of the rotary caches and of the stored band mask: the model tests' differential check
# runs sequences up to 600 tokens, so no table may stop short of that.
MAX_POSITIONS = 1024


class GraphBuilder:
    """Collects nodes and initializers; names every node and intermediate value uniquely."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes = []
        self.initializers = []
        self._counter = 0

    def fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name: str, shape, scale: float) -> str:
        return self.const(name, (scale * self.rng.standard_normal(shape)).astype(np.float32))

    def op(self, op_type: str, inputs, hint: str = None, outputs: int = 1, **attrs):
        hint = hint or op_type.lower()
        names = [self.fresh(hint) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=self.fresh(op_type), **attrs))
        return names[0] if outputs == 1 else names

    def model(self, graph_name: str, inputs, outputs, opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, self.initializers)
        opsets = [helper.make_opsetid("", opset)]
        # The lowest IR version that can carry this opset: what the pinned onnx would pick for
        # such a model, and readable by older consumers (libonnx 1.12 on the C++ side).
        model = helper.make_model(graph, opset_imports=opsets, producer_name="onnxc-tests",
                                  ir_version=helper.find_min_ir_version_for(opsets))
        onnx.checker.check_model(model, full_check=True)
        return model


def rotary_caches(max_positions: int, rotary_dim: int, base: float = 10000.0):
    inv_freq = 1.0 / (base ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim))
    angles = np.outer(np.arange(max_positions, dtype=np.float64), inv_freq)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def make_attention_op23(hidden: int = 64, heads: int = 4, max_positions: int = MAX_POSITIONS,
                        seed: int = 23) -> onnx.ModelProto:
    """Two pre-RMSNorm attention layers on x f32[batch, seq, hidden], using opset-23 ops.

        x ─ RMSNormalization ─ MatMul q/k/v ─ q,k: Reshape ─ Transpose ─ RotaryEmbedding (4-D)
                             ─ Transpose ─ Reshape ─ Attention (3-D, q/kv_num_heads) ─ MatMul ─ Add(x)
    Layer 0: multi-head (kv heads = q heads), non-default scale, no mask.
    Layer 1: grouped-query (kv heads = heads/2), is_causal=1.
    Then a final RMSNormalization and an output MatMul. position_ids for RotaryEmbedding are
    built in the graph from Shape(x): Range(0, seq) expanded to [batch, seq].
    """
    g = GraphBuilder(np.random.default_rng(seed))
    head_dim = hidden // heads
    w_scale = 1.0 / math.sqrt(hidden)

    cos, sin = rotary_caches(max_positions, head_dim)
    cos_cache = g.const("rope.cos_cache", cos)
    sin_cache = g.const("rope.sin_cache", sin)

    x_shape = g.op("Shape", ["x"], "x_shape")
    batch_seq = g.op("Slice", [x_shape, g.const("c.start0", np.array([0], np.int64)),
                               g.const("c.end2", np.array([2], np.int64))], "batch_seq")
    seq_len = g.op("Gather", [x_shape, g.const("c.index1", np.array(1, np.int64))], "seq_len", axis=0)
    positions = g.op("Range", [g.const("c.zero", np.array(0, np.int64)), seq_len,
                               g.const("c.one", np.array(1, np.int64))], "positions")
    positions = g.op("Unsqueeze", [positions, g.const("c.axes0", np.array([0], np.int64))], "positions_2d")
    position_ids = g.op("Expand", [positions, batch_seq], "position_ids")

    split_shape = {}
    merge_shape = g.const("c.merge_heads", np.array([0, 0, -1], np.int64))

    def rope(t: str, num_heads: int) -> str:
        if num_heads not in split_shape:
            split_shape[num_heads] = g.const(f"c.split_{num_heads}_heads",
                                             np.array([0, 0, num_heads, head_dim], np.int64))
        t = g.op("Reshape", [t, split_shape[num_heads]], "heads")
        t = g.op("Transpose", [t], "bhsd", perm=[0, 2, 1, 3])
        t = g.op("RotaryEmbedding", [t, cos_cache, sin_cache, position_ids], "rotated")
        t = g.op("Transpose", [t], "bshd", perm=[0, 2, 1, 3])
        return g.op("Reshape", [t, merge_shape], "merged")

    x = "x"
    layers = [dict(kv_heads=heads, attrs=dict(scale=0.2)),
              dict(kv_heads=heads // 2, attrs=dict(is_causal=1))]
    for i, layer in enumerate(layers):
        kv_hidden = layer["kv_heads"] * head_dim
        gamma = g.const(f"layer{i}.norm.scale", (1.0 + 0.2 * g.rng.standard_normal(hidden)).astype(np.float32))
        h = g.op("RMSNormalization", [x, gamma], f"layer{i}_norm", axis=-1, epsilon=1e-5)
        q = g.op("MatMul", [h, g.weight(f"layer{i}.wq", (hidden, hidden), w_scale)], f"layer{i}_q")
        k = g.op("MatMul", [h, g.weight(f"layer{i}.wk", (hidden, kv_hidden), w_scale)], f"layer{i}_k")
        v = g.op("MatMul", [h, g.weight(f"layer{i}.wv", (hidden, kv_hidden), w_scale)], f"layer{i}_v")
        q, k = rope(q, heads), rope(k, layer["kv_heads"])
        attended = g.op("Attention", [q, k, v], f"layer{i}_attention", q_num_heads=heads,
                        kv_num_heads=layer["kv_heads"], **layer["attrs"])
        out = g.op("MatMul", [attended, g.weight(f"layer{i}.wo", (hidden, hidden), w_scale)], f"layer{i}_o")
        x = g.op("Add", [x, out], f"layer{i}_residual")

    gamma = g.const("final_norm.scale", (1.0 + 0.2 * g.rng.standard_normal(hidden)).astype(np.float32))
    h = g.op("RMSNormalization", [x, gamma], "final_norm", axis=-1, epsilon=1e-5)
    g.nodes.append(helper.make_node("MatMul", [h, g.weight("head.w", (hidden, hidden), w_scale)], ["y"],
                                    name="head_MatMul"))

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])]
    return g.model("attention_op23", inputs, outputs, opset=23)


def make_windowed_attn(hidden: int = 64, heads: int = 4, window: int = 2,
                       max_positions: int = MAX_POSITIONS, seed: int = 17) -> onnx.ModelProto:
    """Pre-LN self-attention with a band mask (|i - j| <= window) on x f32[batch, seq, hidden].

        band [max, max] const ─ Slice(ends = Concat(Shape(x)[1:2] twice)) ─┐
        x ─ Cast ─ ReduceMean ─ Sub ─ Pow ─ ReduceMean ─ Add ─ Sqrt ─ Div ─ Cast ─ Mul ─ Add   (LayerNorm)
          ─ MatMul+Add q/k/v ─ Reshape ─ Transpose ─ MatMul ─ Div ─ Add(mask) ─ Softmax ─ MatMul
          ─ Transpose ─ Reshape ─ MatMul+Add ─ Add(x)
    """
    g = GraphBuilder(np.random.default_rng(seed))
    head_dim = hidden // heads
    w_scale = 1.0 / math.sqrt(hidden)

    # Decomposed LayerNorm as mixed-precision exporters write it: Cast to float32 around the stats.
    xf = g.op("Cast", ["x"], "ln_in_f32", to=TensorProto.FLOAT)
    mean = g.op("ReduceMean", [xf], "ln_mean", axes=[-1], keepdims=1)
    centered = g.op("Sub", [xf, mean], "ln_centered")
    squared = g.op("Pow", [centered, g.const("c.two", np.array(2.0, np.float32))], "ln_squared")
    variance = g.op("ReduceMean", [squared], "ln_variance", axes=[-1], keepdims=1)
    variance = g.op("Add", [variance, g.const("c.ln_eps", np.array(1e-5, np.float32))], "ln_variance_eps")
    normalized = g.op("Div", [centered, g.op("Sqrt", [variance], "ln_std")], "ln_normalized")
    normalized = g.op("Cast", [normalized], "ln_out_f32", to=TensorProto.FLOAT)
    gamma = g.const("ln.weight", (1.0 + 0.2 * g.rng.standard_normal(hidden)).astype(np.float32))
    beta = g.const("ln.bias", (0.1 * g.rng.standard_normal(hidden)).astype(np.float32))
    h = g.op("Add", [g.op("Mul", [normalized, gamma], "ln_scaled"), beta], "ln_out")

    def linear(t: str, name: str) -> str:
        t = g.op("MatMul", [t, g.weight(f"{name}.weight", (hidden, hidden), w_scale)], f"{name}_mm")
        return g.op("Add", [t, g.weight(f"{name}.bias", (hidden,), 0.1)], name)

    split_heads = g.const("c.split_heads", np.array([0, 0, heads, head_dim], np.int64))
    q = g.op("Transpose", [g.op("Reshape", [linear(h, "q"), split_heads])], "q_bhsd", perm=[0, 2, 1, 3])
    k_t = g.op("Transpose", [g.op("Reshape", [linear(h, "k"), split_heads])], "k_bhds", perm=[0, 2, 3, 1])
    v = g.op("Transpose", [g.op("Reshape", [linear(h, "v"), split_heads])], "v_bhsd", perm=[0, 2, 1, 3])
    scores = g.op("MatMul", [q, k_t], "scores")
    scores = g.op("Div", [scores, g.const("c.sqrt_head_dim", np.array(math.sqrt(head_dim), np.float32))],
                  "scores_scaled")

    index = np.arange(max_positions)
    band = np.where(np.abs(index[:, None] - index[None, :]) <= window, 0.0, -10000.0).astype(np.float32)
    seq_1d = g.op("Shape", ["x"], "seq_1d", start=1, end=2)
    mask_ends = g.op("Concat", [seq_1d, seq_1d], "mask_ends", axis=0)
    mask = g.op("Slice", [g.const("band_mask", band), g.const("c.starts00", np.array([0, 0], np.int64)),
                          mask_ends, g.const("c.axes01", np.array([0, 1], np.int64))], "window_mask")
    scores = g.op("Add", [scores, mask], "scores_masked")
    probs = g.op("Softmax", [scores], "probs", axis=-1)
    context = g.op("Transpose", [g.op("MatMul", [probs, v], "context_bhsd")], "context_bshd", perm=[0, 2, 1, 3])
    context = g.op("Reshape", [context, g.const("c.merge_heads", np.array([0, 0, hidden], np.int64))], "context")
    # A TensorFlow-style output name: `onnxc run` must write it to output_y_0.npy.
    output_name = "output/y:0"
    g.nodes.append(helper.make_node("Add", ["x", linear(context, "o")], [output_name], name="residual_Add"))

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])]
    outputs = [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", "seq", hidden])]
    return g.model("windowed_attn", inputs, outputs, opset=17)


# The opset-23 decoder with its own KV cache: its sizes, shared with build_models' registration.
OP23_PAST_VOCAB = 384
OP23_PAST_HIDDEN = 64
OP23_PAST_HEADS = 4
OP23_PAST_KV_HEADS = (4, 2)  # layer 0 multi-head, layer 1 grouped-query
OP23_PAST_HEAD_DIM = 16


def make_attention_op23_past(max_positions: int = MAX_POSITIONS, seed: int = 2323,
                             fixed_length=None, with_mask: bool = False) -> onnx.ModelProto:
    """A two-layer decoder whose Attention ops (opset 23) keep the KV cache themselves:

        input_ids i64[batch, seq], past_key_N / past_value_N f32[batch, kv_heads, past, 16]
          -> logits f32[batch, seq, 384], present_key_N / present_value_N [batch, kv_heads, past+seq, 16]

        ids ─ Gather(embedding) ─ per layer: RMSNormalization ─ MatMul q/k/v ─ heads ─
              Attention(q, k, v, , past_key_N, past_value_N; is_causal=1) ─ MatMul ─ Add(x)
              ─ RMSNormalization ─ MatMul ─ Relu ─ MatMul ─ Add ─ RMSNormalization ─ MatMul(LM head)

    Layer 0 passes 4-D [batch, heads, seq, 16] Q/K/V, rotated by RotaryEmbedding at positions
    past, past + 1, ... (Range from the cache's length, Shape(past_key_0)[2]); layer 1 the 3-D
    form [batch, seq, heads * 16] with q_num_heads 4 / kv_num_heads 2. The causal mask is the op's,
    its diagonal offset by the past (the spec's reference: key j hidden when j > past + i).

    With `fixed_length` (a number or a symbol name) the same decoder, the same weights, keeps
    opset 24's fixed-length cache instead: past_key_N / past_value_N and present_key_N /
    present_value_N are [batch, kv_heads, fixed_length, 16], present = TensorScatter(past, new,
    write_indices) with write_indices i64[batch] an input (each row's cached positions), the
    positions write_indices + 0 .. seq - 1, and Attention-24 reads the presents with
    nonpad_kv_seqlen = write_indices + seq and is_causal (bottom-right on that path, per the
    spec's errata). Both layers pass 4-D Q, K and V there. `with_mask` takes the inputs an HF decoder
    has instead: attention_mask i64[batch, fixed_length] (1: a key to attend, given to the Attention
    as a bool mask) and position_ids i64[batch, seq].
    """
    g = GraphBuilder(np.random.default_rng(seed))
    hidden, heads, head_dim = OP23_PAST_HIDDEN, OP23_PAST_HEADS, OP23_PAST_HEAD_DIM
    w_scale = 1.0 / math.sqrt(hidden)

    cos, sin = rotary_caches(max_positions, head_dim)
    cos_cache = g.const("rope.cos_cache", cos)
    sin_cache = g.const("rope.sin_cache", sin)
    x = g.op("Gather", [g.weight("embed.weight", (OP23_PAST_VOCAB, hidden), 1.0), "input_ids"], "embedded", axis=0)

    # Positions past .. past + seq - 1 of the new tokens, [batch, seq].
    scalar = g.const("c.scalar_shape", np.array([], np.int64))
    seq_len = g.op("Reshape", [g.op("Shape", ["input_ids"], "seq_1d", start=1, end=2), scalar], "seq_len")
    if fixed_length is None:
        past_len = g.op("Reshape", [g.op("Shape", ["past_key_0"], "past_1d", start=2, end=3), scalar], "past_len")
        total_len = g.op("Add", [past_len, seq_len], "total_len")
        positions = g.op("Range", [past_len, total_len, g.const("c.one", np.array(1, np.int64))], "positions")
        position_ids = g.op("Expand", [g.op("Unsqueeze", [positions, g.const("c.axes0", np.array([0], np.int64))]),
                                       g.op("Shape", ["input_ids"], "ids_shape")], "position_ids")
    else:
        if with_mask:
            position_ids = "position_ids"
        else:
            offsets = g.op("Range", [g.const("c.zero", np.array(0, np.int64)), seq_len,
                                     g.const("c.one", np.array(1, np.int64))], "offsets")
            starts = g.op("Unsqueeze", ["write_indices", g.const("c.axes1", np.array([1], np.int64))], "starts")
            position_ids = g.op("Add", [starts, offsets], "position_ids")
        nonpad = g.op("Add", ["write_indices", seq_len], "nonpad_kv_seqlen")
        visible = None
        if with_mask:
            visible = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", g.const("c.axes12", np.array([1, 2], np.int64))],
                                         "mask_b11t")], "visible", to=TensorProto.BOOL)

    def norm(t: str, name: str) -> str:
        gamma = g.const(f"{name}.scale", (1.0 + 0.2 * g.rng.standard_normal(hidden)).astype(np.float32))
        return g.op("RMSNormalization", [t, gamma], name, axis=-1, epsilon=1e-5)

    def split(t: str, num_heads: int) -> str:
        shape = g.const(g.fresh("c.split_heads"), np.array([0, 0, num_heads, head_dim], np.int64))
        return g.op("Transpose", [g.op("Reshape", [t, shape], "bshd")], "bhsd", perm=[0, 2, 1, 3])

    presents = []
    for i, kv_heads in enumerate(OP23_PAST_KV_HEADS):
        kv_hidden = kv_heads * head_dim
        h = norm(x, f"layer{i}.attn_norm")
        q = g.op("MatMul", [h, g.weight(f"layer{i}.wq", (hidden, hidden), w_scale)], f"layer{i}_q")
        k = g.op("MatMul", [h, g.weight(f"layer{i}.wk", (hidden, kv_hidden), w_scale)], f"layer{i}_k")
        v = g.op("MatMul", [h, g.weight(f"layer{i}.wv", (hidden, kv_hidden), w_scale)], f"layer{i}_v")
        present_key, present_value = f"present_key_{i}", f"present_value_{i}"
        if i == 0:
            q = g.op("RotaryEmbedding", [split(q, heads), cos_cache, sin_cache, position_ids], "q_rotated")
            k = g.op("RotaryEmbedding", [split(k, kv_heads), cos_cache, sin_cache, position_ids], "k_rotated")
            v = split(v, kv_heads)
            attrs = {}
        elif fixed_length is not None:  # onnxruntime wants K and V of Q's rank: 4-D, like the cache
            q, k, v = split(q, heads), split(k, kv_heads), split(v, kv_heads)
            attrs = {}
        else:
            attrs = dict(q_num_heads=heads, kv_num_heads=kv_heads)
        attended = g.fresh(f"layer{i}_attention")
        if fixed_length is None:
            g.nodes.append(helper.make_node(
                "Attention", [q, k, v, "", f"past_key_{i}", f"past_value_{i}"], [attended, present_key, present_value],
                name=f"layer{i}_Attention", is_causal=1, **attrs))
        else:
            for past, new, present in ((f"past_key_{i}", k, present_key), (f"past_value_{i}", v, present_value)):
                g.nodes.append(helper.make_node("TensorScatter", [past, new, "write_indices"], [present],
                                                name=f"{present}_TensorScatter"))
            g.nodes.append(helper.make_node(
                "Attention", [q, present_key, present_value, visible or "", "", "", nonpad], [attended],
                name=f"layer{i}_Attention", is_causal=1, **attrs))
        presents += [present_key, present_value]
        if i == 0 or fixed_length is not None:
            merged = g.op("Transpose", [attended], "context_bshd", perm=[0, 2, 1, 3])
            attended = g.op("Reshape", [merged, g.const(g.fresh("c.merge_heads"), np.array([0, 0, hidden], np.int64))],
                            "context")
        out = g.op("MatMul", [attended, g.weight(f"layer{i}.wo", (hidden, hidden), w_scale)], f"layer{i}_o")
        x = g.op("Add", [x, out], f"layer{i}_attn_residual")
        h = norm(x, f"layer{i}.mlp_norm")
        h = g.op("Relu", [g.op("MatMul", [h, g.weight(f"layer{i}.w1", (hidden, 2 * hidden), w_scale)])], "mlp_act")
        h = g.op("MatMul", [h, g.weight(f"layer{i}.w2", (2 * hidden, hidden), 1.0 / math.sqrt(2 * hidden))])
        x = g.op("Add", [x, h], f"layer{i}_mlp_residual")

    h = norm(x, "final_norm")
    g.nodes.append(helper.make_node("MatMul", [h, g.weight("lm_head.weight", (hidden, OP23_PAST_VOCAB), 1.0)],
                                    ["logits"], name="lm_head_MatMul"))

    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])]
    if fixed_length is not None:
        inputs.append(helper.make_tensor_value_info("write_indices", TensorProto.INT64, ["batch"]))
    if with_mask:
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", fixed_length]))
        inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"]))
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", OP23_PAST_VOCAB])]
    past, present = ("past", "past+seq") if fixed_length is None else (fixed_length, fixed_length)
    for i, kv_heads in enumerate(OP23_PAST_KV_HEADS):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_{kind}_{i}", TensorProto.FLOAT,
                                                        ["batch", kv_heads, past, head_dim]))
            outputs.append(helper.make_tensor_value_info(f"present_{kind}_{i}", TensorProto.FLOAT,
                                                         ["batch", kv_heads, present, head_dim]))
    if fixed_length is None:
        return g.model("attention_op23_past", inputs, outputs, opset=23)
    return g.model("attention_op24_fixed_cache", inputs, outputs, opset=24)

"""onnxruntime's attention contrib ops against onnxruntime itself.

Single-node graphs (onnx.helper) of com.microsoft RotaryEmbedding, GroupQueryAttention,
MultiHeadAttention and Attention, run by onnxc (the reference evaluator and the JIT at -O3,
both through `onnxc run`) and by onnxruntime on the same random inputs. GroupQueryAttention
is fed as onnxruntime-genai feeds it: seqlens_k = valid length - 1 per batch row and
total_sequence_length, on a first prompt (batch 2, one row right-padded: only its valid query
rows are compared, onnxruntime leaves the others unspecified) and on cached steps. The forms
onnxc refuses are checked to fail with one line naming the node, at import or (for the
shared past/present buffer) at run time.

    ONNXC=build/tools/onnxc .venv/bin/python -m pytest tests/genai/test_contrib_attention.py
"""

import os
import re
import subprocess
import tempfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 3e-5
# A sanitizer build (ONNXC_MODEL_CHECKS=passes) checks the importers through the reference
# evaluator only: the kernels the JIT emits are not instrumented.
BACKENDS = ["ref"] if os.environ.get("ONNXC_MODEL_CHECKS") == "passes" else ["ref", "jit"]
F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64


def onnxc_binary() -> str:
    path = os.environ.get("ONNXC", os.path.join(HERE, "..", "..", "build", "tools", "onnxc"))
    if not os.path.exists(path):
        pytest.skip(f"no onnxc binary at {path}")
    return path


def file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".npy"


def model_of(nodes, inputs, outputs, initializers=()):
    """A model importing com.microsoft 1; inputs/outputs: (name, type, shape)."""
    graph = helper.make_graph(
        list(nodes), "contrib",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


class Cases:
    """Independent single-node cases gathered into one model, so that onnxc compiles once for
    all of them: each case's names carry its prefix."""

    def __init__(self):
        self.nodes, self.inputs, self.outputs, self.initializers = [], [], [], []
        self.feeds, self.rows = {}, {}

    def add(self, nodes, inputs, outputs, initializers, feeds, rows=None):
        self.nodes += nodes
        self.inputs += inputs
        self.outputs += outputs
        self.initializers += initializers
        self.feeds.update(feeds)
        self.rows.update(rows or {})

    def model(self):
        return model_of(self.nodes, self.inputs, self.outputs, self.initializers)

    def output_names(self):
        return [name for name, _, _ in self.outputs]


def run_onnxc(path, feeds, backend, outputs):
    """(returncode, {output: array}, stderr) of `onnxc run`."""
    work = tempfile.mkdtemp(dir=os.path.dirname(path))
    command = [onnxc_binary(), "run", path, f"--backend={backend}", "--output-dir", work]
    for name, value in feeds.items():
        np.save(os.path.join(work, "in_" + file_name(name)), value)
        command += ["--input", f"{name}={os.path.join(work, 'in_' + file_name(name))}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        return result.returncode, {}, result.stderr
    return 0, {n: np.load(os.path.join(work, file_name(n))) for n in outputs}, result.stderr


def ort_run(path, feeds, outputs):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    return dict(zip(outputs, session.run(outputs, feeds)))


def compare(what, got, want, rows=None):
    """rows: a function (array) -> the part onnxruntime specifies."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, onnxruntime {want.shape}"
    if rows is not None:
        got, want = rows(got), rows(want)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    error = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    assert error <= TOLERANCE * scale, f"{what}: max abs error {error:.3g} (scale {scale:.3g})"


def check_against_ort(tmp_path, name, model, feeds, outputs, rows=None):
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    want = ort_run(path, feeds, outputs)
    for backend in BACKENDS:
        code, got, stderr = run_onnxc(path, feeds, backend, outputs)
        assert code == 0, f"{name} ({backend}): {stderr[-2000:]}"
        for output in outputs:
            compare(f"{name} {output} ({backend})", got[output], want[output],
                    rows.get(output) if rows else None)


def check_refused(tmp_path, name, model, feeds, pattern, backend="ref"):
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    code, _, stderr = run_onnxc(path, feeds, backend, [])
    assert code != 0, f"{name}: onnxc accepted it"
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and re.search(pattern, lines[0]), f"{name}: {stderr[-2000:]}"


def rng(seed):
    return np.random.default_rng(seed)


def rotary_caches(max_pos, half, prefix="", base=10000.0):
    inv = 1.0 / (base ** (np.arange(half, dtype=np.float64) / half))
    angles = np.outer(np.arange(max_pos, dtype=np.float64), inv)
    return (numpy_helper.from_array(np.cos(angles).astype(np.float32), prefix + "cos_cache"),
            numpy_helper.from_array(np.sin(angles).astype(np.float32), prefix + "sin_cache"))


# --- RotaryEmbedding ----------------------------------------------------------------------------

ROTARY_CASES = ["3d_heads", "3d_interleaved_offset", "3d_no_heads", "4d", "3d_partial"]


def add_rotary_case(cases, r, case):
    p = f"rope_{case}_"
    batch, seq, heads, head = 2, 5, 3, 16
    rotary = 8 if case == "3d_partial" else head
    cos, sin = rotary_caches(32, rotary // 2, p)
    attrs = {"interleaved": 1 if "interleaved" in case else 0}
    if case in ("3d_heads", "3d_interleaved_offset", "3d_partial"):
        attrs["num_heads"] = heads
    if case == "3d_partial":
        attrs["rotary_embedding_dim"] = rotary
    shape = [batch, heads, seq, head] if case == "4d" else [batch, seq, heads * head]
    x = r.standard_normal(shape).astype(np.float32)
    if "offset" in case:
        positions = np.array([7], dtype=np.int64)
    else:
        positions = r.integers(0, 32, size=(batch, seq)).astype(np.int64)
    node = helper.make_node("RotaryEmbedding", [p + "x", p + "pos", p + "cos_cache", p + "sin_cache"],
                            [p + "y"], name=p + "node", domain="com.microsoft", **attrs)
    cases.add([node], [(p + "x", F32, shape), (p + "pos", I64, list(positions.shape))],
              [(p + "y", F32, shape)], [cos, sin], {p + "x": x, p + "pos": positions})


def test_rotary_embedding(tmp_path):
    """Every RotaryEmbedding form in one model: 3-D with num_heads, interleaved with a
    one-element position offset, 3-D without num_heads, 4-D, and a partial rotary dim."""
    cases, r = Cases(), rng(1)
    for case in ROTARY_CASES:
        add_rotary_case(cases, r, case)
    check_against_ort(tmp_path, "rotary", cases.model(), cases.feeds, cases.output_names())


# --- GroupQueryAttention -------------------------------------------------------------------------

HEADS, KV_HEADS, HEAD = 4, 2, 16
GQA_OUTPUTS = ["output", "present_key", "present_value"]


def gqa_case(p="", packed=False, past=True, rotary=True, **attrs):
    """(nodes, inputs, outputs, initializers) of one GroupQueryAttention, its names prefixed."""
    b, s = p + "b", p + "s"
    inputs = [(p + "query", F32, [b, s, (HEADS + 2 * KV_HEADS) * HEAD if packed else HEADS * HEAD])]
    names = [p + "query"]
    if not packed:
        inputs += [(p + "key", F32, [b, s, KV_HEADS * HEAD]), (p + "value", F32, [b, s, KV_HEADS * HEAD])]
        names += [p + "key", p + "value"]
    else:
        names += ["", ""]
    if past:
        inputs += [(p + "past_key", F32, [b, KV_HEADS, p + "p", HEAD]),
                   (p + "past_value", F32, [b, KV_HEADS, p + "p", HEAD])]
        names += [p + "past_key", p + "past_value"]
    else:
        names += ["", ""]
    inputs += [(p + "seqlens_k", I32, [b]), (p + "total_sequence_length", I32, [])]
    names += [p + "seqlens_k", p + "total_sequence_length"]
    initializers = []
    if rotary:
        initializers = list(rotary_caches(64, HEAD // 2, p))
        names += [p + "cos_cache", p + "sin_cache"]
    node = helper.make_node("GroupQueryAttention", names, [p + o for o in GQA_OUTPUTS],
                            name=p + "GroupQueryAttention", domain="com.microsoft",
                            num_heads=HEADS, kv_num_heads=KV_HEADS, do_rotary=int(rotary), **attrs)
    outputs = [(p + "output", F32, [b, s, HEADS * HEAD]),
               (p + "present_key", F32, [b, KV_HEADS, p + "t", HEAD]),
               (p + "present_value", F32, [b, KV_HEADS, p + "t", HEAD])]
    return [node], inputs, outputs, initializers


def gqa_feeds(r, batch, seq, past_len, lengths=None, packed=False, past=True, p=""):
    """Feeds as onnxruntime-genai gives them; `lengths`: valid tokens per row (default all)."""
    total = past_len + seq
    lengths = [total] * batch if lengths is None else lengths
    width = (HEADS + 2 * KV_HEADS) * HEAD if packed else HEADS * HEAD
    feeds = {"query": r.standard_normal((batch, seq, width)).astype(np.float32)}
    if not packed:
        feeds["key"] = r.standard_normal((batch, seq, KV_HEADS * HEAD)).astype(np.float32)
        feeds["value"] = r.standard_normal((batch, seq, KV_HEADS * HEAD)).astype(np.float32)
    if past:
        feeds["past_key"] = r.standard_normal((batch, KV_HEADS, past_len, HEAD)).astype(np.float32)
        feeds["past_value"] = r.standard_normal((batch, KV_HEADS, past_len, HEAD)).astype(np.float32)
    feeds["seqlens_k"] = np.array([n - 1 for n in lengths], dtype=np.int32)
    feeds["total_sequence_length"] = np.array(total, dtype=np.int32)
    return {p + name: value for name, value in feeds.items()}


GQA_CASES = ["prompt_padded", "prompt_packed", "step", "step_batch2", "continuation", "window",
             "no_rotary_scale", "interleaved", "no_past", "softcap_prompt", "softcap_step"]


def add_gqa_case(cases, r, case):
    p = f"gqa_{case}_"
    packed = case == "prompt_packed"
    attrs = {}
    if case == "window":
        attrs["local_window_size"] = 3
    if case == "no_rotary_scale":
        attrs["scale"] = 0.3
    if case == "interleaved":
        attrs["rotary_interleaved"] = 1
    if case.startswith("softcap"):
        # Small enough to bend the scores (random Q, K give |scores| of a few units).
        attrs["softcap"] = 1.5
    rows = None
    if case in ("prompt_padded", "prompt_packed"):
        # A first prompt, row 1 right-padded to 7 of 9 tokens; the past is empty. onnxruntime
        # leaves the padded query rows unspecified: only the valid ones are compared.
        feeds = gqa_feeds(r, 2, 9, 0, lengths=[9, 7], packed=packed, p=p)
        rows = {p + "output": lambda y: np.concatenate([y[0].ravel(), y[1, :7].ravel()])}
    elif case in ("no_past", "softcap_prompt"):
        feeds = gqa_feeds(r, 1, 6, 0, past=False, p=p)
    elif case == "step_batch2":
        feeds = gqa_feeds(r, 2, 1, 12, p=p)
    elif case == "continuation":
        feeds = gqa_feeds(r, 1, 4, 11, p=p)
    else:
        feeds = gqa_feeds(r, 1, 5 if case == "window" else 1, 10, p=p)
    nodes, inputs, outputs, initializers = gqa_case(
        p, packed=packed, past=case not in ("no_past", "softcap_prompt"),
        rotary=case != "no_rotary_scale", **attrs)
    cases.add(nodes, inputs, outputs, initializers, feeds, rows)


def test_group_query_attention(tmp_path):
    """First prompts (right-padded, packed QKV), cached steps (batch 1 and 2), a multi-token
    continuation, a local window, no rotary with a scale, interleaved rotary, no past, softcap on
    a prompt and a cached step (capped before the causal mask, as onnxruntime does)."""
    cases, r = Cases(), rng(2)
    for case in GQA_CASES:
        add_gqa_case(cases, r, case)
    check_against_ort(tmp_path, "gqa", cases.model(), cases.feeds, cases.output_names(),
                      cases.rows)


def gqa_model(**attrs):
    nodes, inputs, outputs, initializers = gqa_case(**attrs)
    return model_of(nodes, inputs, outputs, initializers)


def test_group_query_attention_refusals(tmp_path):
    r = rng(3)
    feeds = gqa_feeds(r, 1, 1, 4)
    for attr, value, pattern in [("smooth_softmax", 1, r"smooth_softmax = 1 is not supported"),
                                 ("qk_output", 1, r"qk_output = 1 is not supported")]:
        check_refused(tmp_path, f"gqa_refuse_{attr}", gqa_model(**{attr: value}), feeds,
                      r"node 'GroupQueryAttention': .*" + pattern)
    # onnxruntime's shared buffer: a max-length past whose rows past seqlens_k are unused.
    shared = gqa_feeds(r, 1, 1, 8)
    shared["seqlens_k"] = np.array([4], dtype=np.int32)
    shared["total_sequence_length"] = np.array(5, dtype=np.int32)
    for backend in BACKENDS:
        check_refused(tmp_path, f"gqa_shared_{backend}", gqa_model(), shared,
                      r"total_sequence_length must be the past's length", backend=backend)
    # Rows of different lengths in a cached step.
    ragged = gqa_feeds(r, 2, 1, 6, lengths=[7, 5])
    check_refused(tmp_path, "gqa_ragged_step", gqa_model(), ragged,
                  r"seqlens_k \+ 1 that total in every batch row")


# --- MultiHeadAttention and Attention --------------------------------------------------------------

def add_multi_head_attention(cases, r):
    p = "mha_"
    heads, head, batch, seq, past = 2, 8, 2, 3, 4
    hidden, total = heads * head, past + seq
    node = helper.make_node(
        "MultiHeadAttention",
        [p + n for n in ("q", "k", "v", "bias", "mask", "attn_bias", "past_key", "past_value")],
        [p + n for n in ("y", "present_key", "present_value")], name=p + "node",
        domain="com.microsoft", num_heads=heads, unidirectional=1)
    b, s, t, pl = p + "b", p + "s", p + "t", p + "p"
    inputs = [(p + "q", F32, [b, s, hidden]), (p + "k", F32, [b, s, hidden]),
              (p + "v", F32, [b, s, hidden]), (p + "mask", I32, [b, t]),
              (p + "attn_bias", F32, [1, heads, s, t]),
              (p + "past_key", F32, [b, heads, pl, head]), (p + "past_value", F32, [b, heads, pl, head])]
    outputs = [(p + "y", F32, [b, s, hidden]), (p + "present_key", F32, [b, heads, t, head]),
               (p + "present_value", F32, [b, heads, t, head])]
    bias = numpy_helper.from_array(r.standard_normal(3 * hidden).astype(np.float32), p + "bias")
    mask = np.ones((batch, total), dtype=np.int32)
    mask[1, :2] = 0
    feeds = {p + "q": r.standard_normal((batch, seq, hidden)).astype(np.float32),
             p + "k": r.standard_normal((batch, seq, hidden)).astype(np.float32),
             p + "v": r.standard_normal((batch, seq, hidden)).astype(np.float32),
             p + "mask": mask,
             p + "attn_bias": r.standard_normal((1, heads, seq, total)).astype(np.float32),
             p + "past_key": r.standard_normal((batch, heads, past, head)).astype(np.float32),
             p + "past_value": r.standard_normal((batch, heads, past, head)).astype(np.float32)}
    cases.add([node], inputs, outputs, [bias], feeds)


def add_bert_attention(cases, r, case):
    p = f"attn_{case}_"
    heads, head, batch, seq, past = 2, 8, 2, 5, 3
    hidden = heads * head
    weights = numpy_helper.from_array(
        (r.standard_normal((hidden, 3 * hidden)) * 0.3).astype(np.float32), p + "w")
    bias = numpy_helper.from_array(r.standard_normal(3 * hidden).astype(np.float32), p + "bias")
    b, s = p + "b", p + "s"
    inputs = [(p + "x", F32, [b, s, hidden])]
    outputs = [(p + "y", F32, [b, s, hidden])]
    feeds = {p + "x": r.standard_normal((batch, seq, hidden)).astype(np.float32)}
    names = [p + n for n in ("x", "w", "bias", "mask")]
    if case == "gpt2_past":
        node = helper.make_node("Attention", names + [p + "past"], [p + "y", p + "present"],
                                name=p + "node", domain="com.microsoft", num_heads=heads,
                                unidirectional=1)
        inputs += [(p + "mask", I32, [b, p + "t"]), (p + "past", F32, [2, b, heads, p + "p", head])]
        outputs.append((p + "present", F32, [2, b, heads, p + "t", head]))
        feeds[p + "mask"] = np.ones((batch, past + seq), dtype=np.int32)
        feeds[p + "mask"][0, 0] = 0
        feeds[p + "past"] = r.standard_normal((2, batch, heads, past, head)).astype(np.float32)
    else:
        node = helper.make_node("Attention", names, [p + "y"], name=p + "node",
                                domain="com.microsoft", num_heads=heads)
        if case.endswith("computed"):
            # A mask_index that another node computes (as EmbedLayerNormalization's is): its rank
            # is not declared when the Attention is imported.
            extra = helper.make_node("Identity", [p + "mask_in"], [p + "mask"], name=p + "copy")
            node = [extra, node]
        if case.startswith("bert_mask_1d"):
            mask, shape = np.array([5, 3], dtype=np.int32), [b]
        else:
            mask, shape = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=np.int32), [b, s]
        name = p + ("mask_in" if case.endswith("computed") else "mask")
        inputs.append((name, I32, shape))
        feeds[name] = mask
    cases.add(node if isinstance(node, list) else [node], inputs, outputs, [weights, bias], feeds)


def test_bert_attention_ops(tmp_path):
    """MultiHeadAttention (bias, [B, T] key padding mask, attention_bias, past, unidirectional)
    and Attention (BERT with a [B] and a [B, S] mask_index, declared or computed, GPT-2 with a
    past)."""
    cases, r = Cases(), rng(4)
    add_multi_head_attention(cases, r)
    for case in ["bert_mask_1d", "bert_mask_2d", "bert_mask_1d_computed", "bert_mask_2d_computed",
                 "gpt2_past"]:
        add_bert_attention(cases, r, case)
    check_against_ort(tmp_path, "bert_ops", cases.model(), cases.feeds, cases.output_names())

"""onnxruntime's contrib normalization and GELU ops (com.microsoft, and its ai.onnx
SimplifiedLayerNormalization) against onnxruntime.

Two kinds of model:
- one hand-built graph holding every op the importer maps (frontend/ops/MicrosoftNormalizationOps.cpp),
  with and without the optional inputs and outputs, an odd hidden size (37), skips broadcast over
  the batch or given without one, 2-D inputs and a non-default axis, at opset 17 and at opset 11
  (converted on import with the contrib ops kept out of the converter): run by onnxc's reference
  evaluator and its JIT on the same random inputs as onnxruntime (BiasAdd, which onnxruntime runs
  only on CUDA, against numpy);
- what onnxruntime's transformer optimizer (`optimize_model`, opt_level 0) writes for the model
  tests' HF BERT, GPT-2 (opsets 17 and 14), LLaMA and CLIP exports (build/models): with attention
  fusion on, a model holding com.microsoft Attention is skipped naming the op (the attention
  contrib ops are not this importer's); with it off, every model must match onnxruntime through
  the reference evaluator, and BERT and GPT-2 through the JIT too (one compile each: the costly
  part).
-O2 must bring the imported ops to the fused kernels' ops (SkipLayerNormalization,
RMSNormalization, Gelu), counted in `onnxc dump -O2`.

At the pass level (ONNXC_MODEL_CHECKS=passes) the JIT is replaced by -O3 --verify-each lowering.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/models/test_contrib_models.py
"""

import collections
import functools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from model_checks import PASS_LEVEL, verify_and_lower  # noqa: E402
from model_inputs import make_inputs  # noqa: E402
from ort_reference import output_file_name, run_ort  # noqa: E402

MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
BACKENDS = ["ref", "lower"] if PASS_LEVEL else ["ref", "jit"]
RTOL, ATOL = 1e-4, 1e-5
MS = "com.microsoft"


def onnxc_binary() -> str:
    path = os.environ.get("ONNXC", os.path.join(REPO, "build", "tools", "onnxc"))
    if not os.path.exists(path):
        pytest.skip(f"no onnxc binary at {path}")
    return path


def run_onnxc(model: str, feeds: dict, workdir: str, backend: str, names: list) -> dict:
    """The outputs `names` of `onnxc run --backend=BACKEND`."""
    os.makedirs(workdir, exist_ok=True)
    command = [onnxc_binary(), "run", model, f"--backend={backend}"]
    for name, value in feeds.items():
        path = os.path.join(workdir, name.replace("/", "_") + ".npy")
        np.save(path, value)
        command += ["--input", f"{name}={path}"]
    output_dir = os.path.join(workdir, f"out_{backend}")
    command += ["--output-dir", output_dir]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr[-3000:]}"
    return {name: np.load(os.path.join(output_dir, output_file_name(name))) for name in names}


def check_backend(model: str, feeds: dict, want: dict, workdir: str, backend: str) -> None:
    """onnxc's `backend` on `model` against the expected outputs `want`."""
    os.makedirs(workdir, exist_ok=True)
    if backend == "lower":
        problem = verify_and_lower(onnxc_binary(), model, os.path.join(workdir, "model.ll"))
        assert problem is None, problem
        return
    got = run_onnxc(model, feeds, workdir, backend, list(want))
    for name, expected in want.items():
        assert got[name].shape == expected.shape, f"{name} ({backend}): shape {got[name].shape}, want {expected.shape}"
        assert got[name].dtype == expected.dtype, f"{name} ({backend}): dtype {got[name].dtype}, want {expected.dtype}"
        np.testing.assert_allclose(got[name], expected, rtol=RTOL, atol=ATOL, err_msg=f"{name} ({backend})")


def dump_ops(model: str, workdir: str, level: str = "-O2") -> collections.Counter:
    """How many nodes of each op `onnxc dump` shows at `level`."""
    destination = os.path.join(workdir, f"dump{level}.ir")
    command = [onnxc_binary(), "dump", model, "-o", destination, level]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr[-3000:]}"
    counts = collections.Counter()
    with open(destination) as f:
        for line in f:
            if " = " in line and "(" in line.split(" = ", 1)[1]:
                counts[line.split(" = ", 1)[1].split("(", 1)[0].strip()] += 1
    return counts


# ---- the hand-built graph ------------------------------------------------------------------------

HIDDEN = 37
VOCAB, POSITIONS = 50, 16
BATCH, SEQ = 2, 5


def make_weights(rng) -> dict:
    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    return {"gamma": normal(HIDDEN), "beta": normal(HIDDEN), "bias": normal(HIDDEN),
            "scale_2d": normal(SEQ, HIDDEN), "word": normal(VOCAB, HIDDEN),
            "position": normal(POSITIONS, HIDDEN), "segment": normal(2, HIDDEN)}


def contrib_nodes() -> list:
    def ms(op, inputs, outputs, **attributes):
        return helper.make_node(op, inputs, outputs, domain=MS, name=outputs[0], **attributes)
    return [
        helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["rms", "rms_inv"],
                         epsilon=1e-6, name="rms"),
        helper.make_node("SimplifiedLayerNormalization", ["x_static", "scale_2d"], ["rms_axis1"],
                         axis=1, name="rms_axis1"),
        helper.make_node("SimplifiedLayerNormalization", ["x_static", "scale_2d"],
                         ["rms_axis1_y", "rms_axis1_inv"], axis=-2, name="rms_axis1_inv"),
        ms("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["sln", "", "", "sln_sum"],
           epsilon=1e-5),
        ms("SkipLayerNormalization", ["x", "skip", "gamma"], ["sln_plain"]),
        ms("SkipLayerNormalization", ["x", "skip_b1", "gamma", "beta"], ["sln_b1"], epsilon=1e-5),
        ms("SkipLayerNormalization", ["x", "skip_2d", "gamma", "", "bias"], ["sln_2d", "", "", "sln_2d_sum"]),
        ms("SkipLayerNormalization", ["tokens", "tokens_skip", "gamma", "beta"], ["sln_tokens"]),
        ms("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"], ["ssln", "", "", "ssln_sum"],
           epsilon=1e-6),
        ms("SkipSimplifiedLayerNormalization", ["x", "skip_b1", "gamma"], ["ssln_b1"]),
        ms("FastGelu", ["x", "bias"], ["fast_gelu"]),
        ms("FastGelu", ["x"], ["fast_gelu_plain"]),
        ms("BiasGelu", ["x", "bias"], ["bias_gelu"]),
        ms("Gelu", ["x"], ["gelu"]),
        ms("QuickGelu", ["x"], ["quick_gelu"]),
        ms("QuickGelu", ["x"], ["quick_gelu_1"], alpha=1.0),
        ms("EmbedLayerNormalization",
           ["ids", "segment_ids", "word", "position", "segment", "gamma", "beta", "mask"],
           ["embed", "embed_mask_index", "embed_sum"], epsilon=1e-5),
        ms("EmbedLayerNormalization",
           ["ids", "", "word", "position", "", "gamma", "beta", "", "position_ids"],
           ["embed_positions", "embed_no_mask_index"]),
    ]


CONTRIB_OUTPUTS = ["rms", "rms_inv", "rms_axis1", "rms_axis1_inv", "sln", "sln_sum", "sln_plain", "sln_b1",
                   "sln_2d", "sln_2d_sum", "sln_tokens", "ssln", "ssln_sum", "ssln_b1", "fast_gelu",
                   "fast_gelu_plain", "bias_gelu", "gelu", "quick_gelu", "quick_gelu_1", "embed",
                   "embed_mask_index", "embed_sum", "embed_positions", "embed_no_mask_index"]
INT_OUTPUTS = {"embed_mask_index", "embed_no_mask_index"}


def save_model(path: str, nodes: list, inputs: list, outputs: list, weights: dict, opset: int = 17) -> str:
    graph = helper.make_graph(nodes, "contrib", inputs, outputs,
                              [numpy_helper.from_array(v, n) for n, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 8  # onnxruntime 1.23 reads up to 11
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module", params=[17, 11], ids=["opset17", "opset11"])
def contrib_model(request, tmp_path_factory):
    """The graph at opset 17, and at opset 11 (converted to 13 on import with the contrib ops kept
    out of ONNX's version converter, as onnxruntime's optimizer leaves an old export's opset), with
    onnxruntime's own LayerNormalization, which ONNX only has from opset 17."""
    rng = np.random.default_rng(29)
    weights = make_weights(rng)
    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f32, ["batch", "seq", HIDDEN]),
              helper.make_tensor_value_info("skip", f32, ["batch", "seq", HIDDEN]),
              helper.make_tensor_value_info("skip_b1", f32, [1, "seq", HIDDEN]),
              helper.make_tensor_value_info("skip_2d", f32, ["seq", HIDDEN]),
              helper.make_tensor_value_info("x_static", f32, [BATCH, SEQ, HIDDEN]),
              helper.make_tensor_value_info("tokens", f32, ["tokens", HIDDEN]),
              helper.make_tensor_value_info("tokens_skip", f32, ["tokens", HIDDEN]),
              helper.make_tensor_value_info("ids", TensorProto.INT32, ["batch", "seq"]),
              helper.make_tensor_value_info("segment_ids", TensorProto.INT32, ["batch", "seq"]),
              helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "seq"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT32, [1, "seq"])]
    outputs = [helper.make_tensor_value_info(name, TensorProto.INT32 if name in INT_OUTPUTS else f32, None)
               for name in CONTRIB_OUTPUTS + ["layer_norm"]]
    nodes = contrib_nodes() + [helper.make_node("LayerNormalization", ["sln", "gamma", "beta"], ["layer_norm"],
                                                epsilon=1e-3, name="layer_norm")]
    path = save_model(str(tmp_path_factory.mktemp("contrib") / f"contrib_{request.param}.onnx"), nodes, inputs,
                      outputs, weights, opset=request.param)

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    feeds = {"x": normal(BATCH, SEQ, HIDDEN), "skip": normal(BATCH, SEQ, HIDDEN), "skip_b1": normal(1, SEQ, HIDDEN),
             "skip_2d": normal(SEQ, HIDDEN), "x_static": normal(BATCH, SEQ, HIDDEN), "tokens": normal(7, HIDDEN),
             "tokens_skip": normal(7, HIDDEN),
             "ids": rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32),
             "segment_ids": rng.integers(0, 2, (BATCH, SEQ)).astype(np.int32),
             # mask_index counts the entries equal to 1: a 2 and zeros inside the row must not count
             "mask": np.array([[1, 1, 1, 1, 1], [1, 2, 0, 1, 0]], np.int32),
             "position_ids": np.array([[4, 0, 9, 2, 15]], np.int32)}
    return path, feeds, weights


def test_contrib_graph_ort_matches_numpy(contrib_model):
    """The oracle itself: onnxruntime's kernels against the ops' definitions on a few outputs,
    so that the comparison below is against the documented semantics."""
    path, feeds, w = contrib_model
    want = run_ort(path, feeds)
    x, skip = feeds["x"], feeds["skip"]
    total = x + skip + w["bias"]
    mean = total.mean(-1, keepdims=True)
    var = ((total - mean) ** 2).mean(-1, keepdims=True)
    np.testing.assert_allclose(want["sln"], (total - mean) / np.sqrt(var + 1e-5) * w["gamma"] + w["beta"],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(want["ssln"], total / np.sqrt((total ** 2).mean(-1, keepdims=True) + 1e-6)
                               * w["gamma"], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(want["embed_mask_index"], [5, 2])
    np.testing.assert_array_equal(want["embed_no_mask_index"], [0, 0])
    np.testing.assert_allclose(want["quick_gelu"], x / (1 + np.exp(-1.702 * x)), rtol=1e-4, atol=1e-5)
    assert want["rms_inv"].shape == (BATCH, SEQ, 1) and want["rms_axis1_inv"].shape == (BATCH, 1, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_contrib_graph_matches_ort(contrib_model, backend, tmp_path):
    path, feeds, _ = contrib_model
    check_backend(path, feeds, run_ort(path, feeds), str(tmp_path), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bias_add_matches_numpy(backend, tmp_path):
    # onnxruntime has BiasAdd on CUDA only; its definition is X + bias + skip.
    rng = np.random.default_rng(7)
    bias = rng.standard_normal(HIDDEN).astype(np.float32)
    f32 = TensorProto.FLOAT
    path = save_model(str(tmp_path / "bias_add.onnx"),
                      [helper.make_node("BiasAdd", ["x", "bias", "skip"], ["y"], domain=MS)],
                      [helper.make_tensor_value_info(n, f32, ["batch", "seq", HIDDEN]) for n in ("x", "skip")],
                      [helper.make_tensor_value_info("y", f32, None)], {"bias": bias})
    feeds = {n: rng.standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32) for n in ("x", "skip")}
    check_backend(path, feeds, {"y": feeds["x"] + bias + feeds["skip"]}, str(tmp_path), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_simplified_norm_types_match_ort(backend, tmp_path):
    """SimplifiedLayerNormalization with f16 and f32 inputs: Y has the scale's type, as onnxruntime
    types it (the importer brings X to it), within f16's rounding (one unit in the last place)."""
    rng = np.random.default_rng(16)
    f16, f32 = TensorProto.FLOAT16, TensorProto.FLOAT
    weights = {"scale_f32": rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)}
    weights["scale_f16"] = weights["scale_f32"].astype(np.float16)
    nodes = [helper.make_node("SimplifiedLayerNormalization", [x, scale], [y], epsilon=1e-5, name=y)
             for x, scale, y in [("x_f16", "scale_f32", "y_f16_f32"), ("x_f32", "scale_f16", "y_f32_f16"),
                                 ("x_f16", "scale_f16", "y_f16_f16")]]
    path = save_model(str(tmp_path / "simplified_types.onnx"), nodes,
                      [helper.make_tensor_value_info("x_f16", f16, ["batch", "seq", HIDDEN]),
                       helper.make_tensor_value_info("x_f32", f32, ["batch", "seq", HIDDEN])],
                      [helper.make_tensor_value_info(n.output[0], f16 if n.output[0].endswith("f16") else f32, None)
                       for n in nodes], weights)
    x = rng.standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32)
    feeds = {"x_f16": x.astype(np.float16), "x_f32": x}
    want = run_ort(path, feeds)
    assert want["y_f16_f32"].dtype == np.float32 and want["y_f32_f16"].dtype == np.float16
    if backend == "lower":
        check_backend(path, feeds, want, str(tmp_path), backend)
        return
    got = run_onnxc(path, feeds, str(tmp_path), backend, list(want))
    for name, expected in want.items():
        assert got[name].dtype == expected.dtype, f"{name} ({backend}): {got[name].dtype}"
        np.testing.assert_allclose(got[name].astype(np.float32), expected.astype(np.float32), rtol=1e-3,
                                   atol=2e-3 if expected.dtype == np.float16 else ATOL, err_msg=f"{name} ({backend})")


def test_contrib_graph_fuses(contrib_model, tmp_path):
    """-O2 brings the imported ops to the fused kernels' ops: every skip norm whose skip has the
    input's shape becomes one SkipLayerNormalization (a broadcast skip stays Add + LayerNorm),
    the simplified norms RMSNormalization, every GELU variant one Gelu."""
    path, _, _ = contrib_model
    ops = dump_ops(path, str(tmp_path))
    ops["LayerNormalization"] -= 1  # layer_norm, an ONNX LayerNormalization of sln
    # sln, sln_plain, sln_tokens, and embed's word + position + segment.
    assert ops["SkipLayerNormalization"] == 4, ops
    # sln_b1, sln_2d and embed_positions (its position rows broadcast over the batch).
    assert ops["LayerNormalization"] == 3, ops
    # rms, rms_axis1, ssln, ssln_b1 (rms_axis1_y, read by nothing, is dead).
    assert ops["RMSNormalization"] == 4, ops
    assert ops["Gelu"] == 4, ops
    assert ops["Sigmoid"] == 2, ops


# ---- onnxruntime's transformer optimizer on the model tests' exports ----------------------------

# (model test name, optimize_model's model_type, heads, hidden): the HF library models of
# build_models.py; what the optimizer writes for each at opt_level 0 is in the comment.
OPTIMIZED = {
    "hf_bert_op17": ("bert", 4, 64),        # EmbedLayerNormalization, SkipLayerNormalization, BiasGelu
    "hf_gpt2_op17": ("gpt2", 4, 64),        # SkipLayerNormalization with its sum output, FastGelu
    "hf_llama_op17": ("gpt2", 4, 64),       # SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization
    "hf_clip_text_op17": ("clip", 4, 64),   # SkipLayerNormalization, QuickGelu
    "hf_gpt2_op14": ("gpt2", 4, 64),        # the same as at 17, and onnxruntime's ai.onnx LayerNormalization
}
# Each JIT run compiles the whole model again (about 5 CPU seconds); BERT and GPT-2 compile, the
# others run through the reference evaluator, their fusions checked in the -O2 dump.
JIT_MODELS = {"hf_bert_op17", "hf_gpt2_op17"}
# The default options (attention fusion on) are checked where the issue names them.
DEFAULT_OPTION_MODELS = ["hf_bert_op17", "hf_gpt2_op17"]
OPTIMIZED_DIR = tempfile.TemporaryDirectory(prefix="onnxc-contrib-")
IMPORTED_OPS = {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "EmbedLayerNormalization",
                "FastGelu", "BiasGelu", "Gelu", "QuickGelu", "BiasAdd",
                # the attention contrib ops (frontend/ops/MicrosoftBertAttentionOps.cpp)
                "Attention", "MultiHeadAttention"}


def manifest_entry(name: str) -> dict:
    path = os.path.join(MODEL_DIR, "manifest.json")
    if not os.path.exists(path):
        pytest.skip(f"no {path}: run models/build first")
    with open(path) as f:
        return next(e for e in json.load(f)["models"] if e["name"] == name)


@functools.lru_cache(maxsize=None)
def optimized(name: str, attention: bool) -> str:
    """The optimizer's output for a model test's export (opt_level 0: its graph fusions only), made
    once per session."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model
    model_type, heads, hidden = OPTIMIZED[name]
    options = FusionOptions(model_type)
    options.enable_attention = attention
    model = optimize_model(os.path.join(MODEL_DIR, manifest_entry(name)["file"]), model_type=model_type,
                           num_heads=heads, hidden_size=hidden, opt_level=0, optimization_options=options)
    path = os.path.join(OPTIMIZED_DIR.name, f"{name}_{'attention' if attention else 'no_attention'}.onnx")
    model.save_model_to_file(path)
    return path


def contrib_ops(path: str) -> collections.Counter:
    return collections.Counter(n.op_type for n in onnx.load(path).graph.node if n.domain == MS) + \
        collections.Counter(n.op_type for n in onnx.load(path).graph.node
                            if n.op_type == "SimplifiedLayerNormalization")


@pytest.mark.parametrize("name", DEFAULT_OPTION_MODELS)
def test_optimizer_default_fusions(name, tmp_path):
    """The optimizer's default output, attention fusion included (EmbedLayerNormalization's
    mask_index feeding com.microsoft Attention for BERT): every contrib op in it is imported, and
    the model matches onnxruntime."""
    path = optimized(name, True)
    others = sorted(set(contrib_ops(path)) - IMPORTED_OPS - {"SimplifiedLayerNormalization"})
    assert not others, f"{name}: the optimizer wrote com.microsoft {', '.join(others)}, which onnxc does not import"
    entry = manifest_entry(name)
    feeds = make_inputs(entry, entry["test_shapes"][-1])
    check_backend(path, feeds, run_ort(path, feeds), str(tmp_path), "ref")


@pytest.mark.parametrize("name", sorted(OPTIMIZED))
def test_optimizer_output_matches_ort(name, tmp_path):
    """Attention fusion off: the optimized model runs through the reference evaluator and the JIT
    and matches onnxruntime on it; -O2 makes the fused kernels' ops of every contrib op."""
    path = optimized(name, False)
    found = contrib_ops(path)
    assert set(found) <= IMPORTED_OPS | {"SimplifiedLayerNormalization"}, found
    if manifest_entry(name)["opset"] < 17:  # a LayerNormalization there is onnxruntime's
        assert any(n.op_type == "LayerNormalization" for n in onnx.load(path).graph.node), name
    assert found, f"{name}: the optimizer fused nothing"
    entry = manifest_entry(name)
    feeds = make_inputs(entry, entry["test_shapes"][-1])
    want = run_ort(path, feeds)
    for backend in BACKENDS if name in JIT_MODELS else ["ref"]:
        check_backend(path, feeds, want, str(tmp_path / backend), backend)
    ops = dump_ops(path, str(tmp_path))
    assert ops["SkipLayerNormalization"] >= found["SkipLayerNormalization"], (found, ops)
    gelus = found["FastGelu"] + found["BiasGelu"] + found["Gelu"]
    assert ops["Gelu"] == gelus, (found, ops)
    norms = found["SimplifiedLayerNormalization"] + found["SkipSimplifiedLayerNormalization"]
    assert ops["RMSNormalization"] == norms, (found, ops)

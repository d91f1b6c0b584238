"""Zoo models quantized by onnxruntime's own quantize_dynamic and quantize_static (QDQ), compiled
by onnxc, against onnxruntime on the same quantized file and against the fp32 model.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/models/test_quantized_models.py -v

The models are the test zoo's BERT encoder (bert_op17: 6 layers, padding mask) and GPT decoder
(gpt_op17), quantized here (not committed) with int8 weights, per tensor and per channel. At -O2
every MatMulInteger chain becomes one DynamicQuantizedMatMul on the integer GEMM, and the f32
attention, LayerNorm and GELU fusions still fire around them. The integer arithmetic is exact,
but the f32 ops between the quantized GEMMs round differently from onnxruntime's, and a value
that lands on the other side of a rounding step when the next layer quantizes it moves by one
quantum: so agreement is to integer rounding, reported as the largest error relative to the
output's range and the fraction of outputs that differ by more than 1% of it. The accuracy loss
against the fp32 model is printed too (not asserted beyond a sanity bound).

quantize_static (QDQ format, int8 activations and weights, calibrated on a few random batches;
also on HF transformers' own BertModel export, hf_bert_op17)
puts a QuantizeLinear -> DequantizeLinear pair on every activation it quantizes; each MatMul with
constant weights becomes one QuantizedMatMul. The pairs stay between the other ops (the output's
fake quantization), so here the attention and GELU matchers do not see their patterns: the
graph's own LayerNormalization ops remain, and attention runs unfused in f32 on the fake-quantized
values. onnxruntime runs the file as written (optimizations off, the literal QDQ semantics); its
own optimized QDQ kernels differ from that by as much as onnxc does or more (printed, too).

Two small models built here with torch (nothing committed) cover the Gemm and Conv forms: a
ViT-style classifier (a 4x4 patch-embedding Conv, a class token, two pre-LN transformer layers
whose nn.Linear on 3-D activations export as MatMul, a head nn.Linear on the class token that
exports as Gemm with transB = 1) and an MLP of Gemm layers. quantize_static (QDQ, per tensor
and per channel) makes them one QuantizedConv and QuantizedMatMuls (transpose_w for the Gemms);
quantize_dynamic makes the ViT's patch Conv a ConvInteger chain; the QOperator format makes
QLinearConv and QLinearMatMul. Each runs on the integer kernels and is compared with
onnxruntime on the same quantized file, reporting the largest error and the share of outputs
that differ.

Where a file runs on onnxruntime's integer kernels (MatMulInteger, ConvInteger, QLinear*) and
those saturate on this CPU (u8 x s8 in int16 on x86 without VNNI: AVX2 Zen 2, for one; probed by
ort_reference.integer_kernels_saturate), onnxruntime's own output is off by up to 10% of the
range, and the expected output is the onnx package's reference evaluator's instead, with the
same bounds.

At the pass level (ONNXC_MODEL_CHECKS=passes, model_checks.py: the sanitizer builds) each quantized
file is compiled with -O3 --verify-each --emit=llvm-unoptimized (every pass verified, lowered to LLVM IR)
instead of to a .so, and onnxc's reference evaluator takes the .so's place against onnxruntime,
at the first shape only: ASan cannot see into the integer kernels the .so runs.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from model_checks import PASS_LEVEL, verify_and_lower  # noqa: E402
from model_inputs import make_inputs  # noqa: E402
from ort_reference import run_expected, run_ort  # noqa: E402

MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC")
TIMEOUT = 600
# Per model and mode: the fusions found and the MatMuls that become integer GEMMs.
EXPECTED = {
    ("bert_op17", "dynamic"): {"Attention": 6, "LayerNorm": 13, "Gelu": 6, "DynamicQuantizedMatMul": 36},
    ("gpt_op17", "dynamic"): {"Attention": 4, "LayerNorm": 9, "Gelu": 4, "DynamicQuantizedMatMul": 17},
    ("bert_op17", "static"): {"Attention": 0, "LayerNorm": 13, "Gelu": 0, "QuantizedMatMul": 36},
    ("gpt_op17", "static"): {"Attention": 0, "LayerNorm": 9, "Gelu": 0, "QuantizedMatMul": 17},
    # HF transformers' own BertModel export (tests/models/library_models.py).
    ("hf_bert_op17", "static"): {"Attention": 0, "LayerNorm": 5, "Gelu": 0, "QuantizedMatMul": 12},
}
# Agreement with onnxruntime, as fractions of the output's range: the largest error, and the
# share of outputs off by more than 1%. Static graphs re-quantize every activation, so one
# flipped rounding moves more outputs.
BOUNDS = {"dynamic": (0.05, 0.01), "static": (0.05, 0.05)}
SHAPES = [{"batch": 1, "seq": 7}, {"batch": 2, "seq": 33}][:1 if PASS_LEVEL else None]

pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


def cached_model(name: str, make, inputs=()) -> str:
    """MODEL_DIR/quantized/NAME-HASH.onnx, written by make(path) when it is not there yet: the normal
    build's run makes each file once and the ASan build's run (same ONNXC_MODEL_DIR) reads it
    instead of quantizing again. HASH covers this script, onnxruntime's version and the size and
    time of each file in `inputs`, so a change to any of them makes a new file."""
    import hashlib
    import onnxruntime
    digest = hashlib.sha256(onnxruntime.__version__.encode())
    with open(__file__, "rb") as f:
        digest.update(f.read())
    for source in inputs:
        status = os.stat(source)
        digest.update(f"{source}:{status.st_size}:{status.st_mtime_ns}".encode())
    folder = os.path.join(MODEL_DIR, "quantized")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}-{digest.hexdigest()[:16]}.onnx")
    if not os.path.exists(path):
        partial = f"{path}.{os.getpid()}.partial.onnx"
        make(partial)
        os.replace(partial, path)
    return path


def manifest_entry(name: str) -> dict:
    with open(os.path.join(MODEL_DIR, "manifest.json")) as f:
        return next(m for m in json.load(f)["models"] if m["name"] == name)


def quantize_static_qdq(entry: dict, fp32: str, path: str, per_channel: bool) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Batches(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([make_inputs(entry, {"batch": 1, "seq": 16}, seed=s) for s in range(4)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(fp32, path, Batches(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


@pytest.fixture(scope="module",
                params=[(name, mode, per_channel) for name, mode in EXPECTED for per_channel in (False, True)],
                ids=lambda p: f"{p[0]}-{p[1]}-{'per_channel' if p[2] else 'per_tensor'}")
def quantized(request, tmp_path_factory):
    """(entry, mode, fp32 path, quantized path, compiled .so) for one model, mode and weight
    granularity."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    name, mode, per_channel = request.param
    entry = manifest_entry(name)
    fp32 = os.path.join(MODEL_DIR, entry["file"])
    folder = tmp_path_factory.mktemp(f"q_{name}_{mode}_{int(per_channel)}")

    def make(path):
        if mode == "dynamic":
            quantize_dynamic(fp32, path, weight_type=QuantType.QInt8, per_channel=per_channel)
        else:
            quantize_static_qdq(entry, fp32, path, per_channel)

    path = cached_model(f"{name}_{mode}_{int(per_channel)}", make, inputs=[fp32])
    return entry, mode, fp32, path, compiled(path, str(folder / f"{name}_int8"))


def compiled(path: str, stem: str) -> str:
    """What runs the quantized file: its .so, or at the pass level the file itself (through the
    reference evaluator, `run_library`) once -O3 --verify-each has lowered it to LLVM IR."""
    if PASS_LEVEL:
        problem = verify_and_lower(ONNXC, path, stem + ".ll")
        assert problem is None, problem
        return path
    subprocess.run([ONNXC, "compile", path, "-o", stem + ".so"], check=True, capture_output=True, text=True,
                   timeout=TIMEOUT)
    return stem + ".so"


def run_library(library: str, feeds: dict, folder: str) -> dict:
    command = [ONNXC, "run", library, "--output-dir", os.path.join(folder, "out")]
    if library.endswith(".onnx"):
        command.append("--backend=ref")  # the pass level (`compiled`)
    for name, value in feeds.items():
        path = os.path.join(folder, f"{name}.npy")
        np.save(path, value)
        command += ["--input", f"{name}={path}"]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=TIMEOUT)
    out = os.path.join(folder, "out")
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def test_fusions_around_quantized_matmuls(quantized, tmp_path):
    entry, mode, _, path, _ = quantized
    text = subprocess.run([ONNXC, "dump", path, "-O2"], check=True, capture_output=True, text=True,
                          timeout=TIMEOUT).stdout

    def count(op):
        return sum(1 for line in text.splitlines() if f"= {op}(" in line)

    expected = EXPECTED[(entry["name"], mode)]
    found = {op: count(op) for op in expected}
    found["LayerNorm"] = count("LayerNormalization") + count("SkipLayerNormalization")
    assert found == expected
    assert count("MatMulInteger") == 0 and count("DynamicQuantizeLinear") == 0, "an unfused chain remains"
    if mode == "static":
        # The MatMuls left read two activations: attention's scores and context, per layer.
        assert count("MatMul") == {"bert_op17": 12, "gpt_op17": 8, "hf_bert_op17": 4}[entry["name"]]


@pytest.mark.parametrize("dims", SHAPES, ids=lambda d: f"b{d['batch']}s{d['seq']}")
def test_matches_onnxruntime_on_the_quantized_model(quantized, dims, tmp_path):
    entry, mode, fp32, path, library = quantized
    feeds = make_inputs(entry, dims, seed=3)
    reference, expected = run_expected(path, feeds)
    theirs = list(expected.values())
    optimized = list(run_ort(path, feeds, "all").values())
    ours = run_library(library, feeds, str(tmp_path))
    fp32_out = list(run_ort(fp32, feeds).values())
    assert len(ours) == len(theirs) == 1, "the zoo models here have one output"
    max_error, max_differing = BOUNDS[mode]
    for (name, got), want, exact, own in zip(ours.items(), theirs, fp32_out, optimized):
        scale = float(np.abs(want).max()) or 1.0
        error = np.abs(got - want)
        differing = float(np.mean(error > 0.01 * scale))
        loss = float(np.abs(want - exact).max()) / (float(np.abs(exact).max()) or 1.0)
        own_error = np.abs(own - want)
        print(f"{entry['name']} {mode} {dims} {name}: max |onnxc - {reference}| {error.max():.3g} "
              f"({error.max() / scale:.2%} of the range), {differing:.3%} of outputs off by > 1%; ORT's optimized "
              f"run vs {reference} {own_error.max() / scale:.2%}, {float(np.mean(own_error > 0.01 * scale)):.3%}; "
              f"{reference} int8 vs fp32 max error {loss:.2%} of the range")
        assert got.shape == want.shape
        assert error.max() <= max_error * scale, f"{name}: onnxc and onnxruntime disagree beyond integer rounding"
        assert differing <= max_differing, f"{name}: {differing:.2%} of outputs differ by more than 1% of the range"
        assert loss < 0.5, "quantize_dynamic's own accuracy loss is implausible: wrong model?"


# --- small models quantized here: Gemm and Conv ----------------------------------------------

SMALL_SHAPES = {"vit": [(1, 3, 32, 32), (3, 3, 32, 32)], "mlp": [(1, 64), (37, 64)]}
# Per model and quantization: the ops expected after -O2 and the ops that must be gone.
SMALL_EXPECTED = {
    ("vit", "static"): ({"QuantizedConv": 1, "QuantizedMatMul": 9}, ["Conv", "Gemm"]),
    ("mlp", "static"): ({"QuantizedMatMul": 3}, ["Gemm"]),
    ("vit", "dynamic"): ({"ConvInteger": 1, "DynamicQuantizedMatMul": 9}, ["MatMulInteger"]),
    # The QOperator form quantizes attention's two MatMuls of activations too (loop nests).
    ("vit", "qoperator"): ({"QLinearConv": 1, "QLinearMatMul": 12}, []),
}


def build_small_model(name: str, path: str) -> None:
    """Exports the ViT-style model or the MLP (fixed seed) to `path` at opset 17."""
    import torch

    torch.manual_seed(0)

    class Attention(torch.nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads, self.qkv, self.out = heads, torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(x).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
            scores = (q @ k.transpose(-1, -2)) * (d // self.heads) ** -0.5
            return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d))

    class Layer(torch.nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
            self.attention = Attention(dim, heads)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 2 * dim), torch.nn.GELU(),
                                           torch.nn.Linear(2 * dim, dim))

        def forward(self, x):
            x = x + self.attention(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class Vit(torch.nn.Module):
        def __init__(self, dim=48, heads=4, patch=4, image=32, classes=10):
            super().__init__()
            self.patch = torch.nn.Conv2d(3, dim, patch, stride=patch)
            self.cls = torch.nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.pos = torch.nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
            self.layers = torch.nn.Sequential(Layer(dim, heads), Layer(dim, heads))
            self.norm, self.head = torch.nn.LayerNorm(dim), torch.nn.Linear(dim, classes)

        def forward(self, pixels):
            x = self.patch(pixels).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            return self.head(self.norm(self.layers(x))[:, 0])

    model = Vit() if name == "vit" else torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 96), torch.nn.GELU(),
        torch.nn.Linear(96, 10))
    model.eval()
    example = torch.randn(*SMALL_SHAPES[name][0])
    input_name = "pixels" if name == "vit" else "features"
    torch.onnx.export(model, (example,), path, opset_version=17, input_names=[input_name],
                      output_names=["logits"], dynamic_axes={input_name: {0: "batch"}})


def small_feeds(name: str, shape: tuple, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"pixels" if name == "vit" else "features": rng.standard_normal(shape).astype(np.float32)}


def quantize_small(name: str, mode: str, fp32: str, path: str, per_channel: bool) -> None:
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    if mode == "dynamic":
        # u8 weights: onnxruntime's ConvInteger kernel takes no others.
        quantize_dynamic(fp32, path, weight_type=QuantType.QUInt8, per_channel=per_channel)
        return

    class Batches(CalibrationDataReader):
        def __init__(self):
            shape = SMALL_SHAPES[name][1]
            self.batches = iter([small_feeds(name, shape, seed) for seed in range(4)])

        def get_next(self):
            return next(self.batches, None)

    options = {}
    if mode == "qoperator":
        # QLinearConv and QLinearMatMul only (the contrib QLinearAdd etc. are not ONNX ops).
        options = {"op_types_to_quantize": ["Conv", "MatMul"]}
    quantize_static(fp32, path, Batches(), per_channel=per_channel,
                    quant_format=QuantFormat.QOperator if mode == "qoperator" else QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8 if mode == "qoperator" else QuantType.QInt8,
                    weight_type=QuantType.QInt8, **options)


# QDQ per tensor and per channel; the other two forms at one granularity each.
SMALL_CASES = [("vit", "static", False), ("vit", "static", True), ("mlp", "static", False),
               ("mlp", "static", True), ("vit", "dynamic", False), ("vit", "qoperator", True)]


def small_fp32(name: str) -> str:
    """The fp32 file of a small model, exported once (cached_model)."""
    return cached_model(f"small_{name}_fp32", lambda path: build_small_model(name, path))


@pytest.fixture(scope="module", params=SMALL_CASES,
                ids=lambda p: f"{p[0]}-{p[1]}-{'per_channel' if p[2] else 'per_tensor'}")
def small_quantized(request, tmp_path_factory):
    """(name, mode, quantized path, compiled .so) for one small model and quantization."""
    name, mode, per_channel = request.param
    folder = tmp_path_factory.mktemp(f"small_{name}_{mode}_{int(per_channel)}")
    path = cached_model(f"small_{name}_{mode}_{int(per_channel)}",
                        lambda path: quantize_small(name, mode, small_fp32(name), path, per_channel))
    return name, mode, path, compiled(path, str(folder / f"{name}_int8"))


def test_small_models_fuse_onto_the_integer_kernels(small_quantized):
    name, mode, path, _ = small_quantized
    text = subprocess.run([ONNXC, "dump", path, "-O2"], check=True, capture_output=True, text=True,
                          timeout=TIMEOUT).stdout

    def count(op):
        return sum(1 for line in text.splitlines() if f"= {op}(" in line)

    expected, gone = SMALL_EXPECTED[(name, mode)]
    assert {op: count(op) for op in expected} == expected
    assert all(count(op) == 0 for op in gone), {op: count(op) for op in gone}


@pytest.mark.parametrize("shape_index", [0] if PASS_LEVEL else [0, 1],
                         ids=["small_batch", "large_batch"][:1 if PASS_LEVEL else None])
def test_small_models_match_onnxruntime(small_quantized, shape_index, tmp_path):
    name, mode, path, library = small_quantized
    feeds = small_feeds(name, SMALL_SHAPES[name][shape_index], seed=11)
    reference, expected = run_expected(path, feeds)
    want = next(iter(expected.values()))
    got = next(iter(run_library(library, feeds, str(tmp_path)).values()))
    assert got.shape == want.shape
    scale = float(np.abs(want).max()) or 1.0
    error = np.abs(got - want)
    differing = float(np.mean(error > 0.01 * scale))
    exact = float(np.mean(error == 0))
    print(f"{name} {mode} {feeds[next(iter(feeds))].shape}: max |onnxc - {reference}| {error.max():.3g} "
          f"({error.max() / scale:.2%} of the range), {differing:.2%} of outputs off by > 1%, "
          f"{exact:.1%} identical")
    # Static graphs re-quantize every activation: one flipped rounding moves an output by a
    # quantum of the next layer, as on the zoo models above.
    max_error, max_differing = BOUNDS["dynamic" if mode == "dynamic" else "static"]
    assert error.max() <= max_error * scale, "onnxc and onnxruntime disagree beyond integer rounding"
    assert differing <= max_differing

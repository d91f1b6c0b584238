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

from model_inputs import make_inputs  # noqa: E402
from ort_reference import run_ort  # noqa: E402

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
SHAPES = [{"batch": 1, "seq": 7}, {"batch": 2, "seq": 33}]

pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


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
    path = str(folder / f"{name}_int8.onnx")
    if mode == "dynamic":
        quantize_dynamic(fp32, path, weight_type=QuantType.QInt8, per_channel=per_channel)
    else:
        quantize_static_qdq(entry, fp32, path, per_channel)
    library = str(folder / f"{name}_int8.so")
    subprocess.run([ONNXC, "compile", path, "-o", library], check=True, capture_output=True, text=True,
                   timeout=TIMEOUT)
    return entry, mode, fp32, path, library


def run_library(library: str, feeds: dict, folder: str) -> dict:
    command = [ONNXC, "run", library, "--output-dir", os.path.join(folder, "out")]
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
    theirs = list(run_ort(path, feeds).values())
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
        print(f"{entry['name']} {mode} {dims} {name}: max |onnxc - ORT| {error.max():.3g} ({error.max() / scale:.2%} "
              f"of the range), {differing:.3%} of outputs off by > 1%; ORT's optimized run vs its literal "
              f"one {own_error.max() / scale:.2%}, {float(np.mean(own_error > 0.01 * scale)):.3%}; ORT int8 vs "
              f"fp32 max error {loss:.2%} of the range")
        assert got.shape == want.shape
        assert error.max() <= max_error * scale, f"{name}: onnxc and onnxruntime disagree beyond integer rounding"
        assert differing <= max_differing, f"{name}: {differing:.2%} of outputs differ by more than 1% of the range"
        assert loss < 0.5, "quantize_dynamic's own accuracy loss is implausible: wrong model?"

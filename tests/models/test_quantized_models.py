"""Zoo models quantized by onnxruntime's own quantize_dynamic, compiled by onnxc, against
onnxruntime on the same quantized file and against the fp32 model.

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
# Per model: the fusions of the fp32 model, and the MatMuls quantize_dynamic quantizes.
EXPECTED = {
    "bert_op17": {"Attention": 6, "LayerNorm": 13, "Gelu": 6, "DynamicQuantizedMatMul": 36},
    "gpt_op17": {"Attention": 4, "LayerNorm": 9, "Gelu": 4, "DynamicQuantizedMatMul": 17},
}
SHAPES = [{"batch": 1, "seq": 7}, {"batch": 2, "seq": 33}]

pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


def manifest_entry(name: str) -> dict:
    with open(os.path.join(MODEL_DIR, "manifest.json")) as f:
        return next(m for m in json.load(f)["models"] if m["name"] == name)


@pytest.fixture(scope="module", params=[(name, per_channel) for name in EXPECTED for per_channel in (False, True)],
                ids=lambda p: f"{p[0]}-{'per_channel' if p[1] else 'per_tensor'}")
def quantized(request, tmp_path_factory):
    """(entry, fp32 path, quantized path, compiled .so) for one model and weight granularity."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    name, per_channel = request.param
    entry = manifest_entry(name)
    fp32 = os.path.join(MODEL_DIR, entry["file"])
    folder = tmp_path_factory.mktemp(f"q_{name}_{int(per_channel)}")
    path = str(folder / f"{name}_int8.onnx")
    quantize_dynamic(fp32, path, weight_type=QuantType.QInt8, per_channel=per_channel)
    library = str(folder / f"{name}_int8.so")
    subprocess.run([ONNXC, "compile", path, "-o", library], check=True, capture_output=True, text=True,
                   timeout=TIMEOUT)
    return entry, fp32, path, library


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
    entry, _, path, _ = quantized
    text = subprocess.run([ONNXC, "dump", path, "-O2"], check=True, capture_output=True, text=True,
                          timeout=TIMEOUT).stdout

    def count(op):
        return sum(1 for line in text.splitlines() if f"= {op}(" in line)

    found = {"Attention": count("Attention"),
             "LayerNorm": count("LayerNormalization") + count("SkipLayerNormalization"),
             "Gelu": count("Gelu"), "DynamicQuantizedMatMul": count("DynamicQuantizedMatMul")}
    assert found == EXPECTED[entry["name"]]
    assert count("MatMulInteger") == 0 and count("DynamicQuantizeLinear") == 0, "an unfused chain remains"


@pytest.mark.parametrize("dims", SHAPES, ids=lambda d: f"b{d['batch']}s{d['seq']}")
def test_matches_onnxruntime_on_the_quantized_model(quantized, dims, tmp_path):
    entry, fp32, path, library = quantized
    feeds = make_inputs(entry, dims, seed=3)
    theirs = list(run_ort(path, feeds).values())
    ours = run_library(library, feeds, str(tmp_path))
    fp32_out = list(run_ort(fp32, feeds).values())
    assert len(ours) == len(theirs) == 1, "the zoo models here have one output"
    for (name, got), want, exact in zip(ours.items(), theirs, fp32_out):
        scale = float(np.abs(want).max()) or 1.0
        error = np.abs(got - want)
        differing = float(np.mean(error > 0.01 * scale))
        loss = float(np.abs(want - exact).max()) / (float(np.abs(exact).max()) or 1.0)
        print(f"{entry['name']} {dims} {name}: max |onnxc - ORT| {error.max():.3g} ({error.max() / scale:.2%} of "
              f"the range), {differing:.3%} of outputs off by > 1%; ORT int8 vs fp32 max error "
              f"{loss:.2%} of the range")
        assert got.shape == want.shape
        assert error.max() <= 0.05 * scale, f"{name}: onnxc and onnxruntime disagree beyond integer rounding"
        assert differing <= 0.01, f"{name}: {differing:.2%} of outputs differ by more than 1% of the range"
        assert loss < 0.5, "quantize_dynamic's own accuracy loss is implausible: wrong model?"

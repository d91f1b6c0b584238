"""--precision=bf16 on the library zoo (the HF transformers exports at opset 17): each model's outputs
against onnxruntime's f32 ones, within the model-level tolerance docs/KERNEL_ACCURACY.md states
for bf16 matrix products: cosine >= 0.9999 and a largest difference of at most 2% of the
largest |output|. An encoder's mean-pooled embedding must keep cosine >= 0.999. For the GPT-2
decoder, the share of 64 greedy tokens that equal f32's is printed (random weights make it
uninformative to assert).

    ONNXC=build/tools/onnxc .venv/bin/python -m pytest tests/models/test_bf16_models.py -v -s
"""

import os
import subprocess

import numpy as np
import pytest

from model_checks import skip_at_pass_level
from model_inputs import make_inputs
from ort_reference import output_file_name, run_ort
from test_models import MANIFEST, model_path, run_onnxc

runs_kernels = skip_at_pass_level("ONNXC_MODEL_CHECKS=passes: compiled kernels run in the normal build")
ONNXC = os.environ.get("ONNXC")
COSINE, RELATIVE = 0.9999, 0.02
POOLED_COSINE = 0.999
# Decoders with a KV cache run through `onnxc generate`; encoder/decoder halves through their
# whole-model forms.
ZOO = [entry for entry in MANIFEST["models"]
       if entry["name"].startswith("hf_") and entry["name"].endswith("_op17")
       and "_past" not in entry["name"] and "seq2seq" not in entry["name"]]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


@runs_kernels
@pytest.mark.skipif(not ONNXC, reason="ONNXC must name the onnxc tool")
@pytest.mark.parametrize("entry", ZOO, ids=[entry["name"] for entry in ZOO])
def test_bf16_outputs_match_f32(entry, tmp_path):
    dims = entry["test_shapes"][-1]
    feeds = make_inputs(entry, dims)
    want = run_ort(model_path(entry), feeds)
    command_dir = tmp_path / "run"
    command_dir.mkdir()
    output_dir = run_onnxc(ONNXC, model_path(entry), feeds, str(command_dir), "jit",
                           extra=["--precision=bf16"])
    for name, reference in want.items():
        got = np.load(os.path.join(output_dir, output_file_name(name)))
        assert got.shape == reference.shape, name
        similarity = cosine(got, reference)
        largest = float(np.abs(got.astype(np.float64) - reference).max())
        scale = float(np.abs(reference).max())
        print(f"{entry['name']} {name}: cosine {similarity:.7f}, max |bf16 - f32| {largest:.3e} "
              f"(max |f32| {scale:.3g})")
        assert similarity >= COSINE, f"{name}: cosine {similarity}"
        assert largest <= RELATIVE * scale, f"{name}: max difference {largest} of {scale}"
        mask = feeds.get("attention_mask")
        if name == "last_hidden_state" and mask is not None and mask.shape == got.shape[:2]:
            mask = mask[..., None].astype(np.float64)
            pooled = lambda x: (x * mask).sum(axis=1) / mask.sum(axis=1)  # noqa: E731
            assert cosine(pooled(got), pooled(reference)) >= POOLED_COSINE, "mean-pooled embedding"


@runs_kernels
@pytest.mark.skipif(not ONNXC, reason="ONNXC must name the onnxc tool")
def test_bf16_greedy_tokens_reported():
    entry = next(e for e in MANIFEST["models"] if e["name"] == "hf_gpt2_past_op17")

    def generate(precision):
        result = subprocess.run([ONNXC, "generate", model_path(entry), "--prompt-ids", "11,29,3,57",
                                 "--max-new-tokens", "64", f"--precision={precision}"],
                                capture_output=True, text=True, timeout=600, check=True)
        return [int(token) for token in result.stdout.strip().split(",")]

    f32, bf16 = generate("f32"), generate("bf16")
    assert len(f32) == len(bf16) == 64
    same = sum(a == b for a, b in zip(f32, bf16))
    print(f"hf_gpt2_past_op17: {same} of 64 greedy tokens at bf16 equal f32's "
          f"(first difference at {next((i for i, (a, b) in enumerate(zip(f32, bf16)) if a != b), None)})")

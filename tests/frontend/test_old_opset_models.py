"""Zoo models exported by torch at opsets older than 13 run through onnxc and match onnxruntime.

    ONNXC=build/tools/onnxc .venv/bin/python -m pytest tests/frontend/test_old_opset_models.py

onnxc converts opsets 7 to 12 to opset 13 on import (frontend/OpsetConversion.cpp). The models
are small (two layers, random weights, fixed seeds) and exported into the test's own temporary
folder: opset 11 for a GPT decoder and a ViT (Conv patches), opset 9 for the ViT, whose export
there writes Slice's attribute form and a Softmax over axis 3 of the pre-13 kind. (torch's
opset-10 export of the GPT decoder needs NonZero, which onnxc lacks.) Each runs through the
reference evaluator and the JIT and is compared with onnxruntime on the original file.

At the pass level (ONNXC_MODEL_CHECKS=passes, tests/models/model_checks.py: the sanitizer builds)
the JIT's place is taken by -O3 --verify-each --emit=llvm-unoptimized (every pass verified, lowered to LLVM IR,
nothing run: ASan cannot see into the kernels).
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))

from model_checks import PASS_LEVEL, verify_and_lower  # noqa: E402
from ort_reference import output_file_name, run_ort  # noqa: E402

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

import transformers_zoo as zoo  # noqa: E402

RTOL = 1e-4
ATOL = 1e-5
BACKENDS = ["ref", "lower"] if PASS_LEVEL else ["ref", "jit"]


def onnxc_binary() -> str:
    path = os.environ.get("ONNXC")
    if not path or not os.path.exists(path):
        pytest.skip("ONNXC (the onnxc binary) is not set")
    return path


def gpt():
    torch.manual_seed(2101)
    cfg = zoo.GptConfig(layers=2)
    ids = torch.randint(0, cfg.vocab_size, (2, 5))
    feeds = {"input_ids": np.random.default_rng(1).integers(0, cfg.vocab_size, (2, 9)).astype(np.int64)}
    return zoo.GptDecoder(cfg), (ids,), ["input_ids"], ["logits"], {"input_ids": {0: "batch", 1: "seq"},
                                                                 "logits": {0: "batch", 1: "seq"}}, feeds


def vit():
    torch.manual_seed(2102)
    cfg = zoo.VitConfig(layers=2)
    pixels = torch.randn(2, cfg.channels, cfg.image_size, cfg.image_size)
    feeds = {"pixel_values": np.random.default_rng(2).standard_normal(
        (3, cfg.channels, cfg.image_size, cfg.image_size)).astype(np.float32)}
    return (zoo.VisionTransformer(cfg), (pixels,), ["pixel_values"], ["logits"],
            {"pixel_values": {0: "batch"}, "logits": {0: "batch"}}, feeds)


CASES = [("gpt", gpt, 11), ("vit", vit, 11), ("vit", vit, 9)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(name, opset) -> (model path, feeds), each exported once for both backends."""
    folder = tmp_path_factory.mktemp("old-opsets")
    cache = {}

    def get(name, maker, opset):
        if (name, opset) not in cache:
            module, example, inputs, outputs, axes, feeds = maker()
            path = str(folder / f"{name}_op{opset}.onnx")
            zoo.export_onnx(module, example, path, inputs, outputs, axes, opset)
            model = onnx.load(path)
            declared = [entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")]
            assert declared == [opset], f"{path}: exported at opset {declared}, asked for {opset}"
            cache[(name, opset)] = (path, feeds)
        return cache[(name, opset)]

    return get


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, maker, opset", CASES, ids=[f"{n}_op{o}" for n, _, o in CASES])
def test_old_opset_model_matches_ort(name, maker, opset, backend, exported, tmp_path):
    onnxc = onnxc_binary()
    path, feeds = exported(name, maker, opset)
    if backend == "lower":
        problem = verify_and_lower(onnxc, path, str(tmp_path / "model.ll"))
        assert problem is None, problem
        return
    want = run_ort(path, feeds)
    command = [onnxc, "run", path, "--output-dir", str(tmp_path / "out"), f"--backend={backend}"]
    for input_name, value in feeds.items():
        file = str(tmp_path / output_file_name(input_name))
        np.save(file, value)
        command += ["--input", f"{input_name}={file}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr[-3000:]}"
    for output_name, expected in want.items():
        got = np.load(str(tmp_path / "out" / output_file_name(output_name)))
        assert got.shape == expected.shape, f"{output_name}: shape {got.shape}, ORT {expected.shape}"
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{name} opset {opset} {output_name} ({backend} vs ORT)")


@pytest.mark.parametrize("name, maker, opset", CASES, ids=[f"{n}_op{o}" for n, _, o in CASES])
def test_old_opset_attention_is_fused(name, maker, opset, exported):
    """Pre-13 Softmax (axis 3 of 4 in torch's exports) must not hide the attention from -O2."""
    path, _ = exported(name, maker, opset)
    result = subprocess.run([onnxc_binary(), "dump", path, "-O2"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    fused = len(re.findall(r"= Attention\(", result.stdout))
    assert fused == 2, f"{name} opset {opset}: {fused} Attention nodes at -O2, want one per layer (2)"

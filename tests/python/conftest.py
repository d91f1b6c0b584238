"""Fixtures of the Python package tests: the onnxc tool, the test models, inputs and onnxruntime."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE_SCRIPT = os.path.join(REPO, "examples", "models", "build_tiny_bert.py")

# The fp32 tolerance of the model tests (tests/models/manifest entries).
RTOL, ATOL = 1e-4, 1e-5


def uninstrumented_env():
    """The environment for a process that loads no instrumented code: without the ASan preload of
    a sanitizer build (tests/python/CMakeLists.txt), which torch, for one, does not survive."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def _work_dir():
    path = os.environ.get("ONNXC_PYTHON_TEST_DIR") or os.path.join(REPO, "build", "tests", "python")
    os.makedirs(path, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def onnxc_tool():
    tool = os.environ.get("ONNXC")
    if not tool or not os.path.exists(tool):
        pytest.fail("ONNXC must name the onnxc tool (ctest sets it)")
    return tool


@pytest.fixture(scope="session")
def tiny_bert():
    """The README's example (examples/models/build_tiny_bert.py), built once per build tree and
    rebuilt when its script is newer. Written under a temporary name, then renamed, so that test
    processes started together never read half a file."""
    path = os.path.join(_work_dir(), "tiny_bert.onnx")
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(EXAMPLE_SCRIPT):
        partial = f"{path}.{os.getpid()}.partial.onnx"
        subprocess.run([sys.executable, EXAMPLE_SCRIPT, partial], check=True, stdout=subprocess.DEVNULL,
                       env=uninstrumented_env())
        os.replace(partial, path)
    return path


@pytest.fixture(scope="session")
def model_dir():
    path = os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models")
    if not os.path.exists(os.path.join(path, "manifest.json")):
        pytest.fail(f"no test models in {path} (ctest -R models/build writes them)")
    return path


@pytest.fixture(scope="session")
def gpt(model_dir):
    """A second, different model: the GPT decoder of tests/models (one input, causal)."""
    with open(os.path.join(model_dir, "manifest.json")) as f:
        entry = next(m for m in json.load(f)["models"] if m["name"] == "gpt_op17")
    return os.path.join(model_dir, entry["file"]), entry


def bert_feeds(batch, seq, seed, vocab=100):
    """input_ids below the example's vocabulary and a padding mask with a zero tail per row."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    for row in range(1, batch):
        mask[row, seq - row:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def onnxruntime_outputs(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def assert_close(got, want, label=""):
    assert got.shape == want.shape, f"{label}: shape {got.shape}, onnxruntime {want.shape}"
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype}, onnxruntime {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=label)

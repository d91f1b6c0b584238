"""Safe deployment (issue 32, item 5): a model.so records the CPU features its code may use and a
CPU without one is refused in one line naming it, through `onnxc run`, `onnxc.load` and
`onnxc_session_create` from C, instead of dying of SIGILL; `onnxc inspect model.so` says what the
library is. The missing feature is one this CPU lacks, compiled in with --mattr (the first of a
few candidates the CPU refuses), or one it has, hidden with $ONNXC_HIDE_CPU_FEATURES (the
stand-in for copying a --mcpu=native build to an older machine). Needs no test model."""

import json
import os
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc

ONNXC = os.environ.get("ONNXC")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Features a CPU may lack, most likely first (this project's Zen 3 lacks them all).
CANDIDATES = ("avx512f", "amx-complex", "avx512fp16", "amx-fp16", "xop")

pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


def write_affine_model(path):
    """y = x * 2 + 1, x: f32[batch, 4]."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["scaled"]),
         helper.make_node("Add", ["scaled", "shift"], ["y"])],
        "affine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        initializer=[numpy_helper.from_array(np.full(4, 2.0, np.float32), "scale"),
                     numpy_helper.from_array(np.full(4, 1.0, np.float32), "shift")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def inspect(library, env=None):
    result = subprocess.run([ONNXC, "inspect", library, "--json"], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(native library, (library for a feature this CPU lacks, that feature) or None)."""
    folder = tmp_path_factory.mktemp("deploy")
    source = str(folder / "affine.onnx")
    write_affine_model(source)
    native = str(folder / "native.so")
    onnxc.compile(source, output=native)
    for feature in CANDIDATES:
        library = str(folder / f"for_{feature.replace('-', '_')}.so")
        onnxc.compile(source, output=library, mattr=f"+{feature}")
        if not inspect(library)["runs_on_this_cpu"]:
            return native, (library, feature)
    return native, None


def lacking(models):
    if models[1] is None:
        pytest.skip(f"this CPU has every candidate feature ({', '.join(CANDIDATES)})")
    return models[1]


def assert_one_line_naming(message, feature):
    assert "\n" not in message.strip(), message
    assert f"needs {feature}" in message or f", {feature}" in message, message
    assert "which this CPU lacks" in message, message


def test_a_library_records_the_targets_features(models):
    native, _ = models
    report = inspect(native)
    features = report["cpu_features"]
    # Every x86-64 CPU this project runs on has SSE3; a native build records it with the rest.
    assert "sse3" in features, features
    assert report["runs_on_this_cpu"] is True
    model = onnxc.load(native)
    assert model.cpu_features == features
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(model.run(None, {"x": x})[0], x * 2 + 1)


def test_python_load_refuses_a_missing_feature(models):
    library, feature = lacking(models)
    assert feature in inspect(library)["cpu_features"]
    with pytest.raises(onnxc.Error) as error:
        onnxc.load(library)
    assert_one_line_naming(str(error.value), feature)


def test_cli_run_refuses_a_missing_feature(models):
    library, feature = lacking(models)
    result = subprocess.run([ONNXC, "run", library, "--shape", "x=2x4"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0
    assert result.stderr.startswith("error: "), result.stderr
    assert_one_line_naming(result.stderr, feature)


def compile_c_program(library, program, tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        pytest.skip("no C compiler")
    header = library[:-3] + ".h"
    executable = str(tmp_path / "program")
    subprocess.run([compiler, f"-I{REPO}/runtime/include", f"-DONNXC_MODEL_HEADER=\"{header}\"",
                    program, library, f"-Wl,-rpath,{os.path.dirname(library)}", "-o", executable],
                   check=True, timeout=120)
    return executable


@pytest.mark.skipif(bool(os.environ.get("ONNXC_SANITIZE")),
                    reason="a sanitized model.so needs the sanitizers' runtimes in the program")
def test_c_session_create_refuses_a_missing_feature(models, tmp_path):
    library, feature = lacking(models)
    program = compile_c_program(library, f"{REPO}/examples/c/run_model.c", tmp_path)
    result = subprocess.run([program, "batch=2"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert_one_line_naming(result.stderr, feature)


def test_hidden_features_refuse_a_native_library(models, monkeypatch):
    native, _ = models
    features = inspect(native)["cpu_features"]
    hidden = features[-1]
    env = dict(os.environ, ONNXC_HIDE_CPU_FEATURES=hidden)
    report = inspect(native, env)
    assert report["runs_on_this_cpu"] is False and hidden in report["cpu_problem"]
    result = subprocess.run([ONNXC, "run", native, "--shape", "x=2x4"], capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode != 0
    assert_one_line_naming(result.stderr, hidden)
    monkeypatch.setenv("ONNXC_HIDE_CPU_FEATURES", hidden)
    with pytest.raises(onnxc.Error) as error:
        onnxc.load(native)
    assert_one_line_naming(str(error.value), hidden)


def test_inspect_describes_a_library(models):
    native, _ = models
    report = inspect(native)
    version = subprocess.run([ONNXC, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[1]
    assert report["onnxc_version"] == version
    assert report["name"] == "native" and report["precision"] == "f32"
    assert report["inputs"] == [{"name": "x", "dtype": "f32", "dims": ["batch", 4],
                                 "type": "f32[batch, 4]"}]
    assert report["outputs"][0]["name"] == "y" and report["outputs"][0]["dims"] == ["batch", 4]
    assert report["cache_pairs"] == []
    text = subprocess.run([ONNXC, "inspect", native], capture_output=True, text=True,
                          check=True).stdout
    assert f"built by: onnxc {version}" in text
    assert "x: f32[batch, 4]" in text and "runs on this CPU: yes" in text

"""onnxc.compile(output=...) links each library with lld inside the Python process (issue 13,
item 2): with no C or C++ compiler on PATH, several models compile in one process (lld's global
state is reset between links), load together and compute what numpy computes."""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc


def write_affine_model(path, scale, shift):
    """y = x * scale + shift, x: f32[batch, 4]."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["scaled"]),
         helper.make_node("Add", ["scaled", "shift"], ["y"])],
        "torch_jit",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        initializer=[numpy_helper.from_array(np.full(4, scale, np.float32), "scale"),
                     numpy_helper.from_array(np.full(4, shift, np.float32), "shift")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.fixture
def no_compiler_on_path(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    for variable in ("CXX", "ONNXC_CXX", "ONNXC_LINKER"):
        monkeypatch.delenv(variable, raising=False)


@pytest.mark.skipif(bool(os.environ.get("ONNXC_SANITIZE")),
                    reason="a sanitized runtime is linked by the C++ driver (it adds the sanitizers' runtimes)")
def test_several_compiles_in_one_process_without_a_compiler(tmp_path, no_compiler_on_path):
    models = []
    for index in range(3):
        source = str(tmp_path / f"affine{index}.onnx")
        write_affine_model(source, scale=index + 2.0, shift=-index)
        library = str(tmp_path / f"affine{index}.so")
        models.append((onnxc.compile(source, output=library), index + 2.0, -index))
        assert os.path.exists(library) and os.path.exists(library[:-3] + ".h")
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    for model, scale, shift in models:
        (y,) = model.run(None, {"x": x})
        np.testing.assert_allclose(y, x * scale + shift, rtol=1e-6)


def test_asking_for_the_absent_driver_names_it(tmp_path, no_compiler_on_path, monkeypatch):
    source = str(tmp_path / "affine.onnx")
    write_affine_model(source, 2.0, 1.0)
    monkeypatch.setenv("ONNXC_LINKER", "driver")
    with pytest.raises(onnxc.Error, match="no C\\+\\+ compiler driver found"):
        onnxc.compile(source, output=str(tmp_path / "affine.so"))
    assert not os.path.exists(tmp_path / "affine.so")

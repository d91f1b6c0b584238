"""onnxc.load of libraries written by the onnxc tool, and compile(output=...)."""

import os
import subprocess

import pytest

import onnxc
from onnxc import _onnxc
from conftest import assert_close, bert_feeds, onnxruntime_outputs


@pytest.fixture(scope="module")
def tool_library(onnxc_tool, tiny_bert, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("lib") / "tiny_bert.so")
    subprocess.run([onnxc_tool, "compile", tiny_bert, "-o", path], check=True, stdout=subprocess.DEVNULL)
    return path


def test_load_a_library_compiled_by_the_tool(tool_library, tiny_bert):
    model = onnxc.load(tool_library)
    assert model.library_path == os.path.abspath(tool_library)
    jit = onnxc.compile(tiny_bert)
    assert model.inputs == jit.inputs and model.outputs == jit.outputs
    # The names may differ: the tool can name a library after its file (issue 13, item 3).
    assert isinstance(model.name, str) and model.name
    for batch, seq in [(1, 9), (2, 4)]:
        feeds = bert_feeds(batch, seq, seed=seq)
        assert_close(model.run(None, feeds)[0], onnxruntime_outputs(tiny_bert, feeds)[0], "library")


def test_load_relative_path(tool_library, monkeypatch):
    monkeypatch.chdir(os.path.dirname(tool_library))
    model = onnxc.load(os.path.basename(tool_library), threads=1)
    assert model.library_path == tool_library


def test_compile_to_a_library(tiny_bert, tmp_path):
    output = tmp_path / "bert.so"
    model = onnxc.compile(tiny_bert, output=output)
    assert output.exists() and (tmp_path / "bert.h").exists()
    assert model.library_path == str(output)
    feeds = bert_feeds(2, 3, seed=3)
    assert_close(model.run(None, feeds)[0], onnxruntime_outputs(tiny_bert, feeds)[0], "compile(output=)")
    onnxc.compile(tiny_bert, output=tmp_path / "b.so", header=tmp_path / "b_model.h")
    assert (tmp_path / "b_model.h").exists() and not (tmp_path / "b.h").exists()
    with pytest.raises(ValueError, match="header= applies only with output="):
        onnxc.compile(tiny_bert, header=tmp_path / "c.h")


def test_two_libraries_at_once(tool_library, tiny_bert, gpt, onnxc_tool, tmp_path):
    gpt_path, _ = gpt
    gpt_library = str(tmp_path / "gpt.so")
    subprocess.run([onnxc_tool, "compile", gpt_path, "-o", gpt_library], check=True,
                   stdout=subprocess.DEVNULL)
    bert_model, gpt_model = onnxc.load(tool_library), onnxc.load(gpt_library)
    feeds = bert_feeds(1, 5, seed=5)
    assert_close(bert_model.run(None, feeds)[0], onnxruntime_outputs(tiny_bert, feeds)[0], "bert")
    ids = {"input_ids": feeds["input_ids"]}
    assert_close(gpt_model.run(None, ids)[0], onnxruntime_outputs(gpt_path, ids)[0], "gpt")


def test_load_errors(tmp_path):
    with pytest.raises(onnxc.Error, match="no such file"):
        onnxc.load(tmp_path / "missing.so")
    # A shared library that is not a model: the extension module itself.
    with pytest.raises(onnxc.Error, match="not an onnxc model library"):
        onnxc.load(_onnxc.__file__)
    text = tmp_path / "text.so"
    text.write_text("not a library")
    with pytest.raises(onnxc.Error, match="not a model library: 13 bytes is too short"):
        onnxc.load(text)


@pytest.mark.parametrize("kept", ["header", "half"])
def test_truncated_library_same_error_as_the_tool(tool_library, onnxc_tool, tmp_path, kept):
    """A model.so cut short (a full disk, an interrupted copy) is refused before the loader maps
    it, with the one line the tool prints: never a SIGBUS inside dlopen (driver/ModelLibrary.h)."""
    with open(tool_library, "rb") as f:
        data = f.read()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[:100] if kept == "header" else data[: len(data) // 2])
    with pytest.raises(onnxc.Error) as raised:
        onnxc.load(cut)
    message = str(raised.value)
    assert "is truncated or corrupt" in message, message
    tool = subprocess.run([onnxc_tool, "run", str(cut)], capture_output=True, text=True)
    assert tool.returncode != 0
    assert tool.stderr.strip() == f"error: {message}", (tool.stderr, message)


def test_compile_never_overwrites_the_model_or_its_weights(tiny_bert, tmp_path):
    """compile(output=, header=) refuses, before writing anything, a path that is the model or
    one of its external data files, with the tool's checks (driver/ArtifactOutputs.h)."""
    import onnx
    model = onnx.load(tiny_bert)
    path = tmp_path / "bert.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    before = {name: (tmp_path / name).read_bytes() for name in ("bert.onnx", "weights.bin")}
    with pytest.raises(onnxc.Error, match=r"output= '.*bert.onnx' is the input model"):
        onnxc.compile(path, output=path)
    with pytest.raises(onnxc.Error, match=r"the header '.*bert.onnx' is the input model"):
        onnxc.compile(path, output=tmp_path / "b.so", header=path)
    with pytest.raises(onnxc.Error, match=r"output= '.*weights.bin' is the external data file"):
        onnxc.compile(path, output=tmp_path / "weights.bin")
    with pytest.raises(onnxc.Error, match=r"the header '.*weights.bin' is the external data file"):
        onnxc.compile(path, output=tmp_path / "c.so", header=tmp_path / "weights.bin")
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert not (tmp_path / "b.so").exists() and not (tmp_path / "c.so").exists()


def _unary_model(path, op):
    """y = op(x) over f32[n], written with onnx.helper."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], op.lower(), [x], [y])
    helper_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    import onnx
    onnx.save(helper_model, path)
    return str(path)


def test_a_recompiled_path_is_a_new_model(onnxc_tool, tmp_path):
    """The loader keeps one copy per path name: a library compiled again to the same path while
    the first is alive must still run the new model (issue 33, item 2), from Python and after the
    tool rewrote it."""
    import numpy as np
    x = np.array([-2.0, 3.0], np.float32)
    relu = _unary_model(tmp_path / "relu.onnx", "Relu")
    neg = _unary_model(tmp_path / "neg.onnx", "Neg")
    library = tmp_path / "m.so"
    a = onnxc.compile(relu, output=library)
    b = onnxc.compile(neg, output=library)
    np.testing.assert_array_equal(a.run(None, {"x": x})[0], [0.0, 3.0])
    np.testing.assert_array_equal(b.run(None, {"x": x})[0], [2.0, -3.0])
    subprocess.run([onnxc_tool, "compile", relu, "-o", str(library)], check=True,
                   stdout=subprocess.DEVNULL)
    c = onnxc.load(library)
    np.testing.assert_array_equal(c.run(None, {"x": x})[0], [0.0, 3.0])
    # The first two still run their own code.
    np.testing.assert_array_equal(b.run(None, {"x": x})[0], [2.0, -3.0])
    np.testing.assert_array_equal(a.run(None, {"x": x})[0], [0.0, 3.0])


def test_a_path_with_a_nul_is_refused_whole(tmp_path):
    with pytest.raises((onnxc.Error, ValueError), match=r"\\x00tail"):
        onnxc.load(str(tmp_path / "m") + "\0tail.so")

"""onnxc.compile / run / inputs / outputs / dump / explain on the README's example, against
onnxruntime and against the onnxc tool."""

import subprocess

import numpy as np
import onnxruntime as ort
import pytest

import onnxc
from onnxc import _onnxc
from conftest import assert_close, bert_feeds, onnxruntime_outputs


@pytest.fixture(scope="module")
def model(tiny_bert):
    return onnxc.compile(tiny_bert)


@pytest.mark.parametrize("batch,seq", [(1, 8), (2, 16), (3, 1)])
def test_run_matches_onnxruntime(model, tiny_bert, batch, seq):
    feeds = bert_feeds(batch, seq, seed=batch * 100 + seq)
    (want,) = onnxruntime_outputs(tiny_bert, feeds)
    (got,) = model.run(None, feeds)
    assert_close(got, want, f"run at {batch}x{seq}")
    assert_close(model(**feeds), want, "model(**feeds)")
    assert_close(model(feeds["input_ids"], feeds["attention_mask"]), want, "positional")
    (named,) = model.run(["last_hidden_state"], feeds)
    assert_close(named, want, "run by output name")


@pytest.mark.parametrize("opt_level", [0, 2])
def test_opt_levels_match_onnxruntime(tiny_bert, opt_level):
    feeds = bert_feeds(2, 5, seed=opt_level)
    (want,) = onnxruntime_outputs(tiny_bert, feeds)
    (got,) = onnxc.compile(tiny_bert, opt_level=opt_level, threads=1).run(None, feeds)
    assert_close(got, want, f"-O{opt_level}")


def test_inputs_and_outputs_are_those_onnxruntime_reports(model, tiny_bert):
    session = ort.InferenceSession(tiny_bert, providers=["CPUExecutionProvider"])
    ort_types = {"tensor(int64)": np.int64, "tensor(float)": np.float32}
    for ours, theirs in [(model.inputs, session.get_inputs()), (model.outputs, session.get_outputs())]:
        assert [v.name for v in ours] == [v.name for v in theirs]
        assert [v.dtype for v in ours] == [np.dtype(ort_types[v.type]) for v in theirs]
        assert [v.shape for v in ours] == [tuple(v.shape) for v in theirs]
    # Symbolic dims are strings, fixed ones ints.
    assert all(isinstance(d, str) for d in model.inputs[0].shape)
    assert isinstance(model.outputs[0].shape[-1], int)
    assert model.inputs[0].type == "int64" and "input_ids" in repr(model.inputs[0])


def test_missing_input_is_an_error_naming_it(model):
    feeds = bert_feeds(1, 4, seed=1)
    del feeds["attention_mask"]
    with pytest.raises(onnxc.Error, match="missing input 'attention_mask'"):
        model.run(None, feeds)
    with pytest.raises(onnxc.Error, match="attention_mask"):
        model(input_ids=feeds["input_ids"])


def test_unknown_input_and_output_names(model):
    feeds = bert_feeds(1, 4, seed=2)
    with pytest.raises(onnxc.Error, match="unknown input 'token_type_ids'"):
        model.run(None, dict(feeds, token_type_ids=feeds["input_ids"]))
    with pytest.raises(onnxc.Error, match="unknown output 'logits'"):
        model.run(["logits"], feeds)
    with pytest.raises(onnxc.Error, match="given twice"):
        model(feeds["input_ids"], input_ids=feeds["input_ids"], attention_mask=feeds["attention_mask"])


def test_wrong_dtype_is_refused_not_cast(model):
    feeds = bert_feeds(1, 4, seed=3)
    feeds["input_ids"] = feeds["input_ids"].astype(np.int32)
    with pytest.raises(onnxc.Error, match="input 'input_ids': expected int64, got int32"):
        model.run(None, feeds)
    # The binding checks too, whatever the Python layer let through.
    bad = [feeds["input_ids"], feeds["attention_mask"]]
    with pytest.raises(onnxc.Error, match="input 'input_ids': wrong element type"):
        model._runner.run(bad)


def test_wrong_shapes_are_errors(model):
    feeds = bert_feeds(1, 4, seed=4)
    with pytest.raises(onnxc.Error, match="input 'input_ids': expected rank 2"):
        model.run(None, dict(feeds, input_ids=feeds["input_ids"][0]))
    # seq bound to 4 by input_ids, 5 in attention_mask: the runtime refuses, in one line.
    with pytest.raises(onnxc.Error) as error:
        model.run(None, dict(feeds, attention_mask=np.ones((1, 5), dtype=np.int64)))
    message = str(error.value)
    assert "attention_mask" in message and "\n" not in message
    # The example's position table has 32 rows: a longer sequence fails, it does not read past it.
    with pytest.raises(onnxc.Error):
        model.run(None, bert_feeds(1, 40, seed=5))


def test_non_contiguous_and_list_inputs_are_converted(model):
    feeds = bert_feeds(2, 12, seed=6)
    (want,) = model.run(None, feeds)
    wide = {name: np.repeat(a, 2, axis=1)[:, ::2] for name, a in feeds.items()}
    assert not wide["input_ids"].flags.c_contiguous
    np.testing.assert_array_equal(model.run(None, wide)[0], want)
    fortran = {name: np.asfortranarray(a) for name, a in feeds.items()}
    assert not fortran["input_ids"].flags.c_contiguous
    np.testing.assert_array_equal(model.run(None, fortran)[0], want)
    lists = {name: a.tolist() for name, a in feeds.items()}
    np.testing.assert_array_equal(model.run(None, lists)[0], want)


def test_contiguous_inputs_are_read_in_place(model):
    feeds = bert_feeds(1, 6, seed=7)
    prepared = model._prepare(feeds)
    assert prepared[0] is feeds["input_ids"] and prepared[1] is feeds["attention_mask"]
    for array in prepared:
        assert _onnxc.input_address(array) == array.ctypes.data
    readonly = feeds["input_ids"].copy()
    readonly.setflags(write=False)
    assert model._prepare(dict(feeds, input_ids=readonly))[0] is readonly
    model.run(None, dict(feeds, input_ids=readonly))


def test_outputs_own_their_data(model):
    first_feeds, second_feeds = bert_feeds(1, 8, seed=8), bert_feeds(1, 8, seed=9)
    (first,) = model.run(None, first_feeds)
    kept = first.copy()
    (second,) = model.run(None, second_feeds)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, kept)  # not overwritten by the next run
    first[0, 0, 0] = 42.0  # writable, and writing it changes nothing else
    (again,) = model.run(None, second_feeds)
    np.testing.assert_array_equal(again, second)


def test_outputs_outlive_their_model(tiny_bert):
    feeds = bert_feeds(1, 5, seed=10)
    local = onnxc.compile(tiny_bert, threads=1)
    (out,) = local.run(None, feeds)
    kept = out.copy()
    del local
    import gc
    gc.collect()
    np.testing.assert_array_equal(out, kept)


def _tool_error(onnxc_tool, *args):
    result = subprocess.run([onnxc_tool, *args], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    line = result.stderr.strip()
    assert line.startswith("error: "), line
    return line[len("error: "):]


def test_errors_carry_the_tools_message(onnxc_tool, tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(onnxc.Error) as error:
        onnxc.compile(missing)
    assert str(error.value) == _tool_error(onnxc_tool, "dump", missing)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not a model at all\xff\xff")
    with pytest.raises(onnxc.Error) as error:
        onnxc.dump(str(garbage))
    assert str(error.value) == _tool_error(onnxc_tool, "dump", str(garbage), "-O2")
    assert isinstance(error.value, RuntimeError)


def test_dump_is_the_tools_ir(onnxc_tool, tiny_bert):
    for level in (0, 2):
        tool = subprocess.run([onnxc_tool, "dump", tiny_bert, f"-O{level}"], capture_output=True,
                              text=True, check=True).stdout
        assert onnxc.dump(tiny_bert, opt_level=level) == tool
    assert "Attention(" in onnxc.dump(tiny_bert)
    assert "Attention(" not in onnxc.dump(tiny_bert, opt_level=0)
    passes = subprocess.run([onnxc_tool, "dump", tiny_bert, "-O0", "--passes=fold-constants,dce"],
                            capture_output=True, text=True, check=True).stdout
    assert onnxc.dump(tiny_bert, opt_level=0, passes=["fold-constants", "dce"]) == passes
    with pytest.raises(onnxc.Error, match="no-such-pass"):
        onnxc.dump(tiny_bert, passes="no-such-pass")
    with pytest.raises(onnxc.Error, match="optimization level"):
        onnxc.dump(tiny_bert, opt_level=7)


def test_explain_is_the_tools_fusion_report(onnxc_tool, tiny_bert):
    tool = subprocess.run([onnxc_tool, "dump", tiny_bert, "-O2", "--stats", "--explain", "-o",
                           "/dev/null"], capture_output=True, text=True, check=True).stderr
    report = onnxc.explain(tiny_bert)
    assert report == tool
    assert "fuse-attention" in report


def test_bad_arguments(tiny_bert):
    with pytest.raises(TypeError):
        onnxc.compile(42)
    with pytest.raises(ValueError):
        onnxc.compile(tiny_bert, threads=-1)
    with pytest.raises(onnxc.Error, match="compiled library holds no graph"):
        onnxc.compile(_onnxc.__file__)
    with pytest.raises(TypeError):
        onnxc.compile(tiny_bert).run(None, [np.zeros((1, 1), np.int64)])


def test_precision_bf16_is_compiled_recorded_and_close(tiny_bert, tmp_path):
    """compile(precision=...): the JIT and a written library both record it; bf16 stays within the
    model-level tolerance of docs/KERNEL_ACCURACY.md and really differs from f32."""
    feeds = bert_feeds(2, 16, seed=3)
    (want,) = onnxruntime_outputs(tiny_bert, feeds)
    f32 = onnxc.compile(tiny_bert, threads=1)
    assert f32.precision == "f32"
    for model in (onnxc.compile(tiny_bert, threads=1, precision="bf16"),
                  onnxc.compile(tiny_bert, threads=1, precision="bf16", output=str(tmp_path / "bf.so"))):
        assert model.precision == "bf16"
        assert isinstance(model.cpu_features, list)
        (got,) = model.run(None, feeds)
        a, b = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
        assert a @ b / np.sqrt((a @ a) * (b @ b)) >= 0.9999
        assert np.abs(got - want).max() <= 0.02 * np.abs(want).max()
        assert not np.array_equal(got, f32.run(None, feeds)[0])
    assert onnxc.compile(tiny_bert, precision="auto").precision in ("f32", "bf16")
    with pytest.raises(onnxc.Error, match=r"unknown --precision 'bf8' \(f32, bf16 or auto\)"):
        onnxc.compile(tiny_bert, precision="bf8")

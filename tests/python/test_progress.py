"""Progress on long work: the tool's status line on a terminal (and silence elsewhere), and
onnxc.compile's progress callback, default bar and interruption (Ctrl-C leaves no file)."""

import os
import pty
import select
import signal
import subprocess
import sys
import types

import numpy as np
import pytest

import onnxc

STAGES = ["load", "passes", "lower", "optimize", "codegen", "link", "done"]


@pytest.fixture(autouse=True)
def no_compile_cache(monkeypatch):
    """These tests follow and stop LLVM's own passes, which a compile cache hit skips
    (scripts/test.sh sets ONNXC_CACHE_DIR); test_a_cache_hit_passes_each_stage_once covers that."""
    monkeypatch.delenv("ONNXC_CACHE_DIR", raising=False)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """A two-layer MLP of random weights: quick to compile, with a few kernels to lower."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in [("w1", (32, 64)), ("b1", (64,)), ("w2", (64, 16))]]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 16])], weights)
    path = tmp_path_factory.mktemp("progress") / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def run_on_terminal(command):
    """Runs `command` with stdout and stderr on a pseudo-terminal; returns (exit code, what it
    wrote)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    written = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            process.kill()
            pytest.fail(f"{command} wrote nothing for 60 s")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the follower side closed
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    return process.wait(), written.decode(errors="replace")


def test_cli_draws_progress_on_a_terminal(onnxc_tool, mlp, tmp_path):
    library = tmp_path / "m.so"
    code, written = run_on_terminal([onnxc_tool, "compile", mlp, "-o", str(library)])
    assert code == 0, written
    for stage in ("passes", "lower", "optimize", "codegen", "link"):
        assert f"onnxc: {stage}" in written, written
    assert "\r\x1b[K" in written, written  # drawn in place, then erased
    summary = [line for line in written.splitlines() if "compiled 'm'" in line]
    assert len(summary) == 1 and f"-> {library} (" in summary[0], written


def test_cli_keeps_quiet_in_a_pipe_and_with_quiet(onnxc_tool, mlp, tmp_path):
    piped = subprocess.run([onnxc_tool, "compile", mlp, "-o", str(tmp_path / "a.so")],
                           capture_output=True, text=True, check=True)
    assert piped.stderr == "", piped.stderr
    assert "\x1b" not in piped.stdout and piped.stdout.count("\n") == 1, piped.stdout
    code, written = run_on_terminal([onnxc_tool, "compile", mlp, "-o", str(tmp_path / "b.so"), "--quiet"])
    assert code == 0 and "onnxc: " not in written and "\x1b" not in written, written
    code, written = run_on_terminal([onnxc_tool, "bench", mlp, "--shape", "x=2x32", "--iters", "2", "--quiet"])
    assert code == 0 and "onnxc: " not in written, written


def test_cli_bench_draws_progress_on_a_terminal(onnxc_tool, mlp):
    code, written = run_on_terminal([onnxc_tool, "bench", mlp, "--shape", "x=2x32", "--iters", "2"])
    assert code == 0, written
    assert "onnxc: lower" in written and "onnxc: codegen" in written, written


def test_callback_sees_every_stage_in_order(mlp, tmp_path):
    events = []
    library = tmp_path / "m.so"
    model = onnxc.compile(mlp, output=library, progress=events.append)
    stages = [event.stage for event in events]
    assert sorted(set(stages), key=STAGES.index) == STAGES, stages
    assert stages == sorted(stages, key=STAGES.index), stages  # never back to an earlier stage
    lowered = [event for event in events if event.stage == "lower"]
    assert {event.detail for event in lowered} >= {"MatMul"}, lowered
    assert all(0 <= event.done < event.total for event in lowered), lowered
    assert events[-1].bytes == os.path.getsize(library), events[-1]
    assert model(np.ones((2, 32), np.float32)).shape == (2, 16)


def test_jit_callback_has_no_link(mlp):
    events = []
    onnxc.compile(mlp, progress=events.append)
    stages = {event.stage for event in events}
    assert "link" not in stages and {"lower", "codegen", "done"} <= stages, stages
    assert events[-1].stage == "done" and events[-1].bytes == 0


def _stop_at(stage, occurrence, how):
    """A progress callback that stops the compile at the `occurrence`-th event of `stage`: by
    raising KeyboardInterrupt, or by sending SIGINT to this process (Ctrl-C)."""
    seen = []

    def progress(event):
        if event.stage == stage:
            seen.append(event)
            if len(seen) == occurrence:
                if how == "raise":
                    raise KeyboardInterrupt
                os.kill(os.getpid(), signal.SIGINT)
    return progress, seen


# The second optimize and codegen events come from inside LLVM's pass managers (codegen/
# LlvmProgress.h): stopping there skips LLVM's remaining passes.
@pytest.mark.parametrize("stage,occurrence", [("passes", 3), ("lower", 1), ("optimize", 1), ("optimize", 2),
                                              ("codegen", 1), ("codegen", 2), ("link", 1)])
def test_interrupt_leaves_no_file(mlp, tmp_path, stage, occurrence):
    out = tmp_path / "out"
    out.mkdir()
    progress, seen = _stop_at(stage, occurrence, "raise")
    with pytest.raises(KeyboardInterrupt):
        onnxc.compile(mlp, output=out / "m.so", progress=progress)
    assert len(seen) == occurrence
    assert os.listdir(out) == []


def test_a_cache_hit_passes_each_stage_once(mlp, tmp_path, monkeypatch):
    """From the compile cache (codegen/artifact/CompileCache.h) the stages come in the same order,
    optimize and codegen once each, and a stop at either still leaves no file."""
    monkeypatch.setenv("ONNXC_CACHE_DIR", str(tmp_path / "cache"))
    onnxc.compile(mlp, output=tmp_path / "first.so", progress=False)
    events = []
    onnxc.compile(mlp, output=tmp_path / "second.so", progress=events.append)
    stages = [event.stage for event in events]
    assert stages == sorted(stages, key=STAGES.index), stages
    assert stages.count("optimize") == 1 and stages.count("codegen") == 1, stages
    for stage in ("optimize", "codegen"):
        out = tmp_path / stage
        out.mkdir()
        progress, seen = _stop_at(stage, 1, "raise")
        with pytest.raises(KeyboardInterrupt):
            onnxc.compile(mlp, output=out / "m.so", progress=progress)
        assert os.listdir(out) == []


@pytest.mark.parametrize("stage,occurrence", [("optimize", 2), ("codegen", 2)])
def test_interrupt_stops_the_jit_inside_llvm(mlp, stage, occurrence):
    """The JIT's machine code is made by LLVM's passes in this process (ObjectEmitter.h's
    optimizeAndCompile): stopping inside them throws no model out."""
    progress, seen = _stop_at(stage, occurrence, "raise")
    with pytest.raises(KeyboardInterrupt):
        onnxc.compile(mlp, progress=progress)
    assert len(seen) == occurrence
    model = onnxc.compile(mlp, progress=False)  # the process's LLVM state is still sound
    assert model(np.ones((1, 32), np.float32)).shape == (1, 16)


@pytest.mark.parametrize("output", [False, True])
def test_ctrl_c_stops_the_compile(mlp, tmp_path, output):
    """SIGINT while the compiler runs without the GIL: the driver sees it at its next step."""
    progress, seen = _stop_at("lower", 1, "signal")
    with pytest.raises(KeyboardInterrupt):
        onnxc.compile(mlp, output=tmp_path / "m.so" if output else None, progress=progress)
    assert seen and os.listdir(tmp_path) == []


def test_default_bar_is_tqdm_on_a_terminal(mlp, monkeypatch):
    bars = []

    class FakeBar:
        def __init__(self, total=None, desc="", **kwargs):
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            bars.append(self)

        def set_postfix_str(self, text, refresh=True):
            pass

        def refresh(self):
            pass

        def close(self):
            self.closed = True

    fake = types.ModuleType("tqdm.auto")
    fake.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    onnxc.compile(mlp)
    assert [bar.desc for bar in bars][:3] == ["onnxc load", "onnxc passes", "onnxc lower"], bars
    assert all(bar.closed for bar in bars)
    bars.clear()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    onnxc.compile(mlp)
    assert bars == []
    onnxc.compile(mlp, progress=False)
    assert bars == []


def test_progress_must_be_callable(mlp):
    with pytest.raises(TypeError, match="progress must be callable"):
        onnxc.compile(mlp, progress=3)

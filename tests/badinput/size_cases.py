"""Models and inputs that ask for sizes onnxc cannot hold (issue 10, item 2).

Every case once crashed the compiled path (a byte size of 2^64 wrapped to 0, so the runtime
allocated 64 bytes and the kernel wrote past them) or killed shape inference with SIGFPE, while
the reference evaluator refused it. Now each must end in one `error:` line naming the node, or
(where the model is legal) run correctly, through every command that reaches it: `dump`, `run`
with the JIT, `run --backend=ref` and `compile`.

make_bad_models.py calls write(out); run_bad_inputs.py calls cases(...).
"""

import resource
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
INT64_MIN = -(2 ** 63)


def _model(nodes, inputs, outputs, initializers=(), sparse=(), name="size"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers),
                              sparse_initializer=list(sparse))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="onnxc-badinput")
    model.ir_version = 8
    return model


def _info(name, dtype, dims):
    return helper.make_tensor_value_info(name, dtype, dims)


def _const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def _save(model, path: Path) -> None:
    path.write_bytes(model.SerializeToString())


def _sparse(name, dims, nonzero_at=5):
    values = numpy_helper.from_array(np.array([1.0], np.float32), name)
    indices = numpy_helper.from_array(np.array([nonzero_at], np.int64), name + "_indices")
    return helper.make_sparse_tensor(values, indices, dims)


# Model file -> (node whose name the error must carry, inputs written as .npy files).
OVERFLOWING = {
    # f32[2] tiled 2^61 times: 2^62 elements, 2^64 bytes.
    "tile_2e61.onnx": "tile_huge",
    # f32[n] tiled 2^62 times: the symbolic size n*2^62 elements overflows in bytes.
    "tile_n_2e62.onnx": "tile_symbolic",
    # Expand to Shape(x) * 2^62.
    "expand_2e62.onnx": "expand_huge",
    # ConstantOfShape([2^31, 2^31]): 2^62 elements.
    "constant_of_shape_2e62.onnx": "fill_huge",
    # An empty initializer [0, 2^62] reduced over axis 0 leaves 2^62 elements.
    "reduce_empty_2e62.onnx": "reduce_empty",
    # f32[0] reshaped to [2^62, 4]: the element count wraps to 0 in unchecked arithmetic.
    "reshape_empty_2e62.onnx": "reshape_empty",
}


def write(out: Path) -> None:
    size = out / "size"
    size.mkdir(exist_ok=True)
    np.save(size / "x2.npy", np.ones(2, np.float32))
    np.save(size / "x1.npy", np.ones(1, np.float32))
    np.save(size / "x0.npy", np.ones(0, np.float32))

    tile = helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile_huge")
    _save(_model([tile], [_info("x", F32, [2])], [_info("y", F32, None)],
                 [_const("repeats", [2 ** 61])]), size / "tile_2e61.onnx")
    tile = helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile_symbolic")
    _save(_model([tile], [_info("x", F32, ["n"])], [_info("y", F32, None)],
                 [_const("repeats", [2 ** 62])]), size / "tile_n_2e62.onnx")
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Mul", ["shape", "factor"], ["big"], name="scale"),
             helper.make_node("Expand", ["one", "big"], ["y"], name="expand_huge")]
    _save(_model(nodes, [_info("x", F32, [1])], [_info("y", F32, None)],
                 [_const("factor", [2 ** 62]), _const("one", [1.0], np.float32)]),
          size / "expand_2e62.onnx")
    fill = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill_huge")
    add = helper.make_node("Add", ["y", "x"], ["z"], name="add")
    _save(_model([fill, add], [_info("x", F32, [1])], [_info("z", F32, None)],
                 [_const("shape", [2 ** 31, 2 ** 31])]), size / "constant_of_shape_2e62.onnx")
    empty = TensorProto(name="W", data_type=F32, dims=[0, 2 ** 62], raw_data=b"")
    reduce = helper.make_node("ReduceSum", ["W", "axes"], ["r"], name="reduce_empty", keepdims=0)
    add = helper.make_node("Add", ["r", "x"], ["y"], name="add")
    _save(_model([reduce, add], [_info("x", F32, [1])], [_info("y", F32, None)],
                 [empty, _const("axes", [0])]), size / "reduce_empty_2e62.onnx")
    reshape = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_empty")
    _save(_model([reshape], [_info("x", F32, [0])], [_info("y", F32, None)],
                 [_const("shape", [2 ** 62, 4])]), size / "reshape_empty_2e62.onnx")

    # A Reshape target and Unsqueeze axes of 2^40 elements whose contents are unknown: the
    # result's rank would be 2^40 (the onnx-import fuzzer's timeout, a near-endless loop making
    # fresh symbols).
    fill = helper.make_node("ConstantOfShape", ["count"], ["target"], name="fill_target",
                            value=numpy_helper.from_array(np.array([1], np.int64)))
    reshape = helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape_rank")
    _save(_model([fill, reshape], [_info("x", F32, [1])], [_info("y", F32, None)],
                 [_const("count", [2 ** 40])]), size / "reshape_rank_2e40.onnx")
    fill = helper.make_node("ConstantOfShape", ["count"], ["axes"], name="fill_axes",
                            value=numpy_helper.from_array(np.array([0], np.int64)))
    unsqueeze = helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="unsqueeze_rank")
    _save(_model([fill, unsqueeze], [_info("x", F32, [1])], [_info("y", F32, None)],
                 [_const("count", [2 ** 40])]), size / "unsqueeze_rank_2e40.onnx")

    # y = Range(s, l, d): a benign model whose output size is the input data.
    rng = helper.make_node("Range", ["s", "l", "d"], ["y"], name="range_of_inputs")
    _save(_model([rng], [_info("s", I64, []), _info("l", I64, []), _info("d", I64, [])],
                 [_info("y", I64, None)]), size / "range.onnx")
    for name, value in (("zero", 0), ("one", 1), ("ten", 10), ("huge", 2 ** 61)):
        np.save(size / f"{name}.npy", np.array(value, np.int64))

    # INT64_MIN / -1 between constants (folded and inferred as known contents), and
    # Shape(x) * INT64_MIN / -1 (a symbolic n*INT64_MIN divided exactly by -1).
    div = helper.make_node("Div", ["lowest", "minus_one"], ["q"], name="div_lowest")
    add = helper.make_node("Add", ["q", "xi"], ["y"], name="add")
    _save(_model([div, add], [_info("xi", I64, [1])], [_info("y", I64, None)],
                 [_const("lowest", [INT64_MIN]), _const("minus_one", [-1])]),
          size / "div_int64_min.onnx")
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Mul", ["shape", "lowest"], ["scaled"], name="scale"),
             helper.make_node("Div", ["scaled", "minus_one"], ["y"], name="div_symbolic")]
    _save(_model(nodes, [_info("x", F32, ["n"])], [_info("y", I64, None)],
                 [_const("lowest", [INT64_MIN]), _const("minus_one", [-1])]),
          size / "div_symbolic_int64_min.onnx")
    np.save(size / "xi.npy", np.array([5], np.int64))

    # A 60-byte sparse initializer declaring 2^39 f32 (2 TiB), and one of 2^28 (1 GiB) whose
    # zeros must not be written ahead of use.
    total = helper.make_node("ReduceSum", ["W"], ["s"], name="sum_sparse", keepdims=0)
    add = helper.make_node("Add", ["s", "x"], ["y"], name="add")
    for label, count in (("sparse_2e39", 2 ** 39), ("sparse_2e28", 2 ** 28)):
        _save(_model([total, add], [_info("x", F32, [1])], [_info("y", F32, None)],
                     sparse=[_sparse("W", [count])]), size / f"{label}.onnx")

    # 2^28 f32 (1 GiB) from a Tile: within int64, beyond a --memory-limit of 256M.
    tile = helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile_gib")
    _save(_model([tile], [_info("x", F32, [2])], [_info("y", F32, None)],
                 [_const("repeats", [2 ** 27])]), size / "tile_1gib.onnx")

    # .npy headers: a huge shape over a few bytes, and an empty array with a zero dim after
    # the first (a legal [2, 0, 3] tensor, as an empty KV cache is).
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 4), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    (size / "huge_shape.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                                          + header.encode() + b"\0" * 16)
    np.save(size / "empty_middle.npy", np.zeros((2, 0, 3), np.float32))
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
    _save(_model([relu], [_info("x", F32, ["a", "b", 3])], [_info("y", F32, ["a", "b", 3])]),
          size / "relu3d.onnx")

    # Inputs whose shapes break what shape inference had to take on trust: once computed by the
    # compiled path as if the symbolic dim had the constant's value (a silent wrong answer).
    add = helper.make_node("Add", ["x", "c"], ["y"], name="add_broadcast")
    _save(_model([add], [_info("x", F32, ["seq"])], [_info("y", F32, None)],
                 [_const("c", np.arange(4), np.float32)]), size / "broadcast_seq_4.onnx")
    matmul = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm_k")
    _save(_model([matmul], [_info("x", F32, [2, "k"])], [_info("y", F32, None)],
                 [_const("w", np.ones((4, 3)), np.float32)]), size / "matmul_k_4.onnx")
    nodes = [helper.make_node("Shape", ["x"], ["n"], name="shape"),
             helper.make_node("Slice", ["table", "zero", "n"], ["cut"], name="slice_table"),
             helper.make_node("Add", ["cut", "x"], ["y"], name="add")]
    _save(_model(nodes, [_info("x", F32, ["seq"])], [_info("y", F32, None)],
                 [_const("table", np.arange(8), np.float32), _const("zero", [0])]),
          size / "slice_table_8.onnx")
    for n in (4, 5, 9):
        np.save(size / f"seq{n}.npy", np.ones(n, np.float32))
    np.save(size / "k5.npy", np.ones((2, 5), np.float32))
    np.save(size / "k4.npy", np.ones((2, 4), np.float32))


def _exit_zero_with(output_dir: str, name: str, want: np.ndarray) -> Callable:
    def check(result) -> Optional[str]:
        if result.code != 0:
            return f"exit code {result.code}, expected 0: {result.stderr.strip()[:300]!r}"
        path = Path(output_dir) / f"{name}.npy"
        if not path.exists():
            return f"no {path.name} written"
        got = np.load(path)
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            return f"{path.name} is {got.dtype}{list(got.shape)} {got.ravel()[:4]}, expected {want}"
        return None
    return check


def _peak_rss_below(argv: list, limit_mib: int) -> Callable:
    """Runs argv again on its own and checks its peak resident memory (not a time)."""
    def check(result) -> Optional[str]:
        if result.code != 0:
            return f"exit code {result.code}, expected 0: {result.stderr.strip()[:300]!r}"
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        done = subprocess.run(argv + ["--output-dir", tempfile.mkdtemp()], capture_output=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if done.returncode != 0:
            return f"second run exit code {done.returncode}"
        # ru_maxrss of children is the largest child so far: only a new maximum is this run's.
        if peak > before and peak > limit_mib * 1024:
            return f"peak RSS {peak // 1024} MiB, expected below {limit_mib} MiB (zeros written ahead of use?)"
        return None
    return check


def cases(onnxc: str, out: Path, scratch: Path, Case) -> list:
    size = out / "size"
    found = []

    def run_dir() -> str:
        return tempfile.mkdtemp(prefix="run_", dir=scratch)

    def every_command(model: str, inputs: list, names: list, keywords: list) -> None:
        path = str(size / model)
        feeds = [a for name in inputs for a in ("--input", f"{name}")]
        found.append(Case(f"dump {model}", [onnxc, "dump", path], [model] + names, keywords,
                          strip=[path]))
        for backend in ("jit", "ref"):
            found.append(Case(f"run {model} ({backend})",
                              [onnxc, "run", path, *feeds, "--output-dir", run_dir(),
                               f"--backend={backend}"], names, keywords, strip=[path]))
        library = str(scratch / (Path(model).stem + ".so"))
        found.append(Case(f"compile {model}", [onnxc, "compile", path, "-o", library],
                          [model] + names, keywords, strip=[path, library]))

    overflow = ("int64", "overflow", "more than 2\\^40", "memory limit")
    inputs = {"tile_2e61.onnx": ["x=" + str(size / "x2.npy")],
              "tile_n_2e62.onnx": ["x=" + str(size / "x1.npy")],
              "expand_2e62.onnx": ["x=" + str(size / "x1.npy")],
              "constant_of_shape_2e62.onnx": ["x=" + str(size / "x1.npy")],
              "reduce_empty_2e62.onnx": ["x=" + str(size / "x1.npy")],
              "reshape_empty_2e62.onnx": ["x=" + str(size / "x0.npy")]}
    for model, node in OVERFLOWING.items():
        every_command(model, inputs[model], [node], [overflow])

    for model, node in (("reshape_rank_2e40.onnx", "reshape_rank"),
                        ("unsqueeze_rank_2e40.onnx", "unsqueeze_rank")):
        every_command(model, ["x=" + str(size / "x1.npy")], [node], ["would have rank 109951162777[67]"])

    # Range sized by input data: the JIT specializes the values in, the .so cannot be built
    # for data-dependent shapes, the evaluator refuses the allocation.
    model = str(size / "range.onnx")
    feeds = lambda l: ["--input", f"s={size / 'zero.npy'}", "--input", f"l={size / l}",
                       "--input", f"d={size / 'one.npy'}"]
    for backend in ("jit", "ref"):
        output_dir = run_dir()
        found.append(Case(f"run range.onnx ({backend}) with l = 10 (control)",
                          [onnxc, "run", model, *feeds("ten.npy"), "--output-dir", output_dir,
                           f"--backend={backend}"], mode="custom",
                          check=_exit_zero_with(output_dir, "y", np.arange(10, dtype=np.int64))))
        found.append(Case(f"run range.onnx ({backend}) with l = 2^61",
                          [onnxc, "run", model, *feeds("huge.npy"), "--output-dir", run_dir(),
                           f"--backend={backend}"], ["range_of_inputs"],
                          [overflow + ("too large",)]))

    # INT64_MIN / -1 is defined (it wraps to INT64_MIN, as the kernels compute it) and must
    # neither trap in shape inference nor in constant folding.
    model = str(size / "div_int64_min.onnx")
    want = np.array([INT64_MIN + 5], np.int64)
    found.append(Case("dump div_int64_min.onnx -O2", [onnxc, "dump", model, "-O2"], mode="custom",
                      check=lambda r: None if r.code == 0 else f"exit {r.code}: {r.stderr[:200]!r}"))
    for backend in ("jit", "ref"):
        output_dir = run_dir()
        found.append(Case(f"run div_int64_min.onnx ({backend})",
                          [onnxc, "run", model, "--input", f"xi={size / 'xi.npy'}", "--output-dir",
                           output_dir, f"--backend={backend}"], mode="custom",
                          check=_exit_zero_with(output_dir, "y", want)))
    model = str(size / "div_symbolic_int64_min.onnx")
    found.append(Case("dump div_symbolic_int64_min.onnx", [onnxc, "dump", model, "-O2"],
                      mode="custom",
                      check=lambda r: None if r.code == 0 else f"exit {r.code}: {r.stderr[:200]!r}"))
    for backend in ("jit", "ref"):
        output_dir = run_dir()
        found.append(Case(f"run div_symbolic_int64_min.onnx ({backend})",
                          [onnxc, "run", model, "--input", f"x={size / 'x1.npy'}", "--output-dir",
                           output_dir, f"--backend={backend}"], mode="custom",
                          check=_exit_zero_with(output_dir, "y", np.array([INT64_MIN], np.int64))))

    # The 2 TiB sparse initializer is refused by the memory budget, naming it.
    model = str(size / "sparse_2e39.onnx")
    for command in (["dump", model], ["run", model, "--input", f"x={size / 'x1.npy'}",
                                      "--output-dir", run_dir(), "--backend=ref"]):
        found.append(Case(f"{command[0]} sparse_2e39.onnx", [onnxc, *command],
                          ["sparse_2e39.onnx", "'W'"], ["memory limit"], strip=[model]))
    # The 1 GiB one loads and evaluates with its zeros never written (the evaluator only
    # reads them): its peak memory stays far below 1 GiB.
    model = str(size / "sparse_2e28.onnx")
    argv = [onnxc, "run", model, "--input", f"x={size / 'x1.npy'}", "--backend=ref"]
    output_dir = run_dir()
    found.append(Case("run sparse_2e28.onnx (ref): right sum", argv + ["--output-dir", output_dir],
                      mode="custom", check=_exit_zero_with(output_dir, "y",
                                                           np.array([2.0], np.float32))))
    found.append(Case("run sparse_2e28.onnx (ref): zeros not written ahead of use", argv,
                      mode="custom", check=_peak_rss_below(argv, 512)))

    # --memory-limit: a 1 GiB Tile refused before allocation by the evaluator and the runtime.
    model = str(size / "tile_1gib.onnx")
    for backend in ("jit", "ref"):
        found.append(Case(f"run tile_1gib.onnx ({backend}) --memory-limit 256M",
                          [onnxc, "run", model, "--input", f"x={size / 'x2.npy'}", "--output-dir",
                           run_dir(), f"--backend={backend}", "--memory-limit", "256M"],
                          [], ["memory limit"], strip=[model]))
    found.append(Case("run --memory-limit with a bad size",
                      [onnxc, "run", model, "--memory-limit", "lots"], mode="custom",
                      check=lambda r: None if r.code == 2 and "memory-limit" in r.stderr
                      else f"exit {r.code}, expected the usage error 2: {r.stderr[:200]!r}"))

    # .npy: a huge declared shape over 16 bytes; an empty array with a zero dim after the first.
    model = str(size / "relu3d.onnx")
    found.append(Case("run huge_shape.npy", [onnxc, "run", model, "--input",
                                             f"x={size / 'huge_shape.npy'}", "--output-dir",
                                             run_dir(), "--backend=ref"],
                      ["huge_shape.npy"], ["size mismatch"]))
    for backend in ("jit", "ref"):
        output_dir = run_dir()
        found.append(Case(f"run empty_middle.npy ({backend})",
                          [onnxc, "run", model, "--input", f"x={size / 'empty_middle.npy'}",
                           "--output-dir", output_dir, f"--backend={backend}"], mode="custom",
                          check=_exit_zero_with(output_dir, "y", np.zeros((2, 0, 3), np.float32))))

    # Wrong input shapes against the model's assumptions: refused by the reference, the JIT
    # and a compiled library alike, naming the node; the right shapes run.
    for model, node, good, bad in (("broadcast_seq_4.onnx", "add_broadcast", "seq4.npy", "seq5.npy"),
                                   ("matmul_k_4.onnx", "mm_k", "k4.npy", "k5.npy"),
                                   ("slice_table_8.onnx", "slice_table", "seq5.npy", "seq9.npy")):
        path = str(size / model)
        library = str(scratch / (Path(model).stem + ".so"))
        found.append(Case(f"compile {model}", [onnxc, "compile", path, "-o", library],
                          mode="custom",
                          check=lambda r: None if r.code == 0 else f"exit {r.code}: {r.stderr[:200]!r}"))
        for label, target, backend in (("ref", path, ["--backend=ref"]), ("jit", path, ["--backend=jit"]),
                                       ("so", library, [])):
            found.append(Case(f"run {model} ({label}) with {good} (control)",
                              [onnxc, "run", target, "--input", f"x={size / good}", "--output-dir",
                               run_dir(), *backend], mode="custom",
                              check=lambda r: None if r.code == 0 else f"exit {r.code}: {r.stderr[:200]!r}"))
            found.append(Case(f"run {model} ({label}) with {bad}",
                              [onnxc, "run", target, "--input", f"x={size / bad}", "--output-dir",
                               run_dir(), *backend], [node], [("must equal", "must be 1 or", "at most",
                                                               "broadcast", "mismatch")],
                              strip=[path, library]))
    return found

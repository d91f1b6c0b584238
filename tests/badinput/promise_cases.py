"""The README's promises on every path (issue 33): nothing silently wrong, nothing overwritten,
memory bounded, no hang, through every backend.

- If and Loop conditions and Loop trip counts hold one element: a `bool[k]` condition given zero
  or two elements, an `i64[k]` trip count given none (which hung the compiled loop), are refused
  naming the node by the reference evaluator, the JIT and a compiled .so alike; a static `bool[2]`
  condition is refused when compiling.
- `dump -o` and `run --output-dir` never write over the model or its external data.
- An ONNXC_MEMORY_LIMIT that does not parse is an error in the tool and in a compiled library,
  never ignored.
- Response files and --input files that are devices or pipes are refused before being read.
- A Loop whose scan outputs would outgrow the memory limit is refused at once by the reference
  evaluator, not after billions of iterations.
- An opset-23 Attention mask longer than the keys, a graph output declared with another dtype
  than its producer makes, Scan direction lists that are not 0/1 or have the wrong count: refused.

run_bad_inputs.py calls cases(...); the models are written here, as text IR or with onnx.helper.
"""

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IF_IR = """graph @cond(%c: bool[k], %x: f32[n]) -> (%y: f32[n]) {
  %y = If(%c, %x) then_branch = graph @pos(%x: f32[n]) -> (%t: f32[n]) {
    %t = Relu(%x)
    return %t
  } else_branch = graph @neg(%x: f32[n]) -> (%e: f32[n]) {
    %e = Neg(%x)
    return %e
  }
  return %y
}
"""

STATIC_IF_IR = IF_IR.replace("bool[k]", "bool[2]")

LOOP_IR = """graph @trips(%m: i64[k], %x: f32[3]) -> (%acc: f32[3]) {
  %acc = Loop(%m, _, %x) body = graph @b(%i: i64[], %cond: bool[], %v: f32[3]) -> (%go: bool[], %next: f32[3]) {
    const %two: f32[] = dense<2.0>
    %next = Mul(%v, %two)
    return %cond, %next
  }
  return %acc
}
"""

# One byte per iteration, 2^62 iterations: 4 EiB of scan output.
HUGE_SCAN_IR = """graph @huge(%x: u8[]) -> (%acc: u8[], %rows: u8[?]) {
  const %m: i64[] = dense<4611686018427387904>
  %acc, %rows = Loop(%m, _, %x) body = graph @b(%i: i64[], %cond: bool[], %v: u8[]) -> (%go: bool[], %next: u8[], %emit: u8[]) {
    %next = Identity(%v)
    return %cond, %next, %v
  }
  return %acc, %rows
}
"""

# An opset-23 Attention whose float mask has 9 columns for 6 keys.
LONG_MASK_IR = """graph @long_mask(%q: f32[1, 2, 3, 4], %k: f32[1, 2, kv, 4], %v: f32[1, 2, kv, 4], %mask: f32[3, 9]) -> (%y: f32[1, 2, 3, 4]) {
  %y = Attention(%q, %k, %v, %mask)
  return %y
}
"""

SCAN_DIRECTIONS_IR = """graph @scan(%init: f32[2], %xs: f32[5, 2]) -> (%final: f32[2], %ys: f32[5, 2]) {
  %final, %ys = Scan(%init, %xs) {num_scan_inputs = 1, scan_input_directions = DIRECTIONS} body = graph @b(%s: f32[2], %x: f32[2]) -> (%t: f32[2], %y: f32[2]) {
    %t = Add(%s, %x)
    return %t, %t
  }
  return %final, %ys
}
"""


def write_models(folder: Path) -> dict:
    paths = {}
    for name, text in {"cond.ir": IF_IR, "static_cond.ir": STATIC_IF_IR, "trips.ir": LOOP_IR,
                       "huge_scan.ir": HUGE_SCAN_IR, "long_mask.ir": LONG_MASK_IR,
                       "scan_direction_2.ir": SCAN_DIRECTIONS_IR.replace("DIRECTIONS", "[2]"),
                       "scan_directions_count.ir":
                           SCAN_DIRECTIONS_IR.replace("DIRECTIONS", "[0, 0]"),
                       "scan_axis_minus_3.ir": SCAN_DIRECTIONS_IR.replace(
                           "scan_input_directions = DIRECTIONS", "scan_input_axes = [-3]")}.items():
        (folder / name).write_text(text)
        paths[name] = folder / name
    # A Relu whose output is declared i64: onnxruntime refuses it at load.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              folder / "declared_i64.onnx")
    paths["declared_i64.onnx"] = folder / "declared_i64.onnx"
    return paths


def external_model(folder: Path, data_name: str) -> Path:
    """y = x + w, with w stored in the external file `data_name` beside the model."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    weights = numpy_helper.from_array(np.arange(4, dtype=np.float32) + 1, "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y],
                              [weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location=data_name, size_threshold=0)
    return path


def compile_quietly(onnxc: str, model: Path, library: Path) -> None:
    """Builds `library`; a failure shows up in the cases that run it."""
    subprocess.run([onnxc, "compile", str(model), "-o", str(library)], capture_output=True,
                   timeout=120)


def unchanged(files: dict, keywords: list, error_line_problem, Case):
    """Fails with one error line holding `keywords`, every file in `files` as it was."""
    expected = Case("", [], [], keywords)

    def check(result) -> Optional[str]:
        if result.code != 1:
            return f"exit code {result.code}, expected 1: {result.stderr.strip()[:200]!r}"
        problem = error_line_problem(expected, result)
        if problem:
            return problem
        for path, before in files.items():
            if path.read_bytes() != before:
                return f"{path.name} was overwritten"
        return None
    return check


def cases(onnxc: str, out: Path, scratch: Path, Case, error_line_problem) -> list:
    folder = Path(tempfile.mkdtemp(prefix="promises_", dir=scratch))
    models = write_models(folder)
    np.save(folder / "x3.npy", np.ones(3, np.float32))
    np.save(folder / "x5.npy", np.ones(5, np.float32))
    np.save(folder / "no_cond.npy", np.zeros(0, bool))
    np.save(folder / "two_cond.npy", np.ones(2, bool))
    np.save(folder / "no_trips.npy", np.zeros(0, np.int64))
    found = []
    # Conditions and trip counts of the wrong element count, every backend.
    cond, trips = models["cond.ir"], models["trips.ir"]
    for name in ("cond", "trips"):
        compile_quietly(onnxc, models[f"{name}.ir"], folder / f"{name}.so")
    runs = {"ref": lambda m: [onnxc, "run", str(m), "--backend=ref"],
            "jit": lambda m: [onnxc, "run", str(m)],
            "so": lambda m: [onnxc, "run", str(m.with_suffix(".so"))]}
    for backend, command in runs.items():
        for feed in ("no_cond", "two_cond"):
            found.append(Case(f"run cond.ir with a {feed} condition ({backend})",
                              command(cond) + ["--input", f"c={folder / feed}.npy", "--input",
                                               f"x={folder / 'x5.npy'}"],
                              keywords=["condition", ("one element", "element count")]))
        found.append(Case(f"run trips.ir with no trip count ({backend}; hung the compiled loop)",
                          command(trips) + ["--input", f"m={folder / 'no_trips.npy'}", "--input",
                                            f"x={folder / 'x3.npy'}"],
                          keywords=["trip count", ("one element", "element count")]))
    found.append(Case("compile static_cond.ir (bool[2] condition)",
                      [onnxc, "compile", str(models["static_cond.ir"]), "-o",
                       str(folder / "static.so")], keywords=["condition", "one element"]))
    found.append(Case("run huge_scan.ir (2^62 one-byte scan rows, reference)",
                      [onnxc, "run", str(models["huge_scan.ir"]), "--backend=ref", "--shape",
                       "x="], keywords=["memory limit"]))
    found.append(Case("run long_mask.ir (a 9-column mask for 6 keys, jit)",
                      [onnxc, "run", str(models["long_mask.ir"]), "--shape", "q=1x2x3x4",
                       "--shape", "k=1x2x6x4", "--shape", "v=1x2x6x4", "--shape", "mask=3x9"],
                      keywords=["mask", "key"]))
    found.append(Case("import declared_i64.onnx (a Relu's output declared i64)",
                      [onnxc, "run", str(models["declared_i64.onnx"]), "--backend=ref"],
                      names=["'y'"], keywords=["declared i64", "f32"]))
    for name in ("scan_direction_2.ir", "scan_directions_count.ir"):
        found.append(Case(f"run {name}", [onnxc, "run", str(models[name]), "--backend=ref"],
                          keywords=["scan_input_directions"]))
    found.append(Case("run scan_axis_minus_3.ir (quoted as written, not normalized)",
                      [onnxc, "run", str(models["scan_axis_minus_3.ir"]), "--backend=ref"],
                      keywords=["scan_input_axes entry -3", "rank 2"]))
    # An .npy header holding a terminal escape and a NUL: the error line shows them escaped.
    hostile = folder / "hostile.npy"
    header = b"{'descr': '<f4\x1b[31m\x00', 'fortran_order': False, 'shape': (3,), }"
    header += b" " * (118 - len(header)) + b"\n"
    hostile.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
                        + b"\x00" * 12)
    found.append(Case("run trips.ir --input x=hostile.npy (escapes in its header)",
                      [onnxc, "run", str(trips), "--backend=ref", "--input",
                       f"x={hostile}", "--shape", "m=1"], mode="custom", check=escaped_check))
    found += overwrite_cases(onnxc, folder, Case, error_line_problem)
    found += environment_and_file_cases(onnxc, folder, Case, error_line_problem)
    return found


def overwrite_cases(onnxc: str, folder: Path, Case, error_line_problem) -> list:
    found = []
    for target in ("m.onnx", "weights.bin"):
        place = Path(tempfile.mkdtemp(prefix="dump_over_", dir=folder))
        model = external_model(place, "weights.bin")
        files = {p: p.read_bytes() for p in (model, place / "weights.bin")}
        found.append(Case(f"dump --format=onnx -o {target} (the model's own files)",
                          [onnxc, "dump", str(model), "--format=onnx", "-o", str(place / target)],
                          mode="custom",
                          check=unchanged(files, ["would overwrite"], error_line_problem, Case)))
    # An external data file named like an output's .npy, in --output-dir.
    place = Path(tempfile.mkdtemp(prefix="run_over_data_", dir=folder))
    model = external_model(place, "y.npy")
    files = {p: p.read_bytes() for p in (model, place / "y.npy")}
    found.append(Case("run --output-dir onto the external data file y.npy",
                      [onnxc, "run", str(model), "--backend=ref", "--shape", "x=4",
                       "--output-dir", str(place)], mode="custom",
                      check=unchanged(files, ["external data"], error_line_problem, Case)))
    return found


def usage_error(Case, error_line_problem, label, argv, keywords) -> "Case":
    """A mistake on the command line: one error line with `keywords`, exit code 2."""
    expected = Case("", [], [], keywords)

    def check(result) -> Optional[str]:
        if result.code != 2:
            return f"exit code {result.code}, expected 2: {result.stderr.strip()[:200]!r}"
        return error_line_problem(expected, result)
    return Case(label, argv, mode="custom", check=check)


def environment_and_file_cases(onnxc: str, folder: Path, Case, error_line_problem) -> list:
    found = []
    relu = folder / "relu.ir"
    relu.write_text("graph @relu(%x: f32[n]) -> (%y: f32[n]) {\n  %y = Relu(%x)\n  return %y\n}\n")
    library = folder / "relu.so"
    compile_quietly(onnxc, relu, library)
    for value in ("256M ", "0.25G", "-1", "0", "banana", "\x1b[31mred"):
        for label, argv in {"jit": [onnxc, "run", str(relu), "--shape", "x=4"],
                            "so": [onnxc, "run", str(library), "--shape", "x=4"]}.items():
            found.append(Case(f"ONNXC_MEMORY_LIMIT={value!r} ({label})",
                              ["env", f"ONNXC_MEMORY_LIMIT={value}"] + argv,
                              keywords=["ONNXC_MEMORY_LIMIT", "positive size"],
                              strip=[value]))
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    for given in ("/dev/zero", str(fifo)):
        found.append(usage_error(Case, error_line_problem, f"run relu.ir @{given} (response file)",
                                 [onnxc, "run", str(relu), "@" + given],
                                 ["response file", "not a regular file"]))
        found.append(Case(f"run relu.ir --input x={given}",
                          [onnxc, "run", str(relu), "--input", f"x={given}"],
                          names=[given], keywords=["not a regular file"]))
    found.append(usage_error(Case, error_line_problem, "run relu.ir @/nonexistent",
                             [onnxc, "run", str(relu), "@/nonexistent"],
                             ["response file", "no such file"]))
    found.append(Case("run relu.ir --threads 10000",
                      [onnxc, "run", str(relu), "--shape", "x=4", "--threads", "10000"],
                      mode="custom", check=threads_limit_check))
    return found


def escaped_check(result) -> Optional[str]:
    if result.code != 1:
        return f"exit code {result.code}: {result.stderr.strip()[:200]!r}"
    if "\x1b" in result.stderr or "\x00" in result.stderr:
        return f"the error line echoes raw control bytes: {result.stderr!r}"
    if "\\x1b[31m\\x00" not in result.stderr:
        return f"the error line does not show the header's bytes escaped: {result.stderr!r}"
    return None


def threads_limit_check(result) -> Optional[str]:
    if result.code not in (1, 2):
        return f"exit code {result.code}: {result.stderr.strip()[:200]!r}"
    if "above the limit" not in result.stderr:
        return f"the error does not say the limit: {result.stderr.strip()[:200]!r}"
    return None

#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses (tests/fuzz/README.md).

Usage: make_corpus.py OUTDIR [NAME...]

OUTDIR/NAME/ gets the seeds of harness NAME (of every harness, or of the
NAMEs given), and OUTDIR/NAME.dict a libFuzzer
dictionary where one helps. Nothing here is committed; the build makes it.

  onnx-import       the ONNX backend node-test models (libonnx-testdata and the
                    venv's onnx package), transformer building blocks made with
                    onnx.helper, and the hostile models of tests/badinput
  ir-parser         the text-IR tests of tests/ir
  npy               small .npy files: every dtype, scalars, empty and 3-D
                    arrays, versions 1 to 3, and refused kinds (big-endian,
                    Fortran order, objects, structured dtypes)
  external-data     external-data models with relative paths in front (the
                    harness's input format: a count byte, paths, model bytes)
  jit-differential  byte strings the graph generator turns into graphs
"""

import hashlib
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
NODE_TEST_DIRS = [Path("/usr/include/onnx/backend/test/data/node"),
                  Path(onnx.__file__).parent / "backend/test/data/node"]
MAX_SEED_BYTES = 64 * 1024


def write_unique(folder: Path, name: str, data: bytes, seen: set) -> None:
    digest = hashlib.sha1(data).hexdigest()
    if digest in seen or len(data) > MAX_SEED_BYTES:
        return
    seen.add(digest)
    (folder / f"{name}-{digest[:8]}").write_bytes(data)


def model_bytes(nodes, inputs, outputs, initializers=(), opset=17) -> bytes:
    graph = helper.make_graph(nodes, "seed", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="onnxc-fuzz-seed")
    model.ir_version = 8
    return model.SerializeToString()


def f32(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def building_blocks() -> dict:
    """Small graphs in the shapes exporters write: what the -O2 fusions match."""
    rng = np.random.default_rng(0)
    hidden = 8
    blocks = {}
    # LayerNorm, decomposed as exporters write it.
    blocks["layernorm"] = model_bytes(
        [helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]),
         helper.make_node("Sub", ["x", "mean"], ["d"]),
         helper.make_node("Pow", ["d", "two"], ["sq"]),
         helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
         helper.make_node("Add", ["var", "eps"], ["ve"]),
         helper.make_node("Sqrt", ["ve"], ["std"]),
         helper.make_node("Div", ["d", "std"], ["n"]),
         helper.make_node("Mul", ["n", "g"], ["s"]),
         helper.make_node("Add", ["s", "b"], ["y"])],
        [f32("x", ["batch", "seq", hidden])], [f32("y", ["batch", "seq", hidden])],
        [const("two", np.float32(2)), const("eps", np.float32(1e-5)),
         const("g", rng.standard_normal(hidden).astype(np.float32)),
         const("b", rng.standard_normal(hidden).astype(np.float32))])
    # GELU (erf form).
    blocks["gelu"] = model_bytes(
        [helper.make_node("Div", ["x", "sqrt2"], ["a"]),
         helper.make_node("Erf", ["a"], ["e"]),
         helper.make_node("Add", ["e", "one"], ["p"]),
         helper.make_node("Mul", ["x", "p"], ["m"]),
         helper.make_node("Mul", ["m", "half"], ["y"])],
        [f32("x", ["batch", hidden])], [f32("y", ["batch", hidden])],
        [const("sqrt2", np.float32(1.4142135)), const("one", np.float32(1)),
         const("half", np.float32(0.5))])
    # Scaled dot-product attention with a padding mask and a causal Trilu mask,
    # heads split by a Shape -> Gather -> Concat -> Reshape chain.
    heads, head = 2, 4
    w = {n: const(n, rng.standard_normal((hidden, hidden)).astype(np.float32) * 0.3)
         for n in ("wq", "wk", "wv")}
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["shape", "i1"], ["s"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Unsqueeze", ["s", "ax0"], ["s1"]),
        helper.make_node("Concat", ["b1", "s1", "h", "d"], ["split"], axis=0),
    ]
    for n in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["x", "w" + n], [n + "p"]),
                  helper.make_node("Reshape", [n + "p", "split"], [n + "r"]),
                  helper.make_node("Transpose", [n + "r"], [n + "t"],
                                   perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3])]
    nodes += [
        helper.make_node("MatMul", ["qt", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "scale"], ["scaled"]),
        helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "maskf"], ["inv"]),
        helper.make_node("Mul", ["inv", "neg"], ["add"]),
        helper.make_node("Unsqueeze", ["add", "ax12"], ["add4"]),
        helper.make_node("Add", ["scaled", "add4"], ["masked"]),
        helper.make_node("Concat", ["s1", "s1"], ["ss"], axis=0),
        helper.make_node("ConstantOfShape", ["ss"], ["ones"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        helper.make_node("Trilu", ["ones"], ["tri"], upper=0),
        helper.make_node("Equal", ["tri", "zero"], ["upper"]),
        helper.make_node("Where", ["upper", "ninf", "masked"], ["causal"]),
        helper.make_node("Softmax", ["causal"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "vt"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctxt", "flat"], ["y"]),
    ]
    blocks["attention"] = model_bytes(
        nodes,
        [f32("x", ["batch", "seq", hidden]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "seq"])],
        [f32("y", ["batch", "seq", hidden])],
        list(w.values()) + [
            const("i0", np.int64(0)), const("i1", np.int64(1)), const("ax0", np.array([0])),
            const("ax12", np.array([1, 2])), const("h", np.array([heads])),
            const("d", np.array([head])), const("scale", np.float32(2.0)),
            const("one", np.float32(1)), const("neg", np.float32(-10000)),
            const("zero", np.float32(0)), const("ninf", np.float32(-np.inf)),
            const("flat", np.array([0, 0, hidden]))])
    # A feed-forward block with a residual and opset-17 LayerNormalization.
    blocks["ffn"] = model_bytes(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Add", ["h", "b1"], ["hb"]),
         helper.make_node("Relu", ["hb"], ["a"]),
         helper.make_node("MatMul", ["a", "w2"], ["o"]),
         helper.make_node("Add", ["o", "x"], ["r"]),
         helper.make_node("LayerNormalization", ["r", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
        [f32("x", ["batch", "seq", hidden])], [f32("y", ["batch", "seq", hidden])],
        [const("w1", rng.standard_normal((hidden, 16)).astype(np.float32)),
         const("b1", rng.standard_normal(16).astype(np.float32)),
         const("w2", rng.standard_normal((16, hidden)).astype(np.float32)),
         const("g", np.ones(hidden, np.float32)), const("b", np.zeros(hidden, np.float32))])
    # Shape plumbing: Range, Expand, Slice, Gather on an embedding table.
    blocks["embedding"] = model_bytes(
        [helper.make_node("Shape", ["ids"], ["shape"]),
         helper.make_node("Gather", ["shape", "i1"], ["s"], axis=0),
         helper.make_node("Range", ["zero", "s", "one"], ["pos"]),
         helper.make_node("Unsqueeze", ["pos", "ax0"], ["pos2"]),
         helper.make_node("Expand", ["pos2", "shape"], ["posb"]),
         helper.make_node("Gather", ["table", "ids"], ["tok"], axis=0),
         helper.make_node("Gather", ["ptable", "posb"], ["pe"], axis=0),
         helper.make_node("Add", ["tok", "pe"], ["e"]),
         helper.make_node("Slice", ["e", "st", "en", "axs"], ["y"])],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
        [f32("y", ["batch", "seq", 4])],
        [const("i1", np.int64(1)), const("zero", np.int64(0)), const("one", np.int64(1)),
         const("ax0", np.array([0])),
         const("table", rng.standard_normal((10, hidden)).astype(np.float32)),
         const("ptable", rng.standard_normal((16, hidden)).astype(np.float32)),
         const("st", np.array([0])), const("en", np.array([4])), const("axs", np.array([2]))])
    return blocks


def onnx_import(out: Path) -> None:
    seen = set()
    for root in NODE_TEST_DIRS:
        if not root.is_dir():
            continue
        for case in sorted(root.iterdir()):
            model = case / "model.onnx"
            if model.is_file():
                write_unique(out, case.name, model.read_bytes(), seen)
    for name, data in building_blocks().items():
        write_unique(out, name, data, seen)
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run([sys.executable, str(REPO / "tests/badinput/make_bad_models.py"),
                                 scratch], capture_output=True)
        if result.returncode == 0:
            for path in sorted(Path(scratch).rglob("*.onnx")):
                write_unique(out, "bad-" + path.stem, path.read_bytes(), seen)


def op_names() -> list:
    text = (REPO / "ir/Ops.def").read_text()
    return re.findall(r"^OP\((\w+),", text, re.M)


def write_dict(path: Path, tokens: list) -> None:
    lines = []
    for token in dict.fromkeys(tokens):
        escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else f"\\x{ord(c):02x}"
                          for c in token)
        lines.append(f'"{escaped}"')
    path.write_text("\n".join(lines) + "\n")


def ir_parser(out: Path, dict_path: Path) -> None:
    for path in sorted((REPO / "tests/ir").glob("*/*.ir")):
        if path.parent.name != "Inputs":  # second files of tests, not tests
            shutil.copy(path, out / path.name)
    tokens = ["graph", "const", "dense", "elided", "return", "loc", "ints", "floats", "strings",
              "true", "false", "inf", "-inf", "nan", "unknown", "0x", "->", "%", "@", "_", "?",
              "*", "[]", "{", "}", "(", ")", "=", ":", ",", "\\x", "#"]
    tokens += ["f32", "f64", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64",
               "bool"]
    tokens += op_names()
    tokens += ["axis", "axes", "perm", "keepdims", "epsilon", "to", "num_heads", "window",
               "is_causal", "scale", "mask"]
    write_dict(dict_path, tokens)


def npy(out: Path) -> None:
    arrays = {
        "f32-2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64-vector": np.linspace(-1, 1, 5),
        "f16-scalar": np.float16(1.5),
        "i8": np.array([-128, 0, 127], np.int8), "u8": np.array([0, 255], np.uint8),
        "i16": np.array([-3, 3], np.int16), "u16": np.array([65535], np.uint16),
        "i32-empty": np.zeros((0, 4), np.int32), "u32": np.array([7], np.uint32),
        "i64-3d": np.arange(24, dtype=np.int64).reshape(2, 3, 4),
        "u64": np.array([2**64 - 1], np.uint64), "bool": np.array([True, False, True]),
        "f32-scalar": np.float32(-0.0), "f32-1x0x4": np.zeros((1, 0, 4), np.float32),
        "f32-specials": np.array([np.inf, -np.inf, np.nan, 1e-45], np.float32),
        "big-endian": np.array([1, 2], ">f4"),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "structured": np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]),
        "unicode": np.array(["ab", "c"]),
    }
    for name, array in arrays.items():
        for version in ((1, 0), (2, 0), (3, 0)):
            if version != (1, 0) and name not in ("f32-2x3", "bool", "f32-scalar"):
                continue
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asanyarray(array), version=version)
            (out / f"{name}-v{version[0]}.npy").write_bytes(buffer.getvalue())
    buffer = io.BytesIO()
    np.save(buffer, np.array([None, 1], dtype=object), allow_pickle=True)
    (out / "object.npy").write_bytes(buffer.getvalue())


EXTERNAL_PATHS = ["weights.bin", "sub/w.bin", "link_in", "./weights.bin", "sub/../weights.bin",
                  "../outside.bin", "link_out", "dir_out/secret.bin", "abs_out", "pipe", "hard",
                  "loop", "empty", "sub", "", "/etc/passwd", "sub/../../outside.bin",
                  "weights.bin/", "nonexistent.bin", "..", "."]


def external_model(entries: list) -> bytes:
    """entries: (dtype, dims, offset, length or None) per external initializer."""
    inits, nodes = [], []
    previous = None
    for index, (dtype, dims, offset, length) in enumerate(entries):
        name = f"w{index}"
        tensor = helper.make_tensor(name, dtype, dims, vals=[])
        tensor.ClearField("float_data")
        tensor.data_location = TensorProto.EXTERNAL
        keys = [("location", "weights.bin"), ("offset", str(offset))]
        if length is not None:
            keys.append(("length", str(length)))
        for key, value in keys:
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        inits.append(tensor)
        if dtype == TensorProto.FLOAT:
            out = f"s{index}"
            nodes.append(helper.make_node("Add", [previous or "x", name], [out]))
            previous = out
    nodes.append(helper.make_node("Identity", [previous or "x"], ["y"]))
    return model_bytes(nodes, [f32("x", [4])], [f32("y", [4])], inits)


def with_paths(paths: list, model: bytes) -> bytes:
    head = bytes([len(paths)]) + b"".join(p.encode() + b"\n" for p in paths)
    return head + model


def external_data(out: Path, dict_path: Path) -> None:
    models = {
        "one": external_model([(TensorProto.FLOAT, [4], 0, 16)]),
        "offset": external_model([(TensorProto.FLOAT, [4], 64, None)]),
        "two": external_model([(TensorProto.FLOAT, [4], 0, 16), (TensorProto.INT64, [2], 8, 16)]),
        "three": external_model([(TensorProto.FLOAT, [4], 0, None),
                                 (TensorProto.FLOAT, [1, 4], 4, 16),
                                 (TensorProto.UINT8, [3], 4093, 3)]),
    }
    for name, model in models.items():
        (out / f"{name}-model").write_bytes(with_paths([], model))
    for index, path in enumerate(EXTERNAL_PATHS):
        (out / f"path-{index:02d}").write_bytes(with_paths([path], models["one"]))
    (out / "paths-mixed").write_bytes(with_paths(["weights.bin", "link_out", "sub/w.bin"],
                                                 models["three"]))
    write_dict(dict_path, [p for p in EXTERNAL_PATHS if p] +
               ["../", "./", "/", "//", "location", "offset", "length", "\n"])


def jit_differential(out: Path) -> None:
    rng = random.Random(10)
    for index in range(48):
        size = rng.choice([8, 16, 32, 64, 128, 256])
        (out / f"random-{index:02d}").write_bytes(bytes(rng.randrange(256) for _ in range(size)))


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    makers = {
        "onnx-import": lambda d: onnx_import(d),
        "ir-parser": lambda d: ir_parser(d, root / "ir-parser.dict"),
        "npy": npy,
        "external-data": lambda d: external_data(d, root / "external-data.dict"),
        "jit-differential": jit_differential,
    }
    wanted = sys.argv[2:] or list(makers)
    unknown = [name for name in wanted if name not in makers]
    if unknown:
        print(f"unknown harness {unknown[0]} (known: {', '.join(makers)})", file=sys.stderr)
        return 2
    root.mkdir(parents=True, exist_ok=True)
    for name, make in makers.items():
        if name not in wanted:
            continue
        folder = root / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir()
        make(folder)
        print(f"{name}: {len(list(folder.iterdir()))} seeds")
    write_dict(root / "onnx-import.dict", op_names() + ["ai.onnx", "com.microsoft", "axis", "axes",
                                                        "perm", "epsilon", "to", "value"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

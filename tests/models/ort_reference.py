#!/usr/bin/env python3
"""Runs a model with onnxruntime and writes its outputs the way `onnxc run` does.

    .venv/bin/python tests/models/ort_reference.py MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR
        [--opt-level disable|basic|extended|all]

One DIR/<output name>.npy per graph output, with characters outside [A-Za-z0-9_.-] in the
name replaced by '_'. The default optimization level is 'disable': the reference is the plain
graph, not ORT's fused rewrite of it.
"""

import argparse
import functools
import os
import re
import sys

import numpy as np

OPT_LEVELS = ("disable", "basic", "extended", "all")


def output_file_name(output_name: str) -> str:
    """The file an output named `output_name` is written to (shared with `onnxc run`)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", output_name) + ".npy"


def make_session(model_path: str, opt_level: str = "disable"):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt_level]
    options.log_severity_level = 3  # errors only
    return ort.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])


def run_ort(model_path: str, feeds: dict, opt_level: str = "disable") -> dict:
    """Returns {output name: array} for one run of the model on the CPU provider."""
    session = make_session(model_path, opt_level)
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


# The ops onnxruntime runs on its integer GEMM kernels.
INTEGER_KERNEL_OPS = {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"}


@functools.lru_cache(maxsize=None)
def integer_kernels_saturate() -> bool:
    """Whether onnxruntime's u8 x s8 integer GEMM saturates on this CPU. Without VNNI its x86
    kernels add pairs of u8 x s8 products in int16 (vpmaddubsw), which saturates at 32767
    (onnxruntime's quantization docs advise reduce_range there); with VNNI, or u8 x u8, they are
    exact. Probed with a MatMulInteger of 255 x 127 over 64 terms."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    depth = 64
    weights = numpy_helper.from_array(np.full([depth, 1], 127, np.int8), "b")
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "probe",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, depth])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])], [weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"a": np.full([1, depth], 255, np.uint8)})[0]
    return int(got[0, 0]) != 255 * 127 * depth


@functools.lru_cache(maxsize=None)
def uses_integer_kernels(model_path: str) -> bool:
    import onnx
    return any(node.op_type in INTEGER_KERNEL_OPS for node in onnx.load(model_path).graph.node)


def run_onnx_reference(model_path: str, feeds: dict) -> dict:
    """{output name: array} from the onnx package's reference evaluator (exact integer products),
    with two of its quantized ops mended (onnx 1.19.1)."""
    import onnx
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_23
    from onnx.reference.ops.op_qlinear_matmul import QLinearMatMul as ReferenceQLinearMatMul

    class DequantizeLinear(DequantizeLinear_23):
        """The evaluator has no DequantizeLinear before opset 19; 23's computes 13's for its
        types (int8, uint8, int32, per tensor or per axis)."""
        op_domain = ""

    class QLinearMatMul(ReferenceQLinearMatMul):
        """The evaluator's casts the requantized product to the output type without saturating
        (-2 becomes 254 in uint8); the operator saturates."""
        op_domain = ""

        def _run(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
            def centred(x, zero_point):
                return x.astype(np.int64) - (0 if zero_point is None else zero_point.astype(np.int64))

            product = np.matmul(centred(a, a_zero_point), centred(b, b_zero_point))
            out_type = a.dtype if y_zero_point is None else y_zero_point.dtype
            y = np.rint(product * (a_scale * b_scale / y_scale)) + (0 if y_zero_point is None else y_zero_point)
            return (np.clip(y, np.iinfo(out_type).min, np.iinfo(out_type).max).astype(out_type),)

    model = onnx.load(model_path)
    names = [output.name for output in model.graph.output]
    evaluator = ReferenceEvaluator(model, new_ops=[DequantizeLinear, QLinearMatMul])
    return dict(zip(names, evaluator.run(names, feeds)))


def run_expected(model_path: str, feeds: dict) -> tuple:
    """(label, {output name: array}): onnxruntime's outputs with optimizations off, or the ONNX
    reference evaluator's where the model runs on onnxruntime's integer kernels and those
    saturate on this CPU (integer_kernels_saturate)."""
    if uses_integer_kernels(model_path) and integer_kernels_saturate():
        return "onnx.reference", run_onnx_reference(model_path, feeds)
    return "ORT", run_ort(model_path, feeds)


def write_outputs(outputs: dict, output_dir: str) -> list:
    os.makedirs(output_dir, exist_ok=True)
    paths = []
    for name, value in outputs.items():
        path = os.path.join(output_dir, output_file_name(name))
        np.save(path, value)
        paths.append(path)
    return paths


def parse_input_args(pairs: list) -> dict:
    feeds = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--input expects NAME=FILE.npy, got '{pair}'")
        feeds[name] = np.load(path)
    return feeds


def main() -> int:
    parser = argparse.ArgumentParser(description="Run a model with onnxruntime; write outputs as .npy files.")
    parser.add_argument("model")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--opt-level", choices=OPT_LEVELS, default="disable")
    args = parser.parse_args()
    try:
        feeds = parse_input_args(args.input)
        outputs = run_ort(args.model, feeds, args.opt_level)
    except Exception as error:  # one line, as onnxc does
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"ort_reference: error: {args.model}: {message}", file=sys.stderr)
        return 1
    for path, (name, value) in zip(write_outputs(outputs, args.output_dir), outputs.items()):
        print(f"{name}: {value.dtype}{list(value.shape)} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Quantized Conv: onnxc's integer path vs its f32 Conv vs onnxruntime on the same QDQ model, one thread.

    .venv/bin/python benchmarks/qconv/run.py [--onnxc build/tools/onnxc] [--iters 50] [--rounds 3]
                                             [--peer-python build/peers-venv/bin/python]

Two single-Conv models with bias and random weights (opset 17), built here:

    vit_patch   ViT-base/16's patch embedding, 1x3x224x224, 768 filters 16x16, stride 16
    conv3x3     a ResNet-style 3x3 Conv, 1x64x56x56 -> 64, pads 1

Each is quantized by onnxruntime's quantize_static (QDQ, int8 activations and weights, weights per
output channel, calibrated on four random inputs). onnxc compiles the QDQ file at -O2: one
QuantizedConv (the input quantized once into a padded channels-last u8 buffer, patches gathered
from it into the u8 x s8 integer GEMM, weights packed at compile time) and the output's
quantize-dequantize pair as f32 arithmetic. Its "f32 Conv" column is the fp32 file compiled by
onnxc (the packed f32 GEMM). onnxruntime runs the QDQ file with all optimizations (its QDQ
transformer makes a QLinearConv of DQ -> Conv -> Q) and the fp32 file, intra_op_num_threads=1,
timed in Python around session.run (the best of --iters runs, best round). onnxc's figures are
`onnxc bench --threads 1` (min of --iters runs) and its per-step profile for the Conv alone.
Printed: ms per run and ratios; the largest difference of onnxc's quantized output from
onnxruntime's on the same file, in quantization steps of the output. Nothing is asserted.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

LAYERS = {
    "vit_patch": dict(input=(1, 3, 224, 224), weights=(768, 3, 16, 16), strides=[16, 16], pads=[0, 0, 0, 0]),
    "conv3x3": dict(input=(1, 64, 56, 56), weights=(64, 64, 3, 3), strides=[1, 1], pads=[1, 1, 1, 1]),
}

ORT_TIMER = r"""
import json, sys, time
import numpy as np
import onnxruntime as ort
path, iters, rounds, feeds_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.inter_op_num_threads = 1
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
feeds = dict(np.load(feeds_path))
out = session.run(None, feeds)[0]
best = float("inf")
for _ in range(rounds):
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    best = min(best, min(times))
np.save(feeds_path + ".out.npy", out)
print(json.dumps({"ms": best * 1e3, "version": ort.__version__}))
"""


def build_conv(name: str, path: str) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    layer = LAYERS[name]
    rng = np.random.default_rng(0)
    fan_in = int(np.prod(layer["weights"][1:]))
    weights = (rng.standard_normal(layer["weights"]) / np.sqrt(fan_in)).astype(np.float32)
    bias = (rng.standard_normal(layer["weights"][0]) * 0.1).astype(np.float32)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", strides=layer["strides"],
                            pads=layer["pads"], kernel_shape=list(layer["weights"][2:]))
    graph = helper.make_graph(
        [conv], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, layer["input"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")])
    # IR version 8 (opset 17's): onnxruntime refuses files newer than it knows.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)


def quantize(name: str, fp32: str, path: str) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Batches(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([feeds_for(name, seed) for seed in range(4)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(fp32, path, Batches(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def feeds_for(name: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(LAYERS[name]["input"]).astype(np.float32)}


def onnxc_bench(onnxc: str, model: str, iters: int, rounds: int) -> dict:
    """Best min latency over rounds and the Conv step's time (ms), onnxc bench --threads 1."""
    best, conv_step = float("inf"), float("inf")
    for _ in range(rounds):
        out = subprocess.run([onnxc, "bench", model, "--threads", "1", "--iters", str(iters), "--json",
                              "--profile"], check=True, capture_output=True, text=True).stdout
        report = json.loads(out)
        best = min(best, report["latency_ms"]["min"])
        steps = report["profile"]["steps"]
        conv_step = min(conv_step, sum(s["ms"] for s in steps if "Conv" in s["name"]))
        ops = {s["name"]: s["ms"] for s in steps}
    return {"ms": best, "conv_step_ms": conv_step, "steps": ops}


def ort_time(python: str, model: str, feeds_path: str, iters: int, rounds: int) -> dict:
    out = subprocess.run([python, "-c", ORT_TIMER, model, str(iters), str(rounds), feeds_path], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def output_step(path: str) -> float:
    """The scale of the QuantizeLinear on the graph output (one step of the quantized output)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    quantizes = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    return float(initializers[quantizes[-1].input[1]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the Python whose onnxruntime is the peer (default: this one)")
    parser.add_argument("--layers", default=",".join(LAYERS))
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-qconv-")
    print(f"{'layer':<10} {'GMAC':>6} | {'onnxc int8':>10} {'(Conv step)':>11} {'onnxc f32':>10} "
          f"{'ORT int8':>9} {'ORT f32':>8} | {'int8/f32':>8} {'onnxc/ORT int8':>14} | max diff (steps)")
    for name in args.layers.split(","):
        layer = LAYERS[name]
        fp32, qdq = os.path.join(workdir, f"{name}.onnx"), os.path.join(workdir, f"{name}_qdq.onnx")
        build_conv(name, fp32)
        quantize(name, fp32, qdq)
        feeds = feeds_for(name, 7)
        feeds_path = os.path.join(workdir, f"{name}_feeds.npz")
        np.savez(feeds_path, **feeds)
        ours_int8 = onnxc_bench(args.onnxc, qdq, args.iters, args.rounds)
        ours_f32 = onnxc_bench(args.onnxc, fp32, args.iters, args.rounds)
        theirs_int8 = ort_time(args.peer_python, qdq, feeds_path, args.iters, args.rounds)
        theirs_out = np.load(feeds_path + ".out.npy")
        theirs_f32 = ort_time(args.peer_python, fp32, feeds_path, args.iters, args.rounds)
        # onnxc's output on the same quantized file and input.
        np.save(os.path.join(workdir, "x.npy"), feeds["x"])
        out_dir = os.path.join(workdir, f"{name}_out")
        subprocess.run([args.onnxc, "run", qdq, "--input", f"x={os.path.join(workdir, 'x.npy')}",
                        "--output-dir", out_dir], check=True, capture_output=True)
        ours_out = np.load(os.path.join(out_dir, "y.npy"))
        step = output_step(qdq)
        diff = np.abs(ours_out - theirs_out) / step
        out_positions = ours_out.shape[2] * ours_out.shape[3]
        macs = out_positions * int(np.prod(layer["weights"])) / 1e9
        print(f"{name:<10} {macs:6.3f} | {ours_int8['ms']:8.3f}ms {ours_int8['conv_step_ms']:9.3f}ms "
              f"{ours_f32['ms']:8.3f}ms {theirs_int8['ms']:7.3f}ms {theirs_f32['ms']:6.3f}ms | "
              f"{ours_int8['ms'] / ours_f32['ms']:8.2f} {ours_int8['ms'] / theirs_int8['ms']:14.2f} | "
              f"{diff.max():.0f} ({np.mean(diff > 0.5):.2%} of outputs differ)")
        print(f"           onnxc int8 steps: " +
              ", ".join(f"{k} {v:.3f}ms" for k, v in sorted(ours_int8["steps"].items(), key=lambda kv: -kv[1])))
    print(f"onnxruntime {theirs_int8['version']} ({args.peer_python})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

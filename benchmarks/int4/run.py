"""int4 weight-only decode and prefill: onnxc vs onnxruntime on the same MatMulNBits model, in one run.

    .venv/bin/python benchmarks/int4/run.py [--peer-python build/peers-venv/bin/python]
        [--onnxc build/tools/onnxc] [--layers 22] [--accuracy-level 4] [--rows 1,128]
        [--threads 1,2] [--iters 20]

The model is the weight stream of a TinyLlama-1.1B-shaped LLaMA as onnxruntime-genai's builder
quantizes it (int4 MatMulNBits, blocks of 32, zero points, accuracy_level 4 by default as the
builder writes for CPUs): per layer q and o (2048x2048), k and v (2048x256), gate and up
(2048x5632), down (5632x2048), then the LM head (2048x32000); random codes and scales. Between the
MatMuls only sigmoid(gate) * up and the residual Add, so the time is the weight-only GEMMs'. With
--rows 1 it is a decoder step (M = 1), reading every weight once: the report gives the packed
bytes per step over the time, next to a plain read's bandwidth measured by
onnxc_bench_int4gemv (build it with `ninja -C build onnxc_bench_int4gemv`). Both sides run the
same file on the same inputs, each in its own process, and the outputs are compared. Times are
the minimum and median of --iters runs after warm-up; nothing is asserted.

At accuracy_level 4 every MatMul quantizes its input to int8, so a difference of one f32 rounding
upstream can move a code across a rounding boundary: one code step is 1/127 of its block's
largest value, and the outputs of several layers then differ by about 1e-3 of their range
between any two implementations (onnxruntime against itself at another thread count included),
in the rows where that happened. The per-op agreement is tests/models/test_int4_models.py's.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HIDDEN, KV, FFN, VOCAB, BLOCK = 2048, 256, 5632, 32000, 32

ORT_RUNNER = r'''
import json, sys, time
import numpy as np, onnxruntime as ort
path, rows, threads, iters, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
options = ort.SessionOptions()
options.intra_op_num_threads = threads
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
x = np.load(out + ".x.npy")
for _ in range(3):
    y = session.run(["y"], {"x": x})[0]
times = []
for _ in range(iters):
    start = time.perf_counter()
    session.run(["y"], {"x": x})
    times.append(time.perf_counter() - start)
np.save(out, y)
print(json.dumps({"min_ms": 1e3 * min(times), "median_ms": 1e3 * float(np.median(times)),
                  "version": ort.__version__}))
'''


def matmulnbits(name, k, n, level, rng, initializers, inputs):
    from onnx import helper, numpy_helper
    blocks = k // BLOCK
    codes = rng.integers(0, 256, (n, blocks, BLOCK // 2), dtype=np.uint8)
    # |q - zp| is about 5 on average: scales near 1 / (5 sqrt(K)) keep each product's outputs
    # near its inputs' size, and `damp` the residual branch, so 22 layers stay finite.
    damp = 0.1 if name.endswith("down") else 1.0
    scales = ((0.5 + rng.random(n * blocks, dtype=np.float32)) * damp / (5 * np.sqrt(k))).astype(np.float32)
    zeros = rng.integers(0, 256, (n * ((blocks + 1) // 2),), dtype=np.uint8)
    for suffix, value in (("b", codes), ("s", scales), ("z", zeros)):
        initializers.append(numpy_helper.from_array(value, f"{name}_{suffix}"))
    return helper.make_node("MatMulNBits", [inputs, f"{name}_b", f"{name}_s", f"{name}_z"], [f"{name}_y"],
                            name=name, domain="com.microsoft", K=k, N=n, bits=4, block_size=BLOCK,
                            accuracy_level=level)


def build_model(path, layers, level):
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper
    rng = np.random.default_rng(0)
    nodes, initializers, outputs = [], [], []
    x = "x"
    for layer in range(layers):
        p = f"l{layer}"
        for name, k, n, source in (("q", HIDDEN, HIDDEN, x), ("k", HIDDEN, KV, x), ("v", HIDDEN, KV, x)):
            nodes.append(matmulnbits(f"{p}_{name}", k, n, level, rng, initializers, source))
        outputs += [helper.make_tensor_value_info(f"{p}_{name}_y", TP.FLOAT, ["batch", "rows", KV])
                    for name in ("k", "v")]
        nodes.append(matmulnbits(f"{p}_o", HIDDEN, HIDDEN, level, rng, initializers, f"{p}_q_y"))
        nodes.append(matmulnbits(f"{p}_gate", HIDDEN, FFN, level, rng, initializers, f"{p}_o_y"))
        nodes.append(matmulnbits(f"{p}_up", HIDDEN, FFN, level, rng, initializers, f"{p}_o_y"))
        nodes.append(helper.make_node("Sigmoid", [f"{p}_gate_y"], [f"{p}_g"]))
        nodes.append(helper.make_node("Mul", [f"{p}_g", f"{p}_up_y"], [f"{p}_m"]))
        nodes.append(matmulnbits(f"{p}_down", FFN, HIDDEN, level, rng, initializers, f"{p}_m"))
        nodes.append(helper.make_node("Add", [x, f"{p}_down_y"], [f"{p}_x"]))
        x = f"{p}_x"
    nodes.append(matmulnbits("lm_head", HIDDEN, VOCAB, level, rng, initializers, x))
    nodes.append(helper.make_node("Identity", ["lm_head_y"], ["y"]))
    graph = helper.make_graph(nodes, "int4_stack",
                              [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", "rows", HIDDEN])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, ["batch", "rows", VOCAB])] + outputs,
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    onnx.save(model, path, save_as_external_data=True, location=os.path.basename(path) + ".data")
    return sum(os.path.getsize(path + s) for s in ("", ".data"))


def read_bandwidth(binary):
    """The plain four-stream read's GB/s (median) from onnxc_bench_int4gemv, or None."""
    if not os.path.exists(binary):
        return None
    out = subprocess.run([binary, "--runs", "5", "--shape", "2048x5632"], capture_output=True,
                         text=True, check=True).stdout
    row = [line for line in out.splitlines() if line.lstrip().startswith("2048x5632")][0]
    return float(row.split("|")[1].split()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--peer-python", default=sys.executable)
    parser.add_argument("--layers", type=int, default=22)
    parser.add_argument("--accuracy-level", type=int, default=4)
    parser.add_argument("--rows", default="1,128")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="onnxc_int4_")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, f"stack_{args.layers}_l{args.accuracy_level}.onnx")
    size = build_model(model, args.layers, args.accuracy_level) if not os.path.exists(model) else \
        sum(os.path.getsize(model + s) for s in ("", ".data"))
    library = model[:-5] + ".so"
    subprocess.run([args.onnxc, "compile", model, "-o", library], check=True, capture_output=True)
    packed = os.path.getsize(library)
    read = read_bandwidth(os.path.join(REPO, "build", "benchmarks", "onnxc_bench_int4gemv"))
    print(f"model: {args.layers} layers + LM head, int4 blocks of {BLOCK}, accuracy_level {args.accuracy_level};"
          f" file {size / 2**20:.0f} MiB, onnxc .so {packed / 2**20:.0f} MiB"
          + (f"; plain read {read:.1f} GB/s (1 thread)" if read else ""))
    print(f"{'rows':>5} {'thr':>3} | {'onnxc min':>9} {'median':>8} | {'ORT min':>8} {'median':>8} | "
          f"{'ratio':>5} | {'onnxc GB/s':>10} | max |diff| / max|y|")
    rng = np.random.default_rng(1)
    for rows in [int(r) for r in args.rows.split(",")]:
        x = rng.standard_normal((1, rows, HIDDEN)).astype(np.float32)
        x_path = os.path.join(work, f"x{rows}.npy")
        np.save(x_path, x)
        for threads in [int(t) for t in args.threads.split(",")]:
            out = os.path.join(work, f"ort_{rows}_{threads}.npy")
            np.save(out + ".x.npy", x)
            ort = json.loads(subprocess.run([args.peer_python, "-c", ORT_RUNNER, model, str(rows), str(threads),
                                             str(args.iters), out], capture_output=True, text=True,
                                            check=True).stdout.strip().splitlines()[-1])
            bench = subprocess.run([args.onnxc, "bench", library, "--input", f"x={x_path}", "--threads",
                                    str(threads), "--iters", str(args.iters), "--json"],
                                   capture_output=True, text=True, check=True).stdout
            ours = json.loads(bench)
            ours_min, ours_median = ours["latency_ms"]["min"], ours["latency_ms"]["p50"]
            outdir = os.path.join(work, f"onnxc_{rows}_{threads}")
            subprocess.run([args.onnxc, "run", library, "--input", f"x={x_path}", "--output-dir", outdir],
                           check=True, capture_output=True)
            got, want = np.load(os.path.join(outdir, "y.npy")), np.load(out)
            if not (np.isfinite(got).all() and np.isfinite(want).all()):
                raise RuntimeError("non-finite outputs: the model's weights are too large")
            diff = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            rate = packed / (ours_median * 1e-3) * 1e-9
            print(f"{rows:>5} {threads:>3} | {ours_min:>9.2f} {ours_median:>8.2f} | {ort['min_ms']:>8.2f} "
                  f"{ort['median_ms']:>8.2f} | {ours_median / ort['median_ms']:>5.2f} | {rate:>10.1f} | {diff:.2e}")
    print(f"onnxruntime {ort['version']}; ratio = onnxc median / ORT median (below 1: onnxc faster); "
          "GB/s = the .so's bytes (packed weights) per median step")
    return 0


if __name__ == "__main__":
    sys.exit(main())

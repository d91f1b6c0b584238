"""Recurrent layers: onnxc vs onnxruntime on one LSTM or GRU node, one thread, in one run.

    bash benchmarks/e2e/setup_peers.sh          # newest onnxruntime in build/peers-venv
    .venv/bin/python benchmarks/recurrent/run.py [--peer-python build/peers-venv/bin/python]
                                                 [--layers lstm512,lstm1024,gru512,gru1024]
                                                 [--seq 128] [--batch 1] [--input 256]
                                                 [--iters 20] [--rounds 3] [--clock wall|cpu]
                                                 [--peak-binary PATH]

Each layer is one ONNX node (opset 14, forward, X [seq, batch, input] an input, W, R and B
initializers drawn like torch's nn.LSTM / nn.GRU: uniform in ±1/sqrt(hidden)), written to
build/bench-recurrent/NAME.onnx. onnxc compiles it (`onnxc compile`, weights packed at compile
time) and `onnxc bench --threads 1` times it; onnxruntime (all graph optimizations, intra- and
inter-op threads 1) runs the same file in a process of its own (benchmarks/e2e/ort_runner.py).
The two take turns --rounds times; each side's figures are its round with the lowest median.
--clock cpu times every run by its process's CPU time instead (benchmarks/attention/cpu_timer.py,
onnxc through its C API), so that time spent descheduled on a shared machine is not counted.

Printed per layer: min and median ms of each side, the ratio of the medians (onnxc / ORT, below 1:
onnxc is faster), GFLOP/s of each (2 FLOP per weight per step: the projection X·Wᵀ plus the
recurrent h·Rᵀ), onnxc's fraction of the FMA peak, and how fast R streams (GB/s: R's bytes times
the steps over onnxc's time). A batch-1 step reads every weight of R once for one multiply-add, so
its bound is bandwidth, not the FMA pipes: the notes give the floor (R at the rate
onnxc_bench_gemv measures for the GEMV alone, plus the projection at the FMA peak) and onnxc's
fraction of it, onnxc's split between its steps (`onnxc bench --profile`) and the largest
difference between the two sides' Y. The peak and the GEMV's rate come from
build/benchmarks/onnxc_bench_gemv (`ninja -C build onnxc_bench_gemv`), in thread CPU time. Nothing
is asserted: the machine is shared; read the ratio.
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def e2e_module():
    """benchmarks/e2e/run.py, for its runners (onnxc bench, ORT in its own process, output diff)."""
    spec = importlib.util.spec_from_file_location("e2e_run", os.path.join(REPO, "benchmarks", "e2e", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GATES = {"lstm": 4, "gru": 3}


def parse_layer(name: str) -> tuple:
    match = re.fullmatch(r"(lstm|gru)(\d+)", name)
    if not match:
        raise SystemExit(f"layer '{name}' is not lstmHIDDEN or gruHIDDEN")
    return match.group(1), int(match.group(2))


def build_layer(path: str, kind: str, hidden: int, seq: int, batch: int, input_size: int) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(hidden * 7 + GATES[kind])
    bound = 1.0 / np.sqrt(hidden)
    rows = GATES[kind] * hidden

    def uniform(*shape):
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    weights = [numpy_helper.from_array(uniform(1, rows, input_size), "W"),
               numpy_helper.from_array(uniform(1, rows, hidden), "R"),
               numpy_helper.from_array(uniform(1, 2 * rows), "B")]
    attrs = {"hidden_size": hidden}
    if kind == "gru":
        attrs["linear_before_reset"] = 1  # as torch exports nn.GRU
    node = helper.make_node(kind.upper(), ["X", "W", "R", "B"], ["Y", "Y_h"], **attrs)
    graph = helper.make_graph(
        [node], f"{kind}{hidden}",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, input_size])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [seq, 1, batch, hidden]),
         helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, batch, hidden])],
        weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.save(model, path)


def peak_and_bandwidth(binary: str) -> tuple:
    """(FMA peak GFLOP/s, {K x N: the GEMV's median GB/s}) from onnxc_bench_gemv, or (0, {})."""
    if not binary or not os.path.exists(binary):
        return 0.0, {}
    out = subprocess.run([binary, "--runs", "7"], capture_output=True, text=True).stdout
    match = re.search(r"peak at \d+ lanes: ([\d.]+) GFLOP/s", out)
    rates = {f"{k}x{n}": float(median) for k, n, median in
             re.findall(r"^\s*(\d+)x(\d+)\s+[\d.]+ \|\s+[\d.]+\s+([\d.]+)", out, re.M)}
    return (float(match.group(1)) if match else 0.0), rates


def profile_split(e2e, onnxc: str, library: str, inputs: list) -> str:
    """onnxc's share of time per step from `onnxc bench --profile` (projection GEMM, time loop)."""
    out = e2e.run([onnxc, "bench", library, "--threads", "1", "--iters", "5", "--profile"] + inputs)
    steps = out.split("slowest steps:", 1)[-1]
    found = [(float(ms), name.strip()) for ms, name in re.findall(r"^\s+([\d.]+) ms\s+(.+)$", steps, re.M)]
    total = sum(ms for ms, _ in found) or 1.0
    return ", ".join(f"{name} {100 * ms / total:.0f}%" for ms, name in found) if found else "(no profile)"


def cpu_bench(python: str, side: str, model: str, inputs: list, iters: int) -> dict:
    """min / median process CPU time per run of one side (benchmarks/attention/cpu_timer.py)."""
    out = subprocess.run([python, os.path.join(REPO, "benchmarks", "attention", "cpu_timer.py"), side, model,
                          "--threads", "1", "--iters", str(iters), "--warmup", "3", "--outputs", "2"] + inputs,
                         capture_output=True, text=True, check=True).stdout
    times = sorted(json.loads(out.strip().splitlines()[-1])["times_ms"])
    return {"min_ms": times[0], "median_ms": times[len(times) // 2]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--peer-python", default=os.path.join(REPO, "build", "peers-venv", "bin", "python"))
    parser.add_argument("--layers", default="lstm512,lstm1024,gru512,gru1024")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--input", type=int, default=256)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: time each run by its process's CPU time (for a loaded machine)")
    parser.add_argument("--workdir", default=os.path.join(REPO, "build", "bench-recurrent"))
    parser.add_argument("--peak-binary", default=os.path.join(REPO, "build", "benchmarks", "onnxc_bench_gemv"),
                        help="onnxc_bench_gemv: the FMA peak in thread CPU time, and the GEMV's bandwidth")
    args = parser.parse_args()
    if not os.path.exists(args.peer_python):
        raise SystemExit(f"no {args.peer_python}: run `bash benchmarks/e2e/setup_peers.sh` first")
    os.makedirs(args.workdir, exist_ok=True)
    e2e = e2e_module()
    version = e2e.run([args.peer_python, "-c", "import onnxruntime; print(onnxruntime.__version__)"]).strip()
    peak, gemv_rates = peak_and_bandwidth(args.peak_binary)
    print(f"recurrent layers: seq {args.seq}, batch {args.batch}, input {args.input}, forward, one thread; "
          f"onnxruntime {version}; best median of {args.rounds} rounds of {args.iters} runs, {args.clock} clock")
    print(f"fp32 FMA peak (onnxc_bench_gemv, thread CPU time): {peak:.1f} GFLOP/s; the GEMV alone streams R at "
          + ", ".join(f"{shape} {rate:.0f} GB/s" for shape, rate in gemv_rates.items()) if peak else
          "fp32 FMA peak: not measured (ninja -C build onnxc_bench_gemv)")
    print(f"{'layer':<9} | {'onnxc min':>9} {'median':>8} | {'ORT min':>8} {'median':>8} | {'ratio':>5} |"
          f" {'onnxc GF/s':>10} {'ORT GF/s':>8} | {'% peak':>6} | {'R GB/s':>6} | max |diff|")
    notes = []
    for name in [n.strip() for n in args.layers.split(",") if n.strip()]:
        kind, hidden = parse_layer(name)
        model = os.path.join(args.workdir, f"{name}_s{args.seq}_b{args.batch}_i{args.input}.onnx")
        if not os.path.exists(model):
            build_layer(model, kind, hidden, args.seq, args.batch, args.input)
        library = model[:-len(".onnx")] + ".so"
        start = time.perf_counter()
        e2e.run([args.onnxc, "compile", model, "-o", library])
        compile_s = time.perf_counter() - start
        with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
            x = np.random.default_rng(0).standard_normal((args.seq, args.batch, args.input)).astype(np.float32)
            np.save(os.path.join(folder, "X.npy"), x)
            inputs = ["--input", f"X={os.path.join(folder, 'X.npy')}"]
            outputs = os.path.join(folder, "ort.npz")
            best = {}
            for _ in range(args.rounds):
                if args.clock == "cpu":
                    ours = cpu_bench(sys.executable, "onnxc", library, inputs, args.iters)
                    theirs = cpu_bench(args.peer_python, "ort", model, inputs, args.iters)
                else:
                    ours = e2e.onnxc_bench(args.onnxc, library, inputs, 1, args.iters)
                    theirs = e2e.ort_bench(model, inputs, 1, args.iters, outputs, args.peer_python)
                for side, result in (("onnxc", ours), ("ort", theirs)):
                    if side not in best or result["median_ms"] < best[side]["median_ms"]:
                        best[side] = result
            if not os.path.exists(outputs):
                e2e.ort_bench(model, inputs, 1, 1, outputs, args.peer_python)
            diff = e2e.max_difference(args.onnxc, library, inputs, outputs, folder)
            split = profile_split(e2e, args.onnxc, library, inputs)
        rows = GATES[kind] * hidden
        flop = 2.0 * args.seq * args.batch * rows * (args.input + hidden)
        r_bytes = 4.0 * rows * hidden * args.seq  # R read once per step (by a task of up to 4 batch rows)
        ours, theirs = best["onnxc"], best["ort"]
        gflops = flop / ours["median_ms"] * 1e-6
        line = (f"{name:<9} | {ours['min_ms']:>9.3f} {ours['median_ms']:>8.3f} | {theirs['min_ms']:>8.3f}"
                f" {theirs['median_ms']:>8.3f} | {ours['median_ms'] / theirs['median_ms']:>5.2f} |"
                f" {gflops:>10.1f} {flop / theirs['median_ms'] * 1e-6:>8.1f} |"
                f" {100 * gflops / peak if peak else 0:>5.1f}% | {r_bytes / ours['median_ms'] * 1e-6:>6.1f} |"
                f" {diff:.1e}")
        print(line, flush=True)
        floor = ""
        rate = gemv_rates.get(f"{hidden}x{rows}")
        if rate and peak and args.batch == 1:
            floor_ms = r_bytes / rate * 1e-6 + 2.0 * args.seq * rows * args.input / peak * 1e-6
            floor = (f"; floor {floor_ms:.2f} ms (R at the GEMV's {rate:.0f} GB/s + the projection at the FMA"
                     f" peak): onnxc at {100 * floor_ms / ours['median_ms']:.0f}% of it")
        notes.append(f"{name}: {flop * 1e-9:.3f} GFLOP, R {r_bytes / args.seq / 2**20:.1f} MiB per step;"
                     f" onnxc compile {compile_s:.1f} s; onnxc's steps (--profile, wall): {split}{floor}")
    print("\nms per run; ratio = onnxc median / ORT median; GF/s from the medians")
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Times onnxruntime on one model in a process of its own (so its peak memory is its own).

    python ort_runner.py MODEL.onnx --threads N --iters N --warmup N --input NAME=FILE.npy ...

Prints one JSON object: session creation time, first run, every timed latency (ms), peak RSS (MiB).
ORT runs with all graph optimizations (its fused attention, LayerNorm, GELU), sequential execution,
intra-op threads = N, and its default thread spinning. benchmarks/attention/cpu_timer.py uses
ort_session and peak_resident_mib from here; onnxruntime is imported only when a session is made,
so that a process timing onnxc does not carry it in its peak memory.
"""

import argparse
import json
import time

import numpy as np


def peak_resident_mib() -> float:
    """VmHWM of this process; ru_maxrss would include the parent's peak (Linux keeps it across exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def read_feeds(pairs: list) -> dict:
    """NAME=FILE.npy arguments -> {name: array}."""
    feeds = {}
    for pair in pairs:
        name, _, path = pair.partition("=")
        feeds[name] = np.load(path)
    return feeds


def time_runs(run, warmup: int, iters: int) -> tuple:
    """(first run's outputs, first run ms, [ms of each timed run]) after warmup - 1 more runs."""
    start = time.perf_counter()
    outputs = run()
    first_ms = (time.perf_counter() - start) * 1e3
    for _ in range(warmup - 1):
        run()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return outputs, first_ms, times


def ort_session(model: str, threads: int):
    """An onnxruntime session configured as the benchmarks compare against."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--save-outputs", default="")
    args = parser.parse_args()

    feeds = read_feeds(args.input)
    start = time.perf_counter()
    session = ort_session(args.model, args.threads)
    session_ms = (time.perf_counter() - start) * 1e3
    outputs, first_ms, times = time_runs(lambda: session.run(None, feeds), args.warmup, args.iters)
    if args.save_outputs:
        np.savez(args.save_outputs, **{o.name: v for o, v in zip(session.get_outputs(), outputs)})
    print(json.dumps({"session_ms": session_ms, "first_ms": first_ms, "times_ms": times,
                      "peak_mib": peak_resident_mib()}))


if __name__ == "__main__":
    main()

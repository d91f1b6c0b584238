"""Times OpenVINO on one model in a process of its own, as ort_runner.py times onnxruntime.

    python ov_runner.py MODEL.onnx --threads N --iters N --warmup N --input NAME=FILE.npy ...

The model is read and compiled for the CPU with `ov.Core().compile_model(path, "CPU")`, its
inference threads set to N, latency hint, and `--precision f32` (the default here) as its
inference precision: on a CPU with bf16 (AVX512_BF16, AMX) OpenVINO's own default is bf16, which
is not the fp32 computation onnxc and onnxruntime do (`--precision default` keeps OpenVINO's).
One infer request runs the timed loop. Prints the same
JSON object as ort_runner.py: compile time (as session_ms), first run, every latency (ms), peak
RSS (MiB).
"""

import argparse
import json
import time

from ort_runner import peak_resident_mib, read_feeds, time_runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--precision", default="f32", help="f32, bf16, f16, or 'default' (OpenVINO's choice)")
    args = parser.parse_args()

    feeds = read_feeds(args.input)
    import openvino as ov
    start = time.perf_counter()
    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": args.threads, "PERFORMANCE_HINT": "LATENCY"}
    if args.precision != "default":
        config["INFERENCE_PRECISION_HINT"] = args.precision
    compiled = core.compile_model(args.model, "CPU", config)
    request = compiled.create_infer_request()
    session_ms = (time.perf_counter() - start) * 1e3

    _, first_ms, times = time_runs(lambda: request.infer(feeds), args.warmup, args.iters)
    print(json.dumps({"session_ms": session_ms, "first_ms": first_ms, "times_ms": times,
                      "peak_mib": peak_resident_mib(),
                      "precision": str(compiled.get_property("INFERENCE_PRECISION_HINT"))}))


if __name__ == "__main__":
    main()

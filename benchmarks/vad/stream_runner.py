"""Streams silero-vad chunks through one engine in a process of its own and times every call.

    python stream_runner.py ENGINE MODEL --chunks N --warmup N --threads N

ENGINE is `onnxc` (MODEL is a library from `onnxc compile`, run by the Python package,
onnxc.load(MODEL, threads=N); PYTHONPATH must reach it), `onnxruntime` (MODEL an .onnx file,
intra- and inter-op threads N and 1, every graph optimization, sequential) or `openvino`
(compile_model for the CPU, INFERENCE_NUM_THREADS N, latency hint, f32 inference precision).

The audio is tests/controlflow/silero_vad.py's synthetic signal (noise and voiced bursts), cut
into 16 kHz chunks of 512 samples after the 64 last samples of the previous one ([1, 576]); the
state output of each call is the next call's state input, sr is 16000 when the model has it.
--warmup calls stream first (untimed, state carried into the timed ones). Only the engine's run
call is timed (time.perf_counter_ns around it). Prints one JSON object: the engine's version, its
load / session time, every timed call's ms, and every call's speech probability.
"""

import argparse
import importlib.util
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def test_module():
    """tests/controlflow/silero_vad.py, for its signal and framing (it imports numpy only)."""
    spec = importlib.util.spec_from_file_location(
        "silero_vad_test", os.path.join(REPO, "tests", "controlflow", "silero_vad.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def engine(kind: str, model: str, threads: int):
    """(run(feeds) -> [output, state], input names, version, load ms)."""
    start = time.perf_counter()
    if kind == "onnxc":
        import onnxc
        compiled = onnxc.load(model, threads=threads)
        names = [i.name for i in compiled.inputs]
        run = compiled.run
        outputs = [o.name for o in compiled.outputs]
        version = "onnxc"

        def call(feeds):
            return run(outputs, feeds)
    elif kind == "onnxruntime":
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        outputs = [o.name for o in session.get_outputs()]
        version = "onnxruntime " + ort.__version__

        def call(feeds):
            return session.run(outputs, feeds)
    elif kind == "openvino":
        import openvino as ov
        compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                         "PERFORMANCE_HINT": "LATENCY",
                                                         "INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        names = [port.get_any_name() for port in compiled.inputs]
        ports = list(compiled.outputs)
        outputs = [port.get_any_name() for port in ports]
        version = "OpenVINO " + ov.__version__.split("-")[0]

        def call(feeds):
            request.infer(feeds)
            return [request.get_tensor(port).data.copy() for port in ports]
    else:
        raise SystemExit(f"unknown engine {kind}")
    return call, names, outputs, version, (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("engine", choices=["onnxc", "onnxruntime", "openvino"])
    parser.add_argument("model")
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    vad = test_module()
    chunks = vad.framed(vad.speech_like_signal(args.warmup + args.chunks))
    call, names, outputs, version, load_ms = engine(args.engine, args.model, args.threads)
    if set(names) - {"input", "state", "sr"} or outputs[1:] != ["stateN"]:
        raise SystemExit(f"{args.model}: inputs {names}, outputs {outputs}: not a streaming "
                         "silero-vad model (input, state[, sr] -> output, stateN)")
    state = np.zeros((2, 1, 128), np.float32)
    sr = np.array(16000, dtype=np.int64)
    times, probabilities = [], []
    for index, chunk in enumerate(chunks):
        feeds = {"input": chunk[None], "state": state}
        if "sr" in names:
            feeds["sr"] = sr
        start = time.perf_counter_ns()
        probability, state = call(feeds)
        elapsed = time.perf_counter_ns() - start
        if index >= args.warmup:
            times.append(elapsed / 1e6)
        probabilities.append(float(np.asarray(probability).ravel()[0]))
    print(json.dumps({"version": version, "load_ms": load_ms, "times_ms": times,
                      "probabilities": probabilities}))


if __name__ == "__main__":
    main()

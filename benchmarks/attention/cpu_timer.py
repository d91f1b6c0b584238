"""Per-run CPU time of one side, in a process of its own (for a loaded machine).

    python cpu_timer.py ort MODEL.onnx --threads N --iters N --input NAME=FILE.npy ...
    python cpu_timer.py onnxc MODEL.so --threads N --iters N --input NAME=FILE.npy ...

Runs onnxruntime (as benchmarks/e2e/ort_runner.py configures it) or a model compiled by
`onnxc compile` (through its C API, runtime/include/onnxc/onnxc.h, with ctypes) and times every
run by the process's CPU time (CLOCK_PROCESS_CPUTIME_ID): time spent descheduled while other
work shares the core is not counted. The onnxc side takes f32 inputs, given in the model's order. Prints one JSON object: times_ms, peak_mib (VmHWM).
"""

import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from ort_runner import ort_session, peak_resident_mib  # noqa: E402

ONNXC_F32 = 1
ONNXC_MAX_RANK = 8


class OnnxcTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * ONNXC_MAX_RANK), ("size_bytes", ctypes.c_size_t)]


def onnxc_runner(library: str, feeds: dict, threads: int, num_outputs: int = 1):
    lib = ctypes.CDLL(os.path.abspath(library))
    lib.onnxc_descriptor.restype = ctypes.c_void_p
    lib.onnxc_session_create.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.onnxc_session_create.restype = ctypes.c_void_p
    lib.onnxc_session_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(OnnxcTensor), ctypes.c_int32,
                                      ctypes.POINTER(OnnxcTensor), ctypes.c_int32]
    lib.onnxc_session_error.argtypes = [ctypes.c_void_p]
    lib.onnxc_session_error.restype = ctypes.c_char_p
    session = lib.onnxc_session_create(lib.onnxc_descriptor(), threads)
    if not session:
        raise RuntimeError("onnxc_session_create failed")
    # Inputs in the --input order, which must be the model's (q, k, v for the attention models).
    arrays = [np.ascontiguousarray(value, dtype=np.float32) for value in feeds.values()]
    inputs = (OnnxcTensor * len(arrays))()
    for tensor, array in zip(inputs, arrays):
        tensor.data = array.ctypes.data
        tensor.dtype = ONNXC_F32
        tensor.rank = array.ndim
        for axis, extent in enumerate(array.shape):
            tensor.dims[axis] = extent
        tensor.size_bytes = array.nbytes
    outputs = (OnnxcTensor * num_outputs)()

    def run() -> None:
        for output in outputs:
            output.data = None
        if lib.onnxc_session_run(session, inputs, len(arrays), outputs, num_outputs) != 0:
            raise RuntimeError(lib.onnxc_session_error(session).decode())
    return run


def ort_runner(model: str, feeds: dict, threads: int, num_outputs: int = 1):
    session = ort_session(model, threads)
    return lambda: session.run(None, feeds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("side", choices=["ort", "onnxc"])
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--outputs", type=int, default=1, help="the onnxc model's number of outputs")
    args = parser.parse_args()
    feeds = {}
    for pair in args.input:
        name, _, path = pair.partition("=")
        feeds[name] = np.load(path)
    run = (ort_runner if args.side == "ort" else onnxc_runner)(args.model, feeds, args.threads, args.outputs)
    for _ in range(args.warmup):
        run()
    times = []
    for _ in range(args.iters):
        start = time.process_time()
        run()
        times.append((time.process_time() - start) * 1e3)
    print(json.dumps({"times_ms": times, "peak_mib": peak_resident_mib()}))


if __name__ == "__main__":
    main()

"""Runs a compiled model once with each KV cache pair's past and present in ONE buffer.

    python run_shared_cache.py MODEL.so MODEL_NAME INPUT_DIR EXPECTED_DIR PAIR...

PAIR is PAST=PRESENT (input and output names). Through the C API (ctypes; the .so carries
it): every input is INPUT_DIR/NAME.npy; each pair's past is copied into a buffer that is
passed as both that input's data and that output's buffer, so the model updates it in place.
Every output (the presents read back from their shared buffers) must match EXPECTED_DIR/NAME.npy
(as `onnxc run --backend=ref` writes them) to 1e-5; prints one line per output, exits 1 on a
mismatch.
"""

import ctypes
import os
import sys

import numpy as np

MAX_RANK = 8
DTYPES = {np.dtype(np.float32): 1, np.dtype(np.int64): 11}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("size_bytes", ctypes.c_size_t)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_void_p), ("shape_text", ctypes.c_char_p)]


class Descriptor(ctypes.Structure):
    """The leading fields of model_abi.h's onnxc_model_descriptor."""
    _fields_ = [("abi_version", ctypes.c_uint32), ("model_name", ctypes.c_char_p),
                ("num_symbols", ctypes.c_int32), ("symbol_names", ctypes.c_void_p),
                ("symbol_sources", ctypes.c_void_p), ("num_inputs", ctypes.c_int32),
                ("inputs", ctypes.POINTER(TensorInfo)), ("num_outputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(TensorInfo))]


def tensor(array, output=False):
    t = Tensor()
    t.data = array.ctypes.data
    t.dtype = DTYPES[array.dtype]
    t.rank = 0 if output else array.ndim
    for i, d in enumerate([] if output else array.shape):
        t.dims[i] = d
    t.size_bytes = array.nbytes
    return t


def main():
    so, name, input_dir, expected_dir = sys.argv[1:5]
    pairs = dict(arg.split("=") for arg in sys.argv[5:])
    lib = ctypes.CDLL(os.path.abspath(so))
    getattr(lib, "onnxc_model_" + name).restype = ctypes.c_void_p
    lib.onnxc_session_create.restype = ctypes.c_void_p
    lib.onnxc_session_create.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.onnxc_session_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                                      ctypes.c_void_p, ctypes.c_int32]
    lib.onnxc_session_error.restype = ctypes.c_char_p
    lib.onnxc_session_error.argtypes = [ctypes.c_void_p]
    descriptor = ctypes.cast(getattr(lib, "onnxc_model_" + name)(),
                             ctypes.POINTER(Descriptor)).contents
    session = lib.onnxc_session_create(ctypes.addressof(descriptor), 1)
    assert session, "no session"
    inputs = [descriptor.inputs[i].name.decode() for i in range(descriptor.num_inputs)]
    outputs = [descriptor.outputs[i].name.decode() for i in range(descriptor.num_outputs)]
    arrays = {n: np.ascontiguousarray(np.load(os.path.join(input_dir, n + ".npy"))) for n in inputs}
    expected = {n: np.load(os.path.join(expected_dir, n + ".npy")) for n in outputs}
    present_of = {present: past for past, present in pairs.items()}
    results = {n: arrays[present_of[n]] if n in present_of else np.zeros_like(expected[n])
               for n in outputs}
    ins = (Tensor * len(inputs))(*[tensor(arrays[n]) for n in inputs])
    outs = (Tensor * len(outputs))(*[tensor(results[n], output=True) for n in outputs])
    if lib.onnxc_session_run(session, ins, len(inputs), outs, len(outputs)) != 0:
        sys.exit("run failed: " + lib.onnxc_session_error(session).decode())
    failed = False
    for i, n in enumerate(outputs):
        shared = " (in the buffer of " + present_of[n] + ")" if n in present_of else ""
        assert outs[i].data == results[n].ctypes.data, n + " was not written in place"
        error = float(np.max(np.abs(results[n] - expected[n]))) if expected[n].size else 0.0
        ok = results[n].shape == expected[n].shape and error <= 1e-5
        failed |= not ok
        print(f"{n}{shared}: max error {error:.2g} {'ok' if ok else 'MISMATCH'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

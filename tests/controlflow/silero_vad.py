#!/usr/bin/env python3
# tests/controlflow/silero_vad.py - how far the silero-vad wheel's models get
#
# Fetches the `silero-vad` wheel from PyPI into BUILD_DIR/silero (pip
# download; never committed), and for each of its ONNX files runs
# `onnxc run --backend=ref` and `onnxc run` (JIT) on one
# 512-sample chunk at 16 kHz with a zero state, comparing each output with
# onnxruntime (rel err <= 1e-4). Prints one line per model and stage; exits
# 1 when any model fails a stage. Needs the network; not part of ctest.
#
# usage: silero_vad.py ONNXC BUILD_DIR
import glob
import os
import subprocess
import sys
import zipfile

import numpy as np


def fetch(build_dir):
    folder = os.path.join(build_dir, "silero")
    wheels = glob.glob(os.path.join(folder, "silero_vad-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "silero-vad", "--no-deps",
                        "-d", folder], check=True, stdout=subprocess.DEVNULL)
        wheels = glob.glob(os.path.join(folder, "silero_vad-*.whl"))
    extracted = os.path.join(folder, "wheel")
    with zipfile.ZipFile(sorted(wheels)[-1]) as wheel:
        for name in wheel.namelist():
            if name.endswith(".onnx"):
                wheel.extract(name, extracted)
    return sorted(glob.glob(os.path.join(extracted, "**", "*.onnx"), recursive=True))


def inputs_for(session):
    rng = np.random.default_rng(0)
    feeds = {}
    for info in session.get_inputs():
        if info.type == "tensor(int64)":
            feeds[info.name] = np.array(16000, dtype=np.int64)
            continue
        dtype = np.float16 if info.type == "tensor(float16)" else np.float32
        shape = [d if isinstance(d, int) else None for d in info.shape]
        if info.name == "state":
            shape = [2, 1, 128]
        elif info.name in ("h", "c"):
            shape = [2, 1, 64]
        else:
            shape = [1, 512] if len(shape) == 2 else [d or 1 for d in shape]
        value = rng.standard_normal(shape) * (0.1 if info.name == "input" else 0.0)
        feeds[info.name] = value.astype(dtype)
    return feeds


def run_onnxc(onnxc, path, feeds, out_dir, backend):
    os.makedirs(out_dir, exist_ok=True)
    args = [onnxc, "run", path, "--backend=" + backend, "--output-dir", out_dir]
    for name, value in feeds.items():
        file = os.path.join(out_dir, "in_" + name.replace("/", "_") + ".npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    return subprocess.run(args, capture_output=True, text=True)


def compare(session, feeds, out_dir):
    expected = session.run(None, feeds)
    worst = 0.0
    for info, want in zip(session.get_outputs(), expected):
        got = np.load(os.path.join(out_dir, info.name + ".npy")).astype(np.float64)
        want = want.astype(np.float64)
        if got.shape != want.shape:
            return f"output {info.name}: shape {got.shape}, onnxruntime {want.shape}"
        scale = max(np.abs(want).max(), 1e-6)
        worst = max(worst, float(np.abs(got - want).max() / scale))
    return None if worst <= 1e-4 else f"rel err {worst:.2e} > 1e-4"


def main():
    onnxc, build_dir = sys.argv[1], sys.argv[2]
    import onnxruntime as ort
    failed = False
    for path in fetch(build_dir):
        name = os.path.basename(path)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = inputs_for(session)
        for backend in ["ref", "jit"]:
            done = run_onnxc(onnxc, path, feeds, os.path.join(build_dir, "silero", "out",
                                                             name, backend), backend)
            if done.returncode != 0:
                print(f"FAIL {name} {backend}: {done.stderr.strip().splitlines()[-1]}")
                failed = True
                continue
            problem = compare(session, feeds, os.path.join(build_dir, "silero", "out", name, backend))
            print(f"{'FAIL' if problem else 'ok  '} {name} {backend}" + (f": {problem}" if problem else ""))
            failed = failed or bool(problem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

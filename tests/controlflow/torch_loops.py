#!/usr/bin/env python3
# tests/controlflow/torch_loops.py - torch.jit.script loops through torch.onnx, compiled
#
# Real loops as torch 1.13's exporter writes them (opsets 14 and 17): scripted
# modules whose `for t in range(x.size(0))` becomes a Loop with M from
# Shape -> Gather and an always-true condition, a `while` whose condition
# the body computes through an If (short-circuit `and`), a tensor filled row
# by row in the loop (ScatterND on a carried [T, B, 8]) and a loop nested
# in a loop. Each is compiled once to a .so (`onnxc compile`: one library for
# every trip count) and run at several trip counts, zero included, against
# onnxruntime (max relative error 1e-4).
#
# usage: torch_loops.py ONNXC WORKDIR
import os
import subprocess
import sys

import numpy as np

try:
    import torch
except ImportError:
    print("SKIP: no torch in this interpreter")
    sys.exit(0)
import onnxruntime as ort


class Rnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x, h):
        acc = torch.zeros_like(h)
        for t in range(x.size(0)):
            h = torch.tanh(self.lin(x[t]) + h)
            acc = acc + h
        return h, acc


class Fill(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x, h):
        out = torch.zeros_like(x)
        for t in range(x.size(0)):
            h = torch.tanh(self.lin(x[t]) + h)
            out[t] = h
        return h, out


class While(torch.nn.Module):
    def forward(self, x, limit):
        i = 0
        s = torch.zeros_like(x[0])
        while i < x.size(0) and bool(s.sum() < limit):
            s = s + x[i] * x[i]
            i += 1
        return s


class Nested(torch.nn.Module):
    def forward(self, x):
        total = torch.zeros_like(x[0])
        for t in range(x.size(0)):
            row = x[t]
            for k in range(3):
                row = torch.sin(row) + 0.5 * row
            total = total + row * (t + 1)
        return total


def rnn_inputs(rng, t):
    return {"x": rng.standard_normal((t, 2, 8)).astype(np.float32),
            "h0": rng.standard_normal((2, 8)).astype(np.float32)}


# name, opset, module, dynamic axes, inputs for a trip count, trip counts
# (the last two read x[0] before their loop: no zero)
MODELS = [
    ("rnn", 14, Rnn, {"x": {0: "T", 1: "B"}, "h0": {0: "B"}}, rnn_inputs, [1, 3, 11, 0]),
    ("fill", 17, Fill, {"x": {0: "T", 1: "B"}, "h0": {0: "B"}}, rnn_inputs, [1, 3, 11, 0]),
    ("while", 14, While, {"x": {0: "T"}},
     lambda rng, t: {"x": rng.standard_normal((t, 3)).astype(np.float32),
                     "limit": np.array(4.0 + t / 2, np.float32)}, [1, 3, 11, 40]),
    ("nested", 17, Nested, {"x": {0: "T"}},
     lambda rng, t: {"x": rng.standard_normal((t, 5)).astype(np.float32)}, [1, 2, 9]),
]


def export(module, example, dynamic, path, opset):
    torch.manual_seed(0)
    scripted = torch.jit.script(module())
    names = list(example)
    torch.onnx.export(scripted, tuple(torch.from_numpy(v) for v in example.values()), path,
                      opset_version=opset, input_names=names, dynamic_axes=dynamic)


def run_library(onnxc, library, inputs, out):
    os.makedirs(out, exist_ok=True)
    args = [onnxc, "run", library, "--output-dir", out]
    for name, value in inputs.items():
        file = os.path.join(out, "in_" + name + ".npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    return subprocess.run(args, capture_output=True, text=True)


def check_model(onnxc, workdir, entry, failures):
    """Exports one model, compiles it once and runs it at every trip count."""
    name, opset, module, dynamic, make_inputs, trip_counts = entry
    label = f"{name}-opset{opset}"
    folder = os.path.join(workdir, label)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    export(module, make_inputs(np.random.default_rng(0), 4), dynamic, path, opset)
    library = os.path.join(folder, "model.so")
    compiled = subprocess.run([onnxc, "compile", path, "-o", library], capture_output=True,
                              text=True)
    if compiled.returncode != 0:
        failures.append(f"{label}: compile: exit {compiled.returncode}: {compiled.stderr.strip()}")
        return
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    rng = np.random.default_rng(1)
    for trips in trip_counts:
        inputs = make_inputs(rng, trips)
        expected = session.run(None, inputs)
        out = os.path.join(folder, f"so{trips}")
        done = run_library(onnxc, library, inputs, out)
        if done.returncode != 0:
            failures.append(f"{label} T={trips}: exit {done.returncode}: {done.stderr.strip()}")
            continue
        worst = 0.0
        for oname, want in zip(outputs, expected):
            got = np.load(os.path.join(out, oname + ".npy"))
            if got.shape != want.shape:
                failures.append(f"{label} T={trips}: output {oname}: shape {got.shape}, "
                                f"onnxruntime {want.shape}")
                break
            if want.size:
                scale = max(float(np.max(np.abs(want))), 1e-6)
                worst = max(worst, float(np.max(np.abs(got - want))) / scale)
        else:
            if worst > 1e-4:
                failures.append(f"{label} T={trips}: max rel err {worst:.2e}")
            else:
                print(f"ok   {label} T={trips}: max rel err {worst:.1e}")


def main():
    onnxc, workdir = sys.argv[1], sys.argv[2]
    failures = []
    for entry in MODELS:
        check_model(onnxc, workdir, entry, failures)
    for failure in failures:
        print("FAIL " + failure)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

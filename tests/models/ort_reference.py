#!/usr/bin/env python3
"""Runs a model with onnxruntime and writes its outputs the way `onnxc run` does.

    .venv/bin/python tests/models/ort_reference.py MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR
        [--opt-level disable|basic|extended|all]

One DIR/<output name>.npy per graph output, with characters outside [A-Za-z0-9_.-] in the
name replaced by '_'. The default optimization level is 'disable': the reference is the plain
graph, not ORT's fused rewrite of it.
"""

import argparse
import os
import re
import sys

import numpy as np

OPT_LEVELS = ("disable", "basic", "extended", "all")


def output_file_name(output_name: str) -> str:
    """The file an output named `output_name` is written to (shared with `onnxc run`)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", output_name) + ".npy"


def make_session(model_path: str, opt_level: str = "disable"):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt_level]
    options.log_severity_level = 3  # errors only
    return ort.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])


def run_ort(model_path: str, feeds: dict, opt_level: str = "disable") -> dict:
    """Returns {output name: array} for one run of the model on the CPU provider."""
    session = make_session(model_path, opt_level)
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def write_outputs(outputs: dict, output_dir: str) -> list:
    os.makedirs(output_dir, exist_ok=True)
    paths = []
    for name, value in outputs.items():
        path = os.path.join(output_dir, output_file_name(name))
        np.save(path, value)
        paths.append(path)
    return paths


def parse_input_args(pairs: list) -> dict:
    feeds = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--input expects NAME=FILE.npy, got '{pair}'")
        feeds[name] = np.load(path)
    return feeds


def main() -> int:
    parser = argparse.ArgumentParser(description="Run a model with onnxruntime; write outputs as .npy files.")
    parser.add_argument("model")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--opt-level", choices=OPT_LEVELS, default="disable")
    args = parser.parse_args()
    try:
        feeds = parse_input_args(args.input)
        outputs = run_ort(args.model, feeds, args.opt_level)
    except Exception as error:  # one line, as onnxc does
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"ort_reference: error: {args.model}: {message}", file=sys.stderr)
        return 1
    for path, (name, value) in zip(write_outputs(outputs, args.output_dir), outputs.items()):
        print(f"{name}: {value.dtype}{list(value.shape)} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

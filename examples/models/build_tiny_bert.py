#!/usr/bin/env python3
"""Builds the demo model: a tiny BERT-style encoder (2 layers, hidden 32, 4 heads), random
weights with a fixed seed, exported by torch.onnx (TorchScript exporter) at opset 17 with
dynamic batch and sequence axes.

    .venv/bin/python examples/models/build_tiny_bert.py OUT.onnx

Inputs: input_ids, attention_mask (int64 [batch, seq]); output: last_hidden_state
(float32 [batch, seq, 32]). The module itself is the one the model tests use
(tests/models/transformers_zoo.py), only smaller.
"""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

import build_models  # noqa: E402
import transformers_zoo as zoo  # noqa: E402

CONFIG = zoo.BertConfig(vocab_size=100, hidden=32, heads=4, ffn=128, layers=2, max_positions=32)
SEED = 7
OPSET = 17
# Input descriptions in the format of tests/models/manifest.json (see model_inputs.py).
INPUTS = [
    {"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"],
     "generator": {"kind": "token_ids", "low": 0, "high": CONFIG.vocab_size}},
    {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "seq"],
     "generator": {"kind": "attention_mask"}},
]
OUTPUT = "last_hidden_state"


def build_module():
    import torch
    torch.manual_seed(SEED)
    module = zoo.BertEncoder(CONFIG)
    zoo.randomize_norms(module, torch.Generator().manual_seed(SEED))
    return module.eval()


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} OUT.onnx", file=sys.stderr)
        return 2
    import onnx
    import torch

    out = sys.argv[1]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    example = (torch.randint(0, CONFIG.vocab_size, (2, 5)), torch.tensor([[1] * 5, [1, 1, 1, 0, 0]]))
    dynamic_axes = {spec["name"]: {0: "batch", 1: "seq"} for spec in INPUTS}
    dynamic_axes[OUTPUT] = {0: "batch", 1: "seq"}
    module = build_module()
    zoo.export_onnx(module, example, out, [spec["name"] for spec in INPUTS], [OUTPUT], dynamic_axes, OPSET)
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    # onnxruntime on the file must reproduce torch, at the demo shape and a padded batch.
    build_models.check_against_torch(module, out, "tiny_bert", INPUTS,
                                     [{"batch": 1, "seq": 8}, {"batch": 2, "seq": 13}])
    print(f"wrote {out}: tiny BERT, {CONFIG.layers} layers, hidden {CONFIG.hidden}, opset {OPSET}, "
          f"{len(model.graph.node)} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Batch and beam benchmark: 8 prompts in one batch vs one after another, and beam-4 vs greedy per step,
on a GPT-2-small-sized decoder (issue 30's targets; nothing is asserted, the machine is shared).

    .venv/bin/python benchmarks/generate/batch.py [--threads 2] [--new-tokens 32] [--rows 8]

The model is HF transformers' GPT2LMHeadModel at GPT-2 small's size (12 layers, hidden 768, 12 heads,
vocabulary 50257; random weights, no download) exported with its KV cache as flat inputs and outputs
and with position_ids as an input (so prompts of different lengths are left-padded under the mask with
each row's own positions), opset 17, into build/bench-models, then compiled once to a .so. Through
onnxc's Python API in one process:

- batch: --rows random prompts of different lengths (16 to 64 ids) generate --new-tokens greedy tokens
  each, as one batch and then one prompt after another; printed: tokens per second of both and their
  ratio, and whether every row's tokens equal its tokens alone (they must).
- beams: the first prompt with --num-beams 4 and greedy, each for --new-tokens tokens (no stop id, so
  both run every step); printed: the time per step (the prompt's run included) of both.

The medians of --repeats runs after one warm-up run.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))
sys.path.insert(0, os.path.join(REPO, "build", "python"))

GPT2_SMALL = {"layers": 12, "hidden": 768, "heads": 12, "vocab": 50257, "positions": 1024}


def build_model(directory: str) -> str:
    path = os.path.join(directory, "gpt2_small_positions_past_op17.onnx")
    if os.path.exists(path):
        return path
    import torch
    import transformers
    import transformers_zoo as zoo
    from torch import nn

    class Gpt2WithPositions(nn.Module):
        """GPT2LMHeadModel taking position_ids too: (input_ids, attention_mask, position_ids,
        past_key_0, past_value_0, ...) -> (logits, present_key_0, present_value_0, ...)."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = tuple((past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2))
            logits, presents = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                          position_ids=position_ids, past_key_values=cache, use_cache=True,
                                          return_dict=False)[:2]
            return (logits,) + tuple(t for pair in presents for t in pair)

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=GPT2_SMALL["vocab"], n_positions=GPT2_SMALL["positions"],
                                  n_embd=GPT2_SMALL["hidden"], n_layer=GPT2_SMALL["layers"],
                                  n_head=GPT2_SMALL["heads"], use_cache=True)
    model = Gpt2WithPositions(transformers.GPT2LMHeadModel(cfg)).eval()
    head_dim = GPT2_SMALL["hidden"] // GPT2_SMALL["heads"]
    example = [torch.randint(0, 1000, (2, 3)), torch.ones(2, 5, dtype=torch.int64),
               torch.arange(2, 5).repeat(2, 1)]
    names = ["input_ids", "attention_mask", "position_ids"]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "past+seq"},
            "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    outputs = ["logits"]
    for layer in range(GPT2_SMALL["layers"]):
        for kind in ("key", "value"):
            example.append(torch.randn(2, GPT2_SMALL["heads"], 2, head_dim))
            names.append(f"past_{kind}_{layer}")
            axes[names[-1]] = {0: "batch", 2: "past"}
            outputs.append(f"present_{kind}_{layer}")
            axes[outputs[-1]] = {0: "batch", 2: "past+seq"}
    os.makedirs(directory, exist_ok=True)
    partial = path + ".partial"
    start = time.time()
    zoo.export_onnx(model, tuple(example), partial, names, outputs, axes, 17)
    os.replace(partial, path)
    print(f"exported {path} in {time.time() - start:.0f} s", flush=True)
    return path


def timed(function, repeats):
    function()  # warm-up: page faults on the weights, the first plans
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--models", default=os.path.join(REPO, "build", "bench-models"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import onnxc
    model_path = build_model(args.models)
    library = os.path.join(args.models, "gpt2_small_positions_past_op17.so")
    if not os.path.exists(library) or os.path.getmtime(library) < os.path.getmtime(args.onnxc):
        start = time.time()
        subprocess.run([args.onnxc, "compile", model_path, "-o", library, "--logits=last"], check=True, capture_output=True)
        print(f"compiled {library} in {time.time() - start:.0f} s", flush=True)
    model = onnxc.load(library, threads=args.threads)

    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, 50000, int(length)).tolist()
               for length in np.linspace(16, 64, args.rows).astype(int)]
    new = args.new_tokens
    one_by_one_s, alone = timed(lambda: [model.generate(p, max_new_tokens=new) for p in prompts], args.repeats)
    batch_s, batched = timed(lambda: model.generate(prompts, max_new_tokens=new), args.repeats)
    tokens = sum(len(row) for row in batched)
    print(f"GPT-2 small, {args.threads} threads, {args.rows} prompts of {len(prompts[0])} to {len(prompts[-1])} "
          f"ids, {new} greedy tokens each")
    print(f"  one after another: {tokens / one_by_one_s:8.1f} tokens/s ({one_by_one_s * 1e3:.0f} ms)")
    print(f"  one batch:         {tokens / batch_s:8.1f} tokens/s ({batch_s * 1e3:.0f} ms), "
          f"{one_by_one_s / batch_s:.2f}x; rows equal to each prompt alone: {batched == alone}")

    greedy_s, _ = timed(lambda: model.generate(prompts[0], max_new_tokens=new), args.repeats)
    beam_s, _ = timed(lambda: model.generate(prompts[0], max_new_tokens=new, num_beams=4), args.repeats)
    print(f"  per step, prompt of {len(prompts[0])}: greedy {greedy_s / new * 1e3:.2f} ms, "
          f"beam-4 {beam_s / new * 1e3:.2f} ms ({beam_s / greedy_s:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

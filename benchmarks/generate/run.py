"""Decode benchmark: onnxc's generator vs onnxruntime's IOBinding loop on a GPT-2-small-sized decoder.

    bash benchmarks/e2e/setup_peers.sh      # newest onnxruntime in build/peers-venv
    .venv/bin/python benchmarks/generate/run.py --peer-python build/peers-venv/bin/python
                                               [--contexts 128,1008] [--prefill 512] [--threads 1]

The model is HF transformers' GPT2LMHeadModel at GPT-2 small's size (12 layers, hidden 768, 12
heads, vocabulary 50257, 1024 positions; random weights, no download) exported with its KV cache
as flat inputs and outputs (past_key_i / present_key_i, tests/models/library_models.Gpt2WithPast),
opset 17, into build/bench-models. onnxc compiles it once to a .so and `onnxc generate --bench`
runs the prompt and then one step per token; onnxruntime runs the same file with every graph
optimization and IOBinding (ort_decode.py). For each context length the prompt is that many
random ids and both sides produce --new-tokens greedy tokens, which must agree.

Printed per context: the median per-token latency of each side and their ratio (onnxc / ORT; below
1 is faster), and for --prefill the prompt's latency after a warm-up run on both sides (the cold
first runs too: onnxc's pays the page faults on its weights, which ORT pays at session creation). Nothing here is asserted: the machine is shared; read the ratio.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

GPT2_SMALL = {"layers": 12, "hidden": 768, "heads": 12, "vocab": 50257, "positions": 1024}


def build_model(directory: str) -> str:
    path = os.path.join(directory, "gpt2_small_past_op17.onnx")
    if os.path.exists(path):
        return path
    import torch
    import transformers
    import transformers_zoo as zoo
    from library_models import Gpt2WithPast
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=GPT2_SMALL["vocab"], n_positions=GPT2_SMALL["positions"],
                                  n_embd=GPT2_SMALL["hidden"], n_layer=GPT2_SMALL["layers"],
                                  n_head=GPT2_SMALL["heads"], use_cache=True)
    model = Gpt2WithPast(transformers.GPT2LMHeadModel(cfg)).eval()
    head_dim = GPT2_SMALL["hidden"] // GPT2_SMALL["heads"]
    example = [torch.randint(0, 1000, (1, 3)), torch.ones(1, 5, dtype=torch.int64)]
    names, axes = ["input_ids", "attention_mask"], {"input_ids": {0: "batch", 1: "seq"},
                                                    "attention_mask": {0: "batch", 1: "past+seq"}}
    outputs = ["logits"]
    axes["logits"] = {0: "batch", 1: "seq"}
    for layer in range(GPT2_SMALL["layers"]):
        for kind in ("key", "value"):
            example.append(torch.randn(1, GPT2_SMALL["heads"], 2, head_dim))
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


def onnxc_decode(onnxc: str, library: str, prompt: list, new_tokens: int, threads: int) -> dict:
    command = [onnxc, "generate", library, "--prompt-ids", ",".join(map(str, prompt)),
               "--max-new-tokens", str(new_tokens), "--threads", str(threads), "--bench"]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    bench = re.search(r"prefill ([0-9.]+) ms .*per token: median ([0-9.]+) ms.*first prefill took ([0-9.]+) ms",
                      result.stderr)
    if not bench:
        raise RuntimeError(f"no --bench line in: {result.stderr}")
    return {"prefill_ms": float(bench.group(1)), "step_ms": float(bench.group(2)),
            "prefill_cold_ms": float(bench.group(3)),
            "tokens": [int(t) for t in result.stdout.strip().split(",")]}


def ort_decode(peer_python: str, model: str, prompt_length: int, new_tokens: int, threads: int) -> dict:
    command = [peer_python, os.path.join(HERE, "ort_decode.py"), model, "--prompt-length", str(prompt_length),
               "--new-tokens", str(new_tokens), "--threads", str(threads), "--vocab", str(GPT2_SMALL["vocab"])]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--peer-python", default=os.path.join(REPO, "build", "peers-venv", "bin", "python"))
    parser.add_argument("--models", default=os.path.join(REPO, "build", "bench-models"))
    parser.add_argument("--contexts", default="128,1008", help="prompt lengths of the decode runs")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--prefill", type=int, default=512, help="prompt length of the prefill run (0: none)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", default="f32",
                        help="onnxc's --precision (f32, bf16, auto); bf16 greedy tokens may differ from ORT's f32 ones")
    args = parser.parse_args()

    model = build_model(args.models)
    suffix = "" if args.precision == "f32" else f"_{args.precision}"
    library = os.path.join(args.models, f"gpt2_small_past_op17{suffix}.so")
    if not os.path.exists(library) or os.path.getmtime(library) < os.path.getmtime(args.onnxc):
        start = time.time()
        subprocess.run([args.onnxc, "compile", model, "-o", library, "--precision", args.precision],
                       check=True, capture_output=True)
        print(f"compiled {library} in {time.time() - start:.0f} s", flush=True)

    print(f"GPT-2 small with a KV cache, batch 1, {args.threads} thread(s), {args.new_tokens} greedy tokens, "
          f"onnxc at {args.precision}")
    print(f"{'context':>8} {'onnxc ms/token':>15} {'ORT ms/token':>13} {'ratio':>6}  tokens")
    for context in (int(c) for c in args.contexts.split(",")):
        if context + args.new_tokens > GPT2_SMALL["positions"]:
            raise SystemExit(f"context {context} + {args.new_tokens} new tokens exceed GPT-2's 1024 positions")
        prompt = [int(t) for t in np.random.default_rng(0).integers(0, GPT2_SMALL["vocab"], context)]
        mine = onnxc_decode(args.onnxc, library, prompt, args.new_tokens, args.threads)
        theirs = ort_decode(args.peer_python, model, context, args.new_tokens, args.threads)
        ort_step = statistics.median(theirs["steps_ms"])
        same = "same" if mine["tokens"] == theirs["tokens"] else "DIFFER"
        print(f"{context:>8} {mine['step_ms']:>15.2f} {ort_step:>13.2f} {mine['step_ms'] / ort_step:>6.2f}  {same}")
    if args.prefill:
        prompt = [int(t) for t in np.random.default_rng(0).integers(0, GPT2_SMALL["vocab"], args.prefill)]
        mine = onnxc_decode(args.onnxc, library, prompt, 1, args.threads)
        theirs = ort_decode(args.peer_python, model, args.prefill, 1, args.threads)
        print(f"prefill of {args.prefill}: onnxc {mine['prefill_ms']:.1f} ms warm ({mine['prefill_cold_ms']:.1f} "
              f"cold), ORT {theirs['prefill_warm_ms']:.1f} ms warm ({theirs['prefill_cold_ms']:.1f} cold); ratio "
              f"{mine['prefill_ms'] / theirs['prefill_warm_ms']:.2f} (onnxruntime {theirs['version']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

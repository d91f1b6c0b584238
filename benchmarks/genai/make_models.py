#!/usr/bin/env python3
"""Writes the benchmark's model folders: a random-weight TinyLlama-1.1B-shaped HF LLaMA and the
onnxruntime-genai builder's folders made from it.

    build/genai-venv/bin/python benchmarks/genai/make_models.py OUT_DIR [--precision int4 fp32]

Run with the builder's venv (tests/genai/setup_genai_venv.sh: builder 0.5.2, torch 1.13,
transformers 4.40). OUT_DIR/tinyllama_hf is LlamaConfig + LlamaForCausalLM at TinyLlama-1.1B's
shape (hidden 2048, 22 layers, 32 query / 4 KV heads, FFN 5632, vocabulary 32000). HF's own
initialization is skipped (it costs minutes at 1.1B parameters); every weight is then filled in
place from a seeded normal of std 0.02 and the norms stay ones, saved with safetensors. A
word-level tokenizer is written beside it only because the builder copies one; the benchmark
uses token ids. OUT_DIR/tinyllama_PRECISION is `python -m onnxruntime_genai.models.builder -i
tinyllama_hf -o ... -p PRECISION -e cpu` (with --accuracy-level N, the int4 folder is
tinyllama_int4_accN, built with `--extra_options int4_accuracy_level=N`). A folder with a
matching stamp is kept.
"""

import argparse
import json
import os
import subprocess
import sys
import time

CONFIG = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
              num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048,
              rms_norm_eps=1e-5, rope_theta=10000.0, bos_token_id=1, eos_token_id=2,
              tie_word_embeddings=False, torch_dtype="float32")
STAMP = "tinyllama-random-v1"

# The word-level tokenizer the builder copies is the test folders' (tests/genai).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "genai"))
from build_genai_models import write_tokenizer  # noqa: E402


def builder_version() -> str:
    import onnxruntime_genai
    return onnxruntime_genai.__version__


def write_hf_llama(folder: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.modeling_utils import no_init_weights
    config = LlamaConfig(**CONFIG)
    with no_init_weights(_enable=True):
        model = LlamaForCausalLM(config).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.normal_(0.0, 0.02, generator=generator)
    model.save_pretrained(folder, safe_serialization=True)
    write_tokenizer(folder, CONFIG["vocab_size"])


def build(out_dir: str, precision: str, hf_folder: str, accuracy_level: int) -> str:
    folder = os.path.join(out_dir, f"tinyllama_{precision}")
    extra = []
    if precision == "int4" and accuracy_level:
        folder += f"_acc{accuracy_level}"
        extra = ["--extra_options", f"int4_accuracy_level={accuracy_level}"]
    stamp_file = os.path.join(folder, ".stamp")
    stamp = f"{STAMP} builder {builder_version()}"
    if os.path.exists(stamp_file) and open(stamp_file).read() == stamp:
        return folder
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf_folder, "-o",
               folder, "-p", precision, "-e", "cpu", "-c", os.path.join(out_dir, "builder-cache"), *extra]
    start = time.time()
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"builder failed: {' '.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    print(f"built {folder} in {time.time() - start:.0f} s", file=sys.stderr)
    with open(stamp_file, "w") as f:
        f.write(stamp)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--precision", nargs="+", default=["int4", "fp32"])
    parser.add_argument("--accuracy-level", type=int, default=0,
                        help="int4_accuracy_level for the int4 folder (0: the builder's default, which "
                        "0.5.2 writes as accuracy_level 0, f32 activations; 4: int8 activations)")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    hf_folder = os.path.join(args.out_dir, "tinyllama_hf")
    hf_stamp = os.path.join(hf_folder, ".stamp")
    if not (os.path.exists(hf_stamp) and open(hf_stamp).read() == STAMP):
        start = time.time()
        write_hf_llama(hf_folder)
        with open(hf_stamp, "w") as f:
            f.write(STAMP)
        print(f"wrote {hf_folder} in {time.time() - start:.0f} s", file=sys.stderr)
    folders = {p: build(args.out_dir, p, hf_folder, args.accuracy_level) for p in args.precision}
    print(json.dumps(folders))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes onnxruntime-genai model folders from a random-weight Hugging Face LLaMA.

    build/genai-venv/bin/python tests/genai/build_genai_models.py OUT_DIR [--precision fp32 int4]

Run with the builder's venv (tests/genai/setup_genai_venv.sh). Makes OUT_DIR/hf_llama (a
transformers LLaMA with grouped-query attention: hidden 64, 2 layers, 4 query and 2 KV heads,
vocabulary 512, random weights from a fixed seed, and a word-level tokenizer made here, since
the builder copies one) and runs `python -m onnxruntime_genai.models.builder -i hf_llama -o
OUT_DIR/llama_PRECISION -p PRECISION -e cpu` for each precision. A folder whose stamp (this
script and the builder's version) matches is kept, so a second run costs nothing.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CONFIG = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=512, max_position_embeddings=256,
              rms_norm_eps=1e-5, rope_theta=10000.0, bos_token_id=1, eos_token_id=2,
              pad_token_id=0, tie_word_embeddings=False, initializer_range=0.2)


def stamp() -> str:
    import onnxruntime_genai
    with open(os.path.abspath(__file__), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    return f"{digest} onnxruntime-genai {onnxruntime_genai.__version__}"


def write_tokenizer(folder: str, vocab_size: int) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for i in range(3, vocab_size):
        vocab[f"w{i}"] = i
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>", pad_token="<unk>")
    fast.save_pretrained(folder)


def write_hf_llama(folder: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(**CONFIG)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(folder, safe_serialization=True)
    write_tokenizer(folder, CONFIG["vocab_size"])


def build(out_dir: str, precision: str, hf_folder: str) -> str:
    folder = os.path.join(out_dir, f"llama_{precision}")
    stamp_file = os.path.join(folder, ".stamp")
    if os.path.exists(stamp_file) and open(stamp_file).read() == stamp():
        return folder
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf_folder, "-o",
               folder, "-p", precision, "-e", "cpu", "-c", os.path.join(out_dir, "cache")]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"builder failed: {' '.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    with open(stamp_file, "w") as f:
        f.write(stamp())
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--precision", nargs="+", default=["fp32", "int4"])
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    hf_folder = os.path.join(args.out_dir, "hf_llama")
    hf_stamp = os.path.join(hf_folder, ".stamp")
    if not (os.path.exists(hf_stamp) and open(hf_stamp).read() == stamp()):
        write_hf_llama(hf_folder)
        with open(hf_stamp, "w") as f:
            f.write(stamp())
    folders = {p: build(args.out_dir, p, hf_folder) for p in args.precision}
    print(json.dumps(folders))


if __name__ == "__main__":
    main()

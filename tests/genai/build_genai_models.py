#!/usr/bin/env python3
"""Writes onnxruntime-genai model folders from random-weight Hugging Face decoders.

    build/genai-venv/bin/python tests/genai/build_genai_models.py OUT_DIR [--precision fp32 int4]

Run with the builder's venv (tests/genai/setup_genai_venv.sh). Makes OUT_DIR/hf_llama (a
transformers LLaMA with grouped-query attention: hidden 64, 2 layers, 4 query and 2 KV heads,
vocabulary 512, random weights from a fixed seed, and a word-level tokenizer made here, since
the builder copies one) and runs `python -m onnxruntime_genai.models.builder -i hf_llama -o
OUT_DIR/llama_PRECISION -p PRECISION -e cpu` for each precision (fp32, int4 and fp16; at fp16
the builder writes MultiHeadAttention with a separate RotaryEmbedding and repeated KV heads). The other families the builder
writes differently (Mistral, Qwen2 with its q/k/v biases, Gemma with its GELU MLP, scaled
embeddings and (1 + w) norms, Phi with partial rotary, LayerNorm and a parallel MLP) are built at
int4, as the folders people download are, into OUT_DIR/FAMILY_int4. A folder whose stamp (this
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


# family: (transformers config class, model class, changes to CONFIG). Phi's rotary half of a
# 32-wide head is 16: onnxruntime's GroupQueryAttention wants the cos cache a multiple of 8.
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "gemma": ("GemmaConfig", "GemmaForCausalLM",
              {"head_dim": 16, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True}),
    "phi": ("PhiConfig", "PhiForCausalLM",
            {"hidden_size": 128, "intermediate_size": 256, "partial_rotary_factor": 0.5,
             "num_key_value_heads": 4, "rms_norm_eps": None}),
}


def write_hf_model(folder: str, family: str) -> None:
    import torch
    import transformers
    config_class, model_class, changes = FAMILIES[family]
    fields = {k: v for k, v in {**CONFIG, **changes}.items() if v is not None or k == "sliding_window"}
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**fields)
    model = getattr(transformers, model_class)(config).eval()
    if family != "llama":  # initializer_range is LLaMA's; the others get the same spread here
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() > 1:
                    parameter.normal_(0.0, CONFIG["initializer_range"])
    model.save_pretrained(folder, safe_serialization=True)
    write_tokenizer(folder, CONFIG["vocab_size"])


def build(out_dir: str, precision: str, hf_folder: str, family: str = "llama") -> str:
    folder = os.path.join(out_dir, f"{family}_{precision}")
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
    parser.add_argument("--precision", nargs="+", default=["fp32", "int4", "fp16"])
    parser.add_argument("--families", nargs="*", default=[f for f in FAMILIES if f != "llama"])
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    folders = {}
    for family in ["llama"] + args.families:
        hf_folder = os.path.join(args.out_dir, f"hf_{family}")
        hf_stamp = os.path.join(hf_folder, ".stamp")
        if not (os.path.exists(hf_stamp) and open(hf_stamp).read() == stamp()):
            write_hf_model(hf_folder, family)
            with open(hf_stamp, "w") as f:
                f.write(stamp())
        if family == "llama":  # the LLaMA folders keep their short keys: "fp32", "int4"
            folders.update({p: build(args.out_dir, p, hf_folder) for p in args.precision})
        else:
            folders[f"{family}_int4"] = build(args.out_dir, "int4", hf_folder, family)
    print(json.dumps(folders))


if __name__ == "__main__":
    main()

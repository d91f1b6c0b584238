"""Encoding throughput of onnxc's tokenizers against HF `tokenizers` (Rust), one thread, on about
10 MB of mixed text (English, Chinese, Arabic, emoji, code, whitespace runs), side by side on the
same tokenizer.json files. A benchmark, not a test: it prints MB/s and the ratio.

    PYTHONPATH=build/python .venv/bin/python benchmarks/tokenize/bench_tokenize.py [--megabytes 10]

The tokenizers are the ones tests/tokenizers/hf_tokenizers.py trains (GPT-2-style byte-level BPE,
LLaMA-3-style Split regex + byte-level, BERT WordPiece, LLaMA-2-style byte-fallback BPE, T5-style
Unigram) plus, when given with --minilm FOLDER, the all-MiniLM-L6-v2 tokenizer.json. Two ways of
encoding: the whole document in one call, and 4 KB chunks one call each (what a server sees).
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "tokenizers"))

import hf_tokenizers as hf  # noqa: E402
import onnxc  # noqa: E402
from tokenizers import Tokenizer as HfTokenizer  # noqa: E402


def mixed_text(megabytes, seed=3):
    import random
    rng = random.Random(seed)
    corpus = hf.training_corpus(seed)
    samples = [hf.ENGLISH, hf.CHINESE, hf.ARABIC, hf.EMOJI, hf.CODE, hf.WHITESPACE] + corpus[:2000]
    out, total = [], 0
    while total < megabytes * 1_000_000:
        piece = rng.choice(samples)
        out.append(piece)
        total += len(piece.encode()) + 1
    return "\n".join(out)


def best_of(repeats, function):
    best = float("inf")
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def chunks(text, size=4096):
    return [text[i:i + size] for i in range(0, len(text), size)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--minilm", help="a folder with the all-MiniLM-L6-v2 tokenizer.json")
    parser.add_argument("--only", help="comma-separated tokenizer names to measure (default: all)")
    args = parser.parse_args()

    text = mixed_text(args.megabytes)
    size_mb = len(text.encode()) / 1e6
    pieces = chunks(text)
    print(f"text: {size_mb:.1f} MB, {len(pieces)} chunks of 4096 characters; one thread")
    with tempfile.TemporaryDirectory() as folder:
        tokenizers = {}
        for name, tok in hf.built_tokenizers().items():
            tok.no_truncation()
            path = os.path.join(folder, name + ".json")
            tok.save(path)
            tokenizers[name] = (tok, path)
        if args.minilm:
            tok = HfTokenizer.from_file(os.path.join(args.minilm, "tokenizer.json"))
            tok.no_truncation()
            tok.no_padding()
            tokenizers["minilm"] = (tok, args.minilm)
        print(f"{'tokenizer':<20}{'mode':<10}{'HF MB/s':>10}{'onnxc MB/s':>12}{'onnxc/HF':>10}")
        for name, (reference, path) in tokenizers.items():
            if args.only and name not in args.only.split(","):
                continue
            ours = onnxc.Tokenizer(path)
            hf_time, hf_ids = best_of(args.repeats, lambda: reference.encode(text).ids)
            ox_time, ox_ids = best_of(args.repeats, lambda: ours.encode(text, truncation=False))
            same = "" if hf_ids == ox_ids else "  (ids differ!)"
            print(f"{name:<20}{'document':<10}{size_mb / hf_time:>10.2f}{size_mb / ox_time:>12.2f}"
                  f"{hf_time / ox_time:>9.2f}x{same}")
            hf_time, _ = best_of(args.repeats, lambda: [reference.encode(p).ids for p in pieces])
            ox_time, _ = best_of(args.repeats, lambda: [ours.encode(p, truncation=False) for p in pieces])
            print(f"{name:<20}{'chunks':<10}{size_mb / hf_time:>10.2f}{size_mb / ox_time:>12.2f}"
                  f"{hf_time / ox_time:>9.2f}x")


if __name__ == "__main__":
    main()

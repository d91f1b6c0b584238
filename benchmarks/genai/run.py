#!/usr/bin/env python3
"""onnxc vs onnxruntime-genai 0.18 on an int4 builder folder at TinyLlama-1.1B's shape, in one run.

    .venv/bin/python benchmarks/genai/run.py [--build build] [--threads 1,2] [--contexts 128,1024]
        [--prefill 512] [--tokens 16] [--rounds 3] [--greedy 64] [--skip-correctness | --skip-speed] [--fp32]
        [--accuracy-level 0|4]

Issue 29's targets, measured side by side on this machine (nothing asserted; the machine is
shared). What it does:

1. benchmarks/genai/make_models.py, in the builder's venv (build/genai-venv, made by
   tests/genai/setup_genai_venv.sh: builder 0.5.2, onnxruntime 1.20.1, Debian torch 1.13), writes
   a random-weight HF LLaMA at TinyLlama-1.1B's shape (hidden 2048, 22 layers, 32 query / 4 KV
   heads, FFN 5632, vocabulary 32000; 4.4 GB of safetensors) and the builder's `-p int4 -e cpu`
   (and with --fp32 the `-p fp32 -e cpu`) folders from it, under BUILD/bench-models (cached by a
   stamp; about two minutes each, 10 GB peak). The builder 0.5.2 writes MatMulNBits at
   accuracy_level 0 (f32 activations) unless asked: --accuracy-level 4 builds and measures
   tinyllama_int4_acc4 instead (int8 activations).
2. The peer runs in BUILD/genai-runtime-venv (setup_runtime_venv.sh, requirements-runtime.txt:
   onnxruntime-genai 0.18.0 with onnxruntime 1.32.0): its own loop, og.GeneratorParams
   (greedy, max_length = prompt + new tokens, min_length the same so no end token stops it) and
   og.Generator; the prefill is append_tokens(prompt) plus the first generate_next_token (which
   only picks the token), a step is one generate_next_token. Its thread count goes through the
   config's session_options (intra_op_num_threads).
3. onnxc compiles the int4 folder once to BUILD/bench-models/tinyllama_int4.so (kept while newer
   than the model) and runs `onnxc generate SO --prompt-ids ... --max-new-tokens N+1 --bench
   --threads T` (the cache holds prompt + new tokens, as the peer's shared buffer).
4. Each side and thread count: one process per prompt length (context 128 and 1024 for the
   decode, --prefill for the time to the first token), each after a warm-up prefill; the per
   token figure is the median of --tokens steps. Peak resident memory is the process's
   ru_maxrss (os.wait4), at the longest context. The whole sweep runs --rounds times (default
   3), the two sides one after the other for each prompt, and each figure is each side's best
   round (least time; for memory the largest peak): on a shared machine a neighbour's load
   comes and goes over minutes, and one round measured 57 ms a token at context 128 but 54 ms
   at context 1024.
5. Decode bandwidth: the bytes one step reads, counted from the model file (every MatMulNBits's
   packed weights, scales and zero points, the norms' weights, one f32 embedding row, and the K
   and V of the context in every layer) over the step's time, against a plain read: the "read
   GB/s" median of `onnxc_bench_int4gemv --shape 2048x32000` (four streams over 512 MiB of
   copies, one thread); for two threads, two of them at once, summed. It is measured in every
   round, before that round's runs at that thread count, and its best round is the reference.
6. Correctness: on the int4 folder, the greedy tokens (--greedy, 2 threads, end token 2) of
   onnxc's library and of the peer, and the first position where they part; the largest
   difference of the first step's logits (a 16-token prompt, empty cache; the last position's,
   which the library keeps) between onnxc's Python API (Model.run of the compiled library) and
   an onnxruntime 1.32 session on the same model file. With --fp32, also the greedy tokens of `onnxc generate FP32_FOLDER` (JIT) against the
   peer's on the fp32 folder: not by default, since the builder then needs 10 GB and onnxc's JIT
   of the 4.4 GB of f32 weights peaked at 21.5 GB and failed to link (docs/PERFORMANCE.md, Zen 3).

One table at the end gives each figure and the ratio onnxc / peer (below 1: onnxc faster or
smaller). Needs build/tools/onnxc, the Python bindings (build/python) and onnxc_bench_int4gemv:
`ninja -C build onnxc onnxc_python_package _onnxc onnxc_bench_int4gemv`.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAYERS, KV_HEADS, HEAD, HIDDEN, VOCAB = 22, 4, 64, 2048, 32000
KV_BYTES_PER_POSITION = LAYERS * 2 * KV_HEADS * HEAD * 4

PEER = r'''
import json, sys, time
import numpy as np, onnxruntime_genai as og
mode, folder, threads, prompt_file, new = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
prompt = [int(t) for t in open(prompt_file).read().split(",")]
config = og.Config(folder)
config.overlay(json.dumps({"model": {"decoder": {"session_options": {
    "intra_op_num_threads": threads, "inter_op_num_threads": 1}}}}))
model = og.Model(config)

def generator(min_new):
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=len(prompt) + new,
                              min_length=len(prompt) + min_new)
    return og.Generator(model, params)

if mode == "bench":
    g = generator(new)
    g.append_tokens(prompt)
    for _ in range(3):
        g.generate_next_token()
    del g
    g = generator(new)
    start = time.perf_counter()
    g.append_tokens(prompt)
    g.generate_next_token()
    prefill = time.perf_counter() - start
    steps = []
    for _ in range(new - 1):
        start = time.perf_counter()
        g.generate_next_token()
        steps.append(time.perf_counter() - start)
    print(json.dumps({"prefill_ms": 1e3 * prefill, "step_ms": 1e3 * float(np.median(steps)),
                      "steps": len(steps)}))
else:
    g = generator(0)
    g.append_tokens(prompt)
    while not g.is_done():
        g.generate_next_token()
    print(json.dumps({"tokens": [int(t) for t in g.get_sequence(0)[len(prompt):]]}))
'''

ORT_LOGITS = r'''
import sys
import numpy as np, onnxruntime as ort
path, feeds, out = sys.argv[1], sys.argv[2], sys.argv[3]
options = ort.SessionOptions()
options.intra_op_num_threads = 2
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
data = dict(np.load(feeds))
np.save(out, session.run(["logits"], data)[0])
'''

ONNXC_LOGITS = r'''
import sys
import numpy as np, onnxc
library, feeds, out = sys.argv[1], sys.argv[2], sys.argv[3]
model = onnxc.load(library, threads=2)
np.save(out, model.run(["logits"], dict(np.load(feeds)))[0])
'''


def run(command, env=None, check=True):
    """(stdout, stderr, peak resident MiB) of a command; exits with its output if it fails
    (with check=False, raises RuntimeError with the end of its stderr)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0 and not check:
        raise RuntimeError(stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {process.returncode}")
    if process.returncode != 0:
        sys.exit(f"failed ({process.returncode}): {' '.join(command)[:300]}\n{stdout[-2000:]}\n{stderr[-3000:]}")
    return stdout, stderr, usage.ru_maxrss / 1024.0


def prompt_ids(length, seed=1):
    return np.random.default_rng(seed).integers(3, VOCAB, length).tolist()


def write_prompt(directory, ids):
    path = os.path.join(directory, f"prompt{len(ids)}.txt")
    with open(path, "w") as f:
        f.write(",".join(map(str, ids)))
    return path


def onnxc_bench(args, library, ids, threads):
    command = [args.onnxc, "generate", library, "--prompt-ids", ",".join(map(str, ids)),
               "--max-new-tokens", str(args.tokens + 1), "--bench", f"--threads={threads}"]
    _, stderr, rss = run(command)
    match = re.search(r"prefill ([\d.]+) ms .*median ([\d.]+) ms over (\d+) steps", stderr)
    if not match:
        sys.exit(f"no --bench line in: {stderr[-2000:]}")
    return {"prefill_ms": float(match[1]), "step_ms": float(match[2]), "rss_mib": rss}


def peer_bench(args, folder, prompt_file, threads):
    stdout, _, rss = run([args.runtime_python, "-c", PEER, "bench", folder, str(threads), prompt_file,
                          str(args.tokens + 1)])
    result = json.loads(stdout.strip().splitlines()[-1])
    result["rss_mib"] = rss
    return result


def keep_best(results, key, got):
    """results[key] keeps the least time of each kind and the largest peak memory seen."""
    best = results.setdefault(key, dict(got))
    for name, value in got.items():
        if name == "rss_mib":
            best[name] = max(best[name], value)
        elif name.endswith("_ms"):
            best[name] = min(best[name], value)


def step_bytes(model_path, context):
    """Bytes a decode step reads at `context` cached positions, from the model file's graph."""
    import onnx
    graph = onnx.load(model_path, load_external_data=False).graph
    sizes = {}
    for tensor in graph.initializer:
        count = int(np.prod(tensor.dims)) if tensor.dims else 1
        sizes[tensor.name] = count * np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    counted = {"int4 weights, scales, zero points": 0, "norm weights": 0, "embedding row": 0}
    for node in graph.node:
        if node.op_type == "MatMulNBits":
            counted["int4 weights, scales, zero points"] += sum(sizes.get(i, 0) for i in node.input[1:4])
        elif node.op_type == "Gather" and node.input[0] in sizes and sizes[node.input[0]] > 1 << 20:
            counted["embedding row"] += HIDDEN * 4
        elif "LayerNormalization" in node.op_type:
            counted["norm weights"] += sum(sizes.get(i, 0) for i in node.input[1:] if i in sizes)
    counted[f"K and V at context {context}"] = context * KV_BYTES_PER_POSITION
    return counted, sum(sizes.values())


def read_bandwidth(args, copies):
    """GB/s of onnxc_bench_int4gemv's plain read, `copies` processes at once, summed."""
    command = [args.int4gemv, "--shape", "2048x32000", "--runs", "9"]
    results = [None] * copies

    def one(i):
        results[i] = run(command)[0]

    workers = [threading.Thread(target=one, args=(i,)) for i in range(copies)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    total = 0.0
    for text in results:
        row = [line for line in text.splitlines() if line.startswith(" 2048x32000")][0]
        total += float(row.split("|")[1].split()[1])  # the read's median GB/s
    return total


def compile_library(args, folder):
    """The folder compiled by args.onnxc, again whenever the library is older than the model or
    than that onnxc (a library another onnxc compiled runs that onnxc's kernels)."""
    library = folder.rstrip("/") + ".so"
    model = os.path.join(folder, "model.onnx")
    newest = max(os.path.getmtime(model), os.path.getmtime(os.path.realpath(args.onnxc)))
    stamp = library + ".onnxc"
    built_by = open(stamp).read() if os.path.exists(stamp) else ""
    if not (os.path.exists(library) and os.path.getmtime(library) > newest
            and built_by == os.path.realpath(args.onnxc)):
        run([args.onnxc, "compile", folder, "-o", library])
        with open(stamp, "w") as f:
            f.write(os.path.realpath(args.onnxc))
    return library


def first_step_logits(args, folder, library, directory):
    ids = prompt_ids(16, seed=2)
    feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)}
    for layer in range(LAYERS):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{layer}.{kind}"] = np.zeros((1, KV_HEADS, 0, HEAD), np.float32)
    path = os.path.join(directory, "feeds.npz")
    np.savez(path, **feeds)
    ours, theirs = os.path.join(directory, "onnxc.npy"), os.path.join(directory, "ort.npy")
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
    run([sys.executable, "-c", ONNXC_LOGITS, library, path, ours], env=env)
    run([args.runtime_python, "-c", ORT_LOGITS, os.path.join(folder, "model.onnx"), path, theirs])
    a, b = np.load(ours), np.load(theirs)
    # The library keeps the last position's logits (compile's --logits=last, a folder's default):
    # compared with the peer's last positions.
    b = b[:, -a.shape[1]:]
    return float(np.abs(a - b).max()), float(np.abs(b).max()), bool((a.argmax(-1) == b.argmax(-1)).all())


def greedy(args, folder_or_library, prompt_file, ids, directory, peer_folder):
    theirs = json.loads(run([args.runtime_python, "-c", PEER, "greedy", peer_folder, "2", prompt_file,
                             str(args.greedy)])[0].strip().splitlines()[-1])["tokens"]
    try:
        ours = run([args.onnxc, "generate", folder_or_library, "--prompt-ids", ",".join(map(str, ids)),
                    "--max-new-tokens", str(args.greedy), "--eos-id", "2", "--threads=2"], check=False)[0]
    except RuntimeError as error:
        return f"onnxc failed: {error}", theirs, 0
    ours = [int(t) for t in ours.strip().splitlines()[-1].split(",")]
    parted = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), None)
    if parted is None and len(ours) != len(theirs):
        parted = min(len(ours), len(theirs))
    return ours, theirs, parted


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--onnxc")
    parser.add_argument("--int4gemv")
    parser.add_argument("--genai-python", help="the builder's venv python (default BUILD/genai-venv)")
    parser.add_argument("--runtime-python", help="onnxruntime-genai 0.18's venv (default: made by "
                        "setup_runtime_venv.sh)")
    parser.add_argument("--accuracy-level", type=int, default=0,
                        help="the int4 folder's MatMulNBits accuracy_level: 0 is what builder 0.5.2 "
                        "writes by default (f32 activations), 4 asks it for int8 activations")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--contexts", default="128,1024")
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3,
                        help="sweeps of the speed runs; each figure is each side's best round")
    parser.add_argument("--greedy", type=int, default=64)
    parser.add_argument("--skip-correctness", action="store_true")
    parser.add_argument("--skip-speed", action="store_true", help="only the correctness checks")
    parser.add_argument("--fp32", action="store_true", help="also the fp32 folder's greedy tokens "
                        "(onnxc's JIT of its 4.4 GB of weights peaks near 21.5 GB; see above)")
    args = parser.parse_args()
    args.build = os.path.abspath(args.build)
    args.onnxc = args.onnxc or os.path.join(args.build, "tools", "onnxc")
    args.int4gemv = args.int4gemv or os.path.join(args.build, "benchmarks", "onnxc_bench_int4gemv")
    if not args.genai_python:
        args.genai_python = run(["bash", os.path.join(REPO, "tests", "genai", "setup_genai_venv.sh"),
                                 args.build])[0].strip().splitlines()[-1]
    if not args.runtime_python:
        args.runtime_python = run(["bash", os.path.join(HERE, "setup_runtime_venv.sh"),
                                   args.build])[0].strip().splitlines()[-1]
    models = os.path.join(args.build, "bench-models")
    precisions = ["int4"] + (["fp32"] if args.fp32 and not args.skip_correctness else [])
    folders = json.loads(run([args.genai_python, os.path.join(HERE, "make_models.py"), models,
                              "--precision", *precisions, "--accuracy-level", str(args.accuracy_level)]
                             )[0].strip().splitlines()[-1])
    int4 = folders["int4"]
    library = compile_library(args, int4)
    threads = [int(t) for t in args.threads.split(",")]
    contexts = [int(c) for c in args.contexts.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        lengths = sorted(set(contexts + [args.prefill]))
        prompts = {n: prompt_ids(n) for n in lengths}
        files = {n: write_prompt(directory, prompts[n]) for n in lengths}
        results, reads = {}, {}
        if not args.skip_speed:
            for r in range(args.rounds):
                for t in threads:
                    reads[t] = max(reads.get(t, 0.0), read_bandwidth(args, t))
                    for n in lengths:
                        for side in ("onnxc", "peer"):
                            got = (onnxc_bench(args, library, prompts[n], t) if side == "onnxc"
                                   else peer_bench(args, int4, files[n], t))
                            keep_best(results, (side, t, n), got)
                        print(f"round {r + 1}, threads {t} prompt {n}: onnxc {results[('onnxc', t, n)]}, "
                              f"onnxruntime-genai {results[('peer', t, n)]} (best so far); "
                              f"read {reads[t]:.2f} GB/s", file=sys.stderr)
            for t in threads:
                for n in contexts:
                    rows.append((f"per token, context {n} (ms)", t, results[("onnxc", t, n)]["step_ms"],
                                 results[("peer", t, n)]["step_ms"]))
                rows.append((f"prefill {args.prefill} (ms)", t, results[("onnxc", t, args.prefill)]["prefill_ms"],
                             results[("peer", t, args.prefill)]["prefill_ms"]))
            model_file = os.path.join(int4, "model.onnx")
            print(f"\ndecode bandwidth: bytes per step / step time, against a plain read "
                  f"(best of {args.rounds} rounds each)", file=sys.stderr)
            for t in threads:
                for n in contexts:
                    counted, _ = step_bytes(model_file, n)
                    total = sum(counted.values())
                    parts = " + ".join(f"{v / 1e6:.1f} MB {k}" for k, v in counted.items())
                    for side in ("onnxc", "peer"):
                        ms = results[(side, t, n)]["step_ms"]
                        print(f"  {t} thread(s), context {n}, {side}: ({parts}) = {total / 1e6:.1f} MB / "
                              f"{ms:.1f} ms = {total / ms * 1e-6:.2f} GB/s = "
                              f"{100 * total / ms * 1e-6 / reads[t]:.0f}% of {reads[t]:.2f} GB/s read", file=sys.stderr)
                    rows.append((f"GB/s at context {n} (read {reads[t]:.1f})", t,
                                 total / results[("onnxc", t, n)]["step_ms"] * 1e-6,
                                 total / results[("peer", t, n)]["step_ms"] * 1e-6))
            longest = max(lengths)
            _, file_bytes = step_bytes(model_file, longest)
            budget = (file_bytes + (longest + args.tokens + 1) * KV_BYTES_PER_POSITION) / 2**20
            print(f"\nmemory budget: model file {file_bytes / 2**20:.0f} MiB + KV cache of "
                  f"{longest + args.tokens + 1} positions = {budget:.0f} MiB", file=sys.stderr)
            for t in threads:
                ours, theirs = results[("onnxc", t, longest)]["rss_mib"], results[("peer", t, longest)]["rss_mib"]
                rows.append((f"peak RSS MiB, prompt {longest} (x budget: {ours / budget:.2f} / {theirs / budget:.2f})",
                             t, ours, theirs))
        if not args.skip_correctness:
            ids = prompt_ids(16, seed=3)
            prompt_file = write_prompt(directory, ids)
        if not args.skip_correctness and args.fp32:
            ours, theirs, parted = greedy(args, folders["fp32"], prompt_file, ids, directory, folders["fp32"])
            print(f"\nfp32 folder, greedy {args.greedy}: onnxc {ours}\n  onnxruntime-genai {theirs}\n  "
                  f"{'equal' if parted is None else f'first difference at token {parted}'}", file=sys.stderr)
            rows.append((f"fp32 greedy {args.greedy}: " + ("equal" if parted is None else f"differ at {parted}"),
                         2, len(ours) if isinstance(ours, list) else 0, len(theirs)))
        if not args.skip_correctness:
            ours, theirs, parted = greedy(args, library, prompt_file, ids, directory, int4)
            print(f"int4 folder, greedy {args.greedy}: onnxc {ours}\n  onnxruntime-genai {theirs}\n  "
                  f"{'equal' if parted is None else f'first difference at token {parted}'}", file=sys.stderr)
            rows.append((f"int4 greedy {args.greedy}: " + ("equal" if parted is None else f"differ at {parted}"),
                         2, len(ours), len(theirs)))
            diff, scale, same = first_step_logits(args, int4, library, directory)
            print(f"int4 first step logits (16 tokens): max |onnxc - onnxruntime 1.32| = {diff:.3g} "
                  f"(largest |logit| {scale:.3g}); argmax equal at every position: {same}", file=sys.stderr)
            rows.append((f"int4 logits max diff (of max {scale:.2f}); argmax equal {same}", 2, diff, 0.0))
    print(f"\n{'figure':62s} {'thr':>3s} {'onnxc':>10s} {'og 0.18':>10s} {'ratio':>6s}")
    for name, t, ours, theirs in rows:
        ratio = f"{ours / theirs:6.2f}" if theirs else "     -"
        print(f"{name:62s} {t:3d} {ours:10.4g} {theirs:10.4g} {ratio}")


if __name__ == "__main__":
    main()

"""End-to-end benchmark: onnxc vs onnxruntime (and OpenVINO) on the same models, inputs and machine, in one run.

    bash benchmarks/e2e/setup_peers.sh          # newest onnxruntime and OpenVINO in build/peers-venv
    .venv/bin/python benchmarks/e2e/run.py [--peer-python build/peers-venv/bin/python --openvino]
                                          [--precision f32|bf16|auto] [--openvino-precision f32|default]
                                          [--onnxc build/tools/onnxc] [--models minilm,bert_op17]
                                          [--seqs 128,512] [--threads 1,2] [--iters 30] [--rounds 1]

Models: `minilm` is a MiniLM-sized BERT encoder (6 layers, hidden 384, 12 heads, FFN 1536,
vocab 30522, exported with torch.onnx at opset 17, random weights) and `minilm_int8` the same
quantized by onnxruntime's quantize_dynamic (int8 weights, activations quantized at run time),
`minilm_qdq` by its quantize_static (QDQ format, int8 activations and weights, calibrated on
four random batches); `minilm_f16` the same in f16 by its float16 converter;
`gpt2_small` is HF
transformers' own GPT2LMHeadModel at GPT-2 small's size (12 layers, hidden 768, 12 heads, vocab
50257; random weights, opset 17, exported as the library writes it); `bart_base` is HF's
BartModel at bart-base's size (6+6 layers, hidden 768, 12 heads, FFN 3072, vocab 50265), run at
source 128 / target 32 whatever --seqs says; `vit_base` is HF's ViTModel at ViT-base/16's size
on one 224x224 image and `whisper_tiny` Whisper-tiny's encoder (4 layers, 384, 80 mel bins) on
30 s of audio (3000 frames), both random weights at fixed sizes; the other names are the
transformer test models of tests/models (built into build/models by build_models.py).

For every model, sequence length and thread count it prints onnxc's and ORT's latency (min and
median of --iters runs after warm-up), their ratio (onnxc / ORT: below 1 means onnxc is faster),
each side's peak resident memory, onnxc's compile time and .so load time next to ORT's session
creation time, and the largest difference between the two outputs. Each side runs in a process of
its own, one after the other, on identical .npy inputs. With --rounds N the sides take turns N
times (ORT, onnxc, OpenVINO, ORT, ...), the table gives each side's least minimum and median of
medians, and the notes each round's ratio. Timings are not asserted anywhere: the machine is
shared and noisy; read the ratio.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

from model_inputs import make_inputs  # noqa: E402

MINILM = {"name": "minilm", "layers": 6, "hidden": 384, "heads": 12, "ffn": 1536, "vocab": 30522,
          "max_positions": 512}


def build_minilm(directory: str) -> dict:
    """Exports the MiniLM-sized encoder once; returns a manifest-like entry."""
    path = os.path.join(directory, "minilm_op17.onnx")
    entry = {"name": "minilm", "file": path,
             "inputs": [{"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"],
                         "generator": {"kind": "token_ids", "low": 0, "high": MINILM["vocab"]}},
                        {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "seq"],
                         "generator": {"kind": "attention_mask"}}],
             "max_seq": MINILM["max_positions"]}
    if os.path.exists(path):
        return entry
    import torch
    import transformers_zoo as zoo
    torch.manual_seed(0)
    cfg = zoo.BertConfig(vocab_size=MINILM["vocab"], hidden=MINILM["hidden"], heads=MINILM["heads"],
                         ffn=MINILM["ffn"], layers=MINILM["layers"], max_positions=MINILM["max_positions"])
    model = zoo.BertEncoder(cfg)
    ids = torch.randint(0, cfg.vocab_size, (2, 5))
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "last_hidden_state": {0: "batch", 1: "seq"}}
    zoo.export_onnx(model, (ids, mask), path, ["input_ids", "attention_mask"], ["last_hidden_state"], axes, 17)
    return entry


def build_minilm_int8(directory: str) -> dict:
    """The MiniLM encoder quantized by onnxruntime's own quantize_dynamic (s8 weights per tensor,
    u8 activations quantized at run time: DynamicQuantizeLinear + MatMulInteger), as a user who
    quantizes for CPU writes it. Both sides run this same file."""
    entry = dict(build_minilm(directory), name="minilm_int8")
    path = os.path.join(directory, "minilm_int8_op17.onnx")
    if not os.path.exists(path):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(entry["file"], path, weight_type=QuantType.QInt8)
    entry["file"] = path
    return entry


def build_minilm_f16(directory: str) -> dict:
    """The MiniLM encoder in half precision as onnxruntime's float16 converter writes it (weights
    and activations f16, its hidden-state output f16 too). Both sides run this same file; onnxc
    computes it in f32 between its inputs, outputs and own roundings (widen-half-precision)."""
    entry = dict(build_minilm(directory), name="minilm_f16")
    path = os.path.join(directory, "minilm_f16_op17.onnx")
    if not os.path.exists(path):
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16
        onnx.save(convert_float_to_float16(onnx.load(entry["file"]), keep_io_types=False), path)
    entry["file"] = path
    return entry


def build_minilm_qdq(directory: str) -> dict:
    """The MiniLM encoder quantized by onnxruntime's quantize_static in the QDQ format (int8
    activations and weights per tensor, calibrated on four random batches of 128 tokens)."""
    entry = dict(build_minilm(directory), name="minilm_qdq")
    path = os.path.join(directory, "minilm_qdq_op17.onnx")
    if not os.path.exists(path):
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                              quantize_static)

        class Batches(CalibrationDataReader):
            def __init__(self):
                self.batches = iter([make_inputs(entry, {"batch": 1, "seq": 128}, seed=s)
                                     for s in range(4)])

            def get_next(self):
                return next(self.batches, None)

        quantize_static(entry["file"], path, Batches(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    entry["file"] = path
    return entry


def build_gpt2_small(directory: str) -> dict:
    """HF GPT2LMHeadModel with GPT-2 small's config and random weights, exported once."""
    path = os.path.join(directory, "gpt2_small_op17.onnx")
    entry = {"name": "gpt2_small", "file": path,
             "inputs": [{"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"],
                         "generator": {"kind": "token_ids", "low": 0, "high": 50257}}],
             "max_seq": 1024}
    if os.path.exists(path):
        return entry
    import torch
    import transformers
    import library_models
    import transformers_zoo as zoo
    torch.manual_seed(0)
    model = library_models.FirstOutput(
        transformers.GPT2LMHeadModel(transformers.GPT2Config(use_cache=False)), ["input_ids"])
    axes = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    zoo.export_onnx(model, (torch.randint(0, 50257, (2, 5)),), path, ["input_ids"], ["logits"], axes, 17)
    return entry


def build_bart_base(directory: str) -> dict:
    """HF BartModel with bart-base's config and random weights, exported once; fixed lengths."""
    path = os.path.join(directory, "bart_base_op17.onnx")
    ids = {"kind": "token_ids", "low": 3, "high": 50265}
    entry = {"name": "bart_base", "file": path,
             "inputs": [{"name": "input_ids", "dtype": "int64", "shape": ["batch", "src_seq"], "generator": ids},
                        {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "src_seq"],
                         "generator": {"kind": "attention_mask"}},
                        {"name": "decoder_input_ids", "dtype": "int64", "shape": ["batch", "tgt_seq"],
                         "generator": ids}],
             "dims": {"src_seq": 128, "tgt_seq": 32}}
    if os.path.exists(path):
        return entry
    import torch
    import transformers
    import library_models
    import transformers_zoo as zoo
    torch.manual_seed(0)
    # BartConfig's defaults are bart-large's; these are bart-base's.
    config = transformers.BartConfig(d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                                     decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072,
                                     use_cache=False)
    model = library_models.FirstOutput(transformers.BartModel(config),
                                       ["input_ids", "attention_mask", "decoder_input_ids"])
    example = (torch.randint(3, 50265, (2, 6)), torch.ones(2, 6, dtype=torch.int64), torch.randint(3, 50265, (2, 5)))
    axes = {"input_ids": {0: "batch", 1: "src_seq"}, "attention_mask": {0: "batch", 1: "src_seq"},
            "decoder_input_ids": {0: "batch", 1: "tgt_seq"}, "last_hidden_state": {0: "batch", 1: "tgt_seq"}}
    zoo.export_onnx(model, example, path, ["input_ids", "attention_mask", "decoder_input_ids"],
                    ["last_hidden_state"], axes, 17)
    return entry


def build_vit_base(directory: str) -> dict:
    """HF ViTModel at ViT-base/16's size (12 layers, 768, 224x224 images), random weights."""
    path = os.path.join(directory, "vit_base_op17.onnx")
    entry = {"name": "vit_base", "file": path,
             "inputs": [{"name": "pixel_values", "dtype": "float32", "shape": ["batch", 3, 224, 224],
                         "generator": {"kind": "normal"}}],
             "dims": {"image": 224}}
    if os.path.exists(path):
        return entry
    import torch
    import transformers
    import library_models
    import transformers_zoo as zoo
    torch.manual_seed(0)
    model = library_models.FirstOutput(transformers.ViTModel(transformers.ViTConfig()), ["pixel_values"])
    zoo.export_onnx(model, (torch.randn(2, 3, 224, 224),), path, ["pixel_values"], ["last_hidden_state"],
                    {"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"}}, 17)
    return entry


def build_whisper_tiny_encoder(directory: str) -> dict:
    """HF Whisper-tiny's encoder (4 layers, 384, 80 mel bins) on 30 s of audio (3000 frames)."""
    path = os.path.join(directory, "whisper_tiny_encoder_op17.onnx")
    entry = {"name": "whisper_tiny", "file": path,
             "inputs": [{"name": "input_features", "dtype": "float32", "shape": ["batch", 80, 3000],
                         "generator": {"kind": "normal"}}],
             "dims": {"frames": 3000}}
    if os.path.exists(path):
        return entry
    import torch
    import transformers
    import library_models
    import transformers_zoo as zoo
    torch.manual_seed(0)
    config = transformers.WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6,
                                        encoder_ffn_dim=1536, decoder_layers=4, decoder_attention_heads=6,
                                        decoder_ffn_dim=1536, num_mel_bins=80, max_source_positions=1500)
    model = library_models.FirstOutput(transformers.WhisperModel(config).get_encoder(), ["input_features"])
    zoo.export_onnx(model, (torch.randn(1, 80, 3000),), path, ["input_features"], ["last_hidden_state"],
                    {"input_features": {0: "batch"}, "last_hidden_state": {0: "batch"}}, 17)
    return entry


def test_model_entries(model_dir: str) -> dict:
    manifest = os.path.join(model_dir, "manifest.json")
    if not os.path.exists(manifest):
        subprocess.run([sys.executable, os.path.join(REPO, "tests", "models", "build_models.py"), model_dir,
                        "--quiet"], check=True)
    with open(manifest) as f:
        entries = json.load(f)["models"]
    for entry in entries:
        entry["file"] = os.path.join(model_dir, entry["file"])
    return {entry["name"]: entry for entry in entries}


def run(command: list) -> str:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr.strip()[-2000:]}")
    return result.stdout


def combine_rounds(results: list):
    """One side's results over --rounds: the least minimum and the median of the medians (the other
    fields from the first round); None when the side did not run."""
    if results[0] is None:
        return None
    combined = dict(results[0])
    combined["min_ms"] = min(r["min_ms"] for r in results)
    medians = sorted(r["median_ms"] for r in results)
    combined["median_ms"] = medians[len(medians) // 2]
    combined["peak_mib"] = max(r["peak_mib"] for r in results)
    return combined


def onnxc_bench(onnxc: str, library: str, inputs: list, threads: int, iters: int) -> dict:
    out = run([onnxc, "bench", library, "--threads", str(threads), "--iters", str(iters)] + inputs)
    first = re.search(r"load ([\d.]+) ms, session ([\d.]+) ms, first run ([\d.]+) ms", out)
    latency = re.search(r"min ([\d.]+) ms\s+median ([\d.]+) ms", out)
    memory = re.search(r"peak resident memory ([\d.]+) MiB", out)
    if not (first and latency and memory):
        raise RuntimeError(f"unexpected onnxc bench output:\n{out}")
    return {"load_ms": float(first.group(1)), "session_ms": float(first.group(2)),
            "min_ms": float(latency.group(1)), "median_ms": float(latency.group(2)),
            "peak_mib": float(memory.group(1))}


def ort_bench(model: str, inputs: list, threads: int, iters: int, outputs: str,
              python: str = sys.executable) -> dict:
    out = run([python, os.path.join(HERE, "ort_runner.py"), model, "--threads", str(threads),
               "--iters", str(iters), "--save-outputs", outputs] + inputs)
    return runner_result(out)


def openvino_bench(model: str, inputs: list, threads: int, iters: int, python: str,
                   precision: str) -> dict:
    out = run([python, os.path.join(HERE, "ov_runner.py"), model, "--threads", str(threads),
               "--iters", str(iters), "--precision", precision] + inputs)
    return runner_result(out)


def runner_result(out: str) -> dict:
    data = json.loads(out.strip().splitlines()[-1])
    times = sorted(data["times_ms"])
    return {"session_ms": data["session_ms"], "min_ms": times[0], "median_ms": times[len(times) // 2],
            "peak_mib": data["peak_mib"]}


def max_difference(onnxc: str, library: str, inputs: list, ort_outputs: str, workdir: str) -> float:
    out_dir = os.path.join(workdir, "onnxc_out")
    run([onnxc, "run", library, "--output-dir", out_dir] + inputs)
    reference = np.load(ort_outputs)
    worst = 0.0
    for name in reference.files:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        got = np.load(os.path.join(out_dir, safe + ".npy"))
        worst = max(worst, float(np.abs(got.astype(np.float64) - reference[name]).max()))
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--models", default="minilm")
    parser.add_argument("--seqs", default="128,512")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1,
                        help="time each side this many times, alternating ORT, onnxc and OpenVINO, and report "
                             "the least minimum and the median of the medians: on a machine whose speed "
                             "drifts, every side then gets runs in the same phases")
    parser.add_argument("--workdir", default=os.path.join(REPO, "build", "bench-e2e"))
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the Python whose onnxruntime (and OpenVINO) are timed; "
                             "benchmarks/e2e/setup_peers.sh makes build/peers-venv with the newest of both")
    parser.add_argument("--openvino", action="store_true", help="also time OpenVINO (needs it in --peer-python)")
    parser.add_argument("--precision", default="f32",
                        help="onnxc's --precision: f32 (the default), bf16 or auto (docs/KERNEL_ACCURACY.md)")
    parser.add_argument("--openvino-precision", default="f32",
                        help="OpenVINO's inference precision: f32 (as onnxc computes), or 'default' (bf16 on "
                             "CPUs that have it)")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    entries = {}
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    builders = {"minilm": build_minilm, "minilm_int8": build_minilm_int8, "minilm_qdq": build_minilm_qdq,
                "minilm_f16": build_minilm_f16,
                "gpt2_small": build_gpt2_small,
                "bart_base": build_bart_base, "vit_base": build_vit_base,
                "whisper_tiny": build_whisper_tiny_encoder}
    for n in names:
        if n in builders:
            entries[n] = builders[n](args.workdir)
    if any(n not in builders for n in names):
        zoo = test_model_entries(os.path.join(REPO, "build", "models"))
        for n in names:
            if n not in builders:
                entries[n] = zoo[n]

    versions = run([args.peer_python, "-c", "import onnxruntime; print(onnxruntime.__version__)"]).strip()
    if args.openvino:
        versions += ", OpenVINO " + run([args.peer_python, "-c",
                                         "import openvino; print(openvino.__version__.split('-')[0])"]).strip()
        versions += f" (inference precision {args.openvino_precision})"
    print(f"peers: onnxruntime {versions}; onnxc at precision {args.precision}")
    print(f"{'model':<12} {'seq':>7} {'thr':>3} | {'onnxc min':>9} {'median':>8} | {'ORT min':>8} {'median':>8} |"
          f" {'ratio':>5} | {'onnxc MiB':>9} {'ORT MiB':>8} | max |diff|"
          + (f" | {'OV min':>8} {'median':>8} | {'ratio':>5} | {'OV MiB':>7}" if args.openvino else ""))
    notes = []
    for name in names:
        entry = entries[name]
        library = os.path.join(args.workdir, f"{name}.so")
        start = time.perf_counter()
        run([args.onnxc, "compile", entry["file"], "-o", library, "--precision", args.precision])
        compile_s = time.perf_counter() - start
        fixed = entry.get("dims")
        for seq in [0] if fixed else [int(s) for s in args.seqs.split(",")]:
            limit = entry.get("max_seq")
            if limit and seq > limit:
                notes.append(f"{name}: seq {seq} skipped (model positions {limit})")
                continue
            dims = {"batch": 1, **fixed} if fixed else {"batch": 1, "seq": seq}
            label = "/".join(str(v) for v in fixed.values()) if fixed else str(seq)
            feeds = make_inputs(entry, dims, seed=0)
            with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
                inputs = []
                for input_name, value in feeds.items():
                    path = os.path.join(workdir, f"{input_name}.npy")
                    np.save(path, value)
                    inputs += ["--input", f"{input_name}={path}"]
                for threads in [int(t) for t in args.threads.split(",")]:
                    ort_outputs = os.path.join(workdir, "ort.npz")
                    try:
                        rounds = []
                        for _ in range(args.rounds):
                            rounds.append((
                                ort_bench(entry["file"], inputs, threads, args.iters, ort_outputs,
                                          args.peer_python),
                                onnxc_bench(args.onnxc, library, inputs, threads, args.iters),
                                openvino_bench(entry["file"], inputs, threads, args.iters, args.peer_python,
                                               args.openvino_precision) if args.openvino else None))
                        theirs, ours, vino = (combine_rounds([r[i] for r in rounds]) for i in range(3))
                        diff = max_difference(args.onnxc, library, inputs, ort_outputs, workdir)
                    except RuntimeError as error:
                        notes.append(f"{name} seq {label} threads {threads}: {str(error).splitlines()[-1]}")
                        continue
                    ratio = ours["min_ms"] / theirs["min_ms"]
                    print(f"{name:<12} {label:>7} {threads:>3} | {ours['min_ms']:>9.2f} {ours['median_ms']:>8.2f} |"
                          f" {theirs['min_ms']:>8.2f} {theirs['median_ms']:>8.2f} | {ratio:>5.2f} |"
                          f" {ours['peak_mib']:>9.1f} {theirs['peak_mib']:>8.1f} | {diff:.2e}"
                          + (f" | {vino['min_ms']:>8.2f} {vino['median_ms']:>8.2f} |"
                             f" {ours['min_ms'] / vino['min_ms']:>5.2f} | {vino['peak_mib']:>7.1f}" if vino else ""),
                          flush=True)
                    if args.rounds > 1:
                        notes.append(f"{name} seq {label} threads {threads}: ratio of each round's minima "
                                     + " ".join(f"{o['min_ms'] / t['min_ms']:.2f}" for t, o, _ in rounds))
                    notes.append(f"{name} seq {label} threads {threads}: onnxc .so load {ours['load_ms']:.1f} ms"
                                 f" + session {ours['session_ms']:.2f} ms; ORT session creation"
                                 f" {theirs['session_ms']:.1f} ms")
        notes.append(f"{name}: onnxc compile {compile_s:.2f} s")
    print("\n" + "\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

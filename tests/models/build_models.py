#!/usr/bin/env python3
"""Builds the transformer test models (random weights, fixed seeds) into OUTDIR.

    .venv/bin/python tests/models/build_models.py OUTDIR [--force] [--only NAME ...]
    .venv/bin/python tests/models/build_models.py --list-names

Writes OUTDIR/<name>.onnx for every model and OUTDIR/manifest.json describing each one:
file, opset, inputs (dtype, shape with symbolic dynamic dimensions, how to generate valid
values), outputs, the shapes the tests run, what the differential check varies where the
symbolic dims do not say it (model_inputs.differential_shapes), and the op histogram. Position
and mask tables are long enough for the differential check's lengths. A model whose file is newer
than these scripts is not rebuilt. Nothing is downloaded; nothing is written to the source tree.

Torch models are exported with the TorchScript exporter at opsets 14 and 17 (14 decomposes
LayerNorm, 17 emits LayerNormalization); two more models are written with onnx.helper.
"""

import argparse
import collections
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import onnx  # noqa: E402

import handbuilt_models  # noqa: E402
import library_models  # noqa: E402
import mask_models  # noqa: E402
from model_sources import SOURCES  # noqa: E402,F401  (a model is stale when any is newer than it)

TORCH_OPSETS = (14, 17)

SEQ_SHAPES = [{"batch": 1, "seq": 7}, {"batch": 2, "seq": 16}]


def ids_input(name, vocab, seq_dim="seq", low=0, pad_id=None):
    gen = {"kind": "token_ids", "low": low, "high": vocab}
    if pad_id is not None:
        gen["pad_id"] = pad_id
    return {"name": name, "dtype": "int64", "shape": ["batch", seq_dim], "generator": gen}


def float_input(name, shape):
    return {"name": name, "dtype": "float32", "shape": shape, "generator": {"kind": "normal"}}


# ---- torch model families -------------------------------------------------------------------
# Each returns (module, example inputs for tracing, input descriptions,
# {output name: {axis: dimension name}}, test shapes).
# Example sizes avoid 1 and coincidences between dimensions so the tracer cannot confuse them.

def torch_bert():
    import torch
    import transformers_zoo as zoo
    cfg = zoo.BertConfig()
    model = zoo.BertEncoder(cfg)
    ids = torch.randint(0, cfg.vocab_size, (2, 5))
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    inputs = [ids_input("input_ids", cfg.vocab_size),
              {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "seq"],
               "generator": {"kind": "attention_mask"}}]
    return model, (ids, mask), inputs, {"last_hidden_state": {0: "batch", 1: "seq"}}, SEQ_SHAPES


def decoder_family(model, vocab_size):
    """A decoder-only family: input_ids [batch, seq] -> logits [batch, seq, vocab]."""
    import torch
    return (model, (torch.randint(0, vocab_size, (2, 5)),), [ids_input("input_ids", vocab_size)],
            {"logits": {0: "batch", 1: "seq"}}, SEQ_SHAPES)


def torch_gpt():
    import transformers_zoo as zoo
    cfg = zoo.GptConfig()
    return decoder_family(zoo.GptDecoder(cfg), cfg.vocab_size)


def torch_encdec():
    import torch
    import transformers_zoo as zoo
    cfg = zoo.EncDecConfig()
    model = zoo.EncoderDecoder(cfg)
    src = torch.randint(1, cfg.src_vocab_size, (2, 6))
    tgt = torch.randint(0, cfg.tgt_vocab_size, (2, 5))
    inputs = [ids_input("src_ids", cfg.src_vocab_size, "src_seq", low=1, pad_id=cfg.pad_id),
              ids_input("tgt_ids", cfg.tgt_vocab_size, "tgt_seq")]
    shapes = [{"batch": 1, "src_seq": 7, "tgt_seq": 5}, {"batch": 2, "src_seq": 16, "tgt_seq": 11}]
    return model, (src, tgt), inputs, {"logits": {0: "batch", 1: "tgt_seq"}}, shapes


def torch_vit():
    import torch
    import transformers_zoo as zoo
    cfg = zoo.VitConfig()
    model = zoo.VisionTransformer(cfg)
    pixels = torch.randn(2, cfg.channels, cfg.image_size, cfg.image_size)
    inputs = [float_input("pixel_values", ["batch", cfg.channels, cfg.image_size, cfg.image_size])]
    return model, (pixels,), inputs, {"logits": {0: "batch"}}, [{"batch": 1}, {"batch": 3}]


def torch_llama():
    import transformers_zoo as zoo
    cfg = zoo.LlamaConfig()
    return decoder_family(zoo.LlamaDecoder(cfg), cfg.vocab_size)


def torch_alibi():
    import transformers_zoo as zoo
    cfg = zoo.GptConfig(layers=2)
    return decoder_family(zoo.AlibiDecoder(cfg), cfg.vocab_size)


def torch_lstm_attn():
    import torch
    import transformers_zoo as zoo
    cfg = zoo.LstmAttnConfig()
    model = zoo.LstmAttentionSeq2Seq(cfg)
    src = torch.randint(0, cfg.src_vocab_size, (2, 6))
    tgt = torch.randint(0, cfg.tgt_vocab_size, (2, 5))
    inputs = [ids_input("src_ids", cfg.src_vocab_size, "src_seq"),
              ids_input("tgt_ids", cfg.tgt_vocab_size, "tgt_seq")]
    shapes = [{"batch": 1, "src_seq": 7, "tgt_seq": 5}, {"batch": 2, "src_seq": 16, "tgt_seq": 11}]
    return model, (src, tgt), inputs, {"logits": {0: "batch", 1: "tgt_seq"}}, shapes


def torch_gru_bahdanau():
    import torch
    import transformers_zoo as zoo
    cfg = zoo.GruBahdanauConfig()
    model = zoo.GruBahdanauSeq2Seq(cfg)
    src = torch.randint(1, cfg.src_vocab_size, (2, 6))
    src[1, -2:] = cfg.pad_id
    tgt = torch.randint(0, cfg.tgt_vocab_size, (2, 5))
    inputs = [ids_input("src_ids", cfg.src_vocab_size, "src_seq", low=1, pad_id=cfg.pad_id),
              ids_input("tgt_ids", cfg.tgt_vocab_size, "tgt_seq")]
    shapes = [{"batch": 1, "src_seq": 7, "tgt_seq": 5}, {"batch": 2, "src_seq": 16, "tgt_seq": 11}]
    return model, (src, tgt), inputs, {"logits": {0: "batch", 1: "tgt_seq"}}, shapes


def torch_luong_attn():
    import torch
    import transformers_zoo as zoo
    cfg = zoo.LuongConfig()
    model = zoo.LuongAttentionSeq2Seq(cfg)
    src = torch.randint(1, cfg.src_vocab_size, (2, 6))
    src[1, -2:] = cfg.pad_id
    tgt = torch.randint(0, cfg.tgt_vocab_size, (2, 5))
    inputs = [ids_input("src_ids", cfg.src_vocab_size, "src_seq", low=1, pad_id=cfg.pad_id),
              ids_input("tgt_ids", cfg.tgt_vocab_size, "tgt_seq")]
    shapes = [{"batch": 1, "src_seq": 7, "tgt_seq": 5}, {"batch": 2, "src_seq": 16, "tgt_seq": 11}]
    return model, (src, tgt), inputs, {"logits": {0: "batch", 1: "tgt_seq"}}, shapes


TORCH_FAMILIES = {
    # name: (builder, seed, one-line description)
    "bert": (torch_bert, 1001, "BERT encoder, 6 post-LN layers, learned positions, GELU erf, padding mask"),
    "gpt": (torch_gpt, 1002, "GPT decoder, 4 pre-LN layers, causal tril buffer, GELU tanh, tied LM head"),
    "encdec": (torch_encdec, 1003, "Transformer encoder-decoder 2+2, sinusoidal positions, causal + cross attention"),
    "vit": (torch_vit, 1004, "ViT, conv patches 8x8 on 32x32, class token, 4 pre-LN layers"),
    "llama": (torch_llama, 1006, "LLaMA-style decoder, 2 layers, RMSNorm, rotary, GQA 4/2 heads, SwiGLU"),
    "lstm_attn": (torch_lstm_attn, 1005, "BiLSTM encoder, LSTM+GRU decoder, additive (Bahdanau) attention"),
    "alibi": (torch_alibi, 1007, "ALiBi decoder, 2 pre-LN layers, scores - slope * distance, causal"),
    "gru_bahdanau": (torch_gru_bahdanau, 1011,
                     "BiGRU encoder, GRU decoder, Bahdanau attention (bias in tanh, scored by Linear(A, 1), padding hidden)"),
    "luong_attn": (torch_luong_attn, 1012, "GRU encoder-decoder, Luong dot (padding hidden) and general attention"),
}
# The libraries' own models: HF transformers and torch.nn (library_models.py).
TORCH_FAMILIES.update(library_models.FAMILIES)

# What the differential check (model_inputs.differential_shapes) varies where the symbolic input
# dims alone would not say why; keyed by family. Every other model drives its sequence dims.
DIFFERENTIAL = {
    "vit": {"batches": [1, 2, 7, 33],
            "reason": "the image is fixed at 32x32: the learned position table has one row per 8x8 patch "
                      "plus the class token (17 tokens), so no other image size or token count can run"},
}
DIFFERENTIAL.update(library_models.DIFFERENTIAL)

HANDBUILT = {
    "attention_op23": (handbuilt_models.make_attention_op23, 23,
                       "opset-23 Attention (MHA + causal GQA), RMSNormalization, RotaryEmbedding",
                       [float_input("x", ["batch", "seq", 64])], SEQ_SHAPES),
    # The op's own KV-cache form: past_key/past_value in, present_key/present_value out. The
    # shapes: the prompt (past 0), decode steps after 1 and 7 tokens, and a cache of 130 with one
    # and with three new tokens (the causal diagonal offset by the past).
    "attention_op23_past": (handbuilt_models.make_attention_op23_past, 23,
                            "opset-23 Attention with past_key/past_value -> present_key/present_value, causal, "
                            "MHA 4-D with rotary + GQA 3-D",
                            [ids_input("input_ids", handbuilt_models.OP23_PAST_VOCAB)]
                            + [float_input(f"past_{kind}_{layer}", ["batch", kv_heads, "past",
                                                                     handbuilt_models.OP23_PAST_HEAD_DIM])
                               for layer, kv_heads in enumerate(handbuilt_models.OP23_PAST_KV_HEADS)
                               for kind in ("key", "value")],
                            [{"batch": 1, "seq": 7, "past": 0}, {"batch": 1, "seq": 1, "past": 1},
                             {"batch": 2, "seq": 1, "past": 7}, {"batch": 1, "seq": 1, "past": 130},
                             {"batch": 1, "seq": 3, "past": 130}]),
    "windowed_attn": (handbuilt_models.make_windowed_attn, 17,
                      "band-masked (r=2) self-attention, decomposed LayerNorm with Cast",
                      [float_input("x", ["batch", "seq", 64])], SEQ_SHAPES),
}
# Shape-only masks the fusion must prove or keep as operands (tests/models/mask_models.py).
HANDBUILT.update(mask_models.MODELS)


# ---- building ---------------------------------------------------------------------------------

def op_histogram(model: onnx.ModelProto) -> dict:
    counts = collections.Counter(node.op_type for node in model.graph.node)
    return dict(sorted(counts.items()))


def check_dynamic_dims(model: onnx.ModelProto, inputs: list, path: str) -> None:
    """Fails if the exporter pinned a dimension the manifest says is dynamic."""
    declared = {value.name: value for value in model.graph.input}
    for spec in inputs:
        value = declared.get(spec["name"])
        if value is None:
            raise RuntimeError(f"{path}: graph has no input '{spec['name']}'")
        dims = value.type.tensor_type.shape.dim
        for axis, want in enumerate(spec["shape"]):
            have = dims[axis]
            if isinstance(want, str) and not have.dim_param:
                raise RuntimeError(f"{path}: input '{spec['name']}' axis {axis} should be dynamic "
                                   f"('{want}') but is {have.dim_value}")


def check_against_torch(module, path: str, name: str, inputs: list, test_shapes: list) -> None:
    """Fails if onnxruntime on the exported file disagrees with torch at any test shape: catches
    an export that baked in the tracing shape or mistranslated an op."""
    import numpy as np
    import torch
    from model_inputs import make_inputs
    from ort_reference import run_ort

    for dims in test_shapes:
        feeds = make_inputs({"name": name, "inputs": inputs}, dims)
        with torch.no_grad():
            expected = module(*(torch.from_numpy(feeds[spec["name"]]) for spec in inputs))
        # A model with several outputs (a KV-cache decoder's logits and presents) returns a tuple.
        expected = [t.numpy() for t in expected] if isinstance(expected, tuple) else [expected.numpy()]
        results = list(run_ort(path, feeds).values())
        if len(results) != len(expected):
            raise RuntimeError(f"{path}: onnxruntime gives {len(results)} outputs, torch {len(expected)}")
        for index, (got, want) in enumerate(zip(results, expected)):
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
                error = np.abs(got - want).max() if got.shape == want.shape and got.size else float("nan")
                raise RuntimeError(f"{path}: onnxruntime disagrees with torch at {dims} (output {index}): shape "
                                   f"{got.shape} vs {want.shape}, max abs error {error:.3g}")


def largest_differential_shape(family: str, inputs: list, test_shapes: list) -> dict:
    """The differential check's largest shape: checked against torch at build time, so that the
    tables are known long enough and the export right far beyond the tracing shape."""
    from model_inputs import differential_shapes
    entry = {"name": family, "inputs": inputs, "test_shapes": test_shapes,
             "differential": DIFFERENTIAL.get(family, {})}
    shapes = [dims for dims, _ in differential_shapes(entry)[0]]
    return max(shapes, key=lambda dims: (math.prod(dims.values()), sum(dims.values())))


def dynamic_axes_of(inputs: list, outputs: dict) -> dict:
    axes = {spec["name"]: {axis: dim for axis, dim in enumerate(spec["shape"]) if isinstance(dim, str)}
            for spec in inputs}
    axes.update(outputs)
    return axes


def is_fresh(path: str) -> bool:
    if not os.path.exists(path):
        return False
    newest_source = max(os.path.getmtime(source) for source in SOURCES)
    return os.path.getmtime(path) > newest_source


def entry_for(name, path, family, opset, description, inputs, test_shapes, model):
    outputs = []
    for value in model.graph.output:
        dims = [d.dim_param if d.dim_param else d.dim_value for d in value.type.tensor_type.shape.dim]
        outputs.append({"name": value.name,
                        "dtype": onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name,
                        "shape": dims})
    entry = {"name": name, "file": os.path.basename(path), "family": family, "opset": opset,
             "description": description, "inputs": inputs, "outputs": outputs,
             "test_shapes": test_shapes, "tolerance": {"rtol": 1e-4, "atol": 1e-5},
             "ops": op_histogram(model)}
    if family in DIFFERENTIAL:
        entry["differential"] = DIFFERENTIAL[family]
    return entry


def family_opsets(family: str) -> tuple:
    return library_models.ONLY_OPSETS.get(family, TORCH_OPSETS)


def build(outdir: str, force: bool, only: set, log) -> list:
    os.makedirs(outdir, exist_ok=True)
    entries = []

    for family, (builder, seed, description) in TORCH_FAMILIES.items():
        opsets = family_opsets(family)
        names = {opset: f"{family}_op{opset}" for opset in opsets}
        paths = {opset: os.path.join(outdir, names[opset] + ".onnx") for opset in opsets}
        wanted = [opset for opset in opsets if not only or names[opset] in only or family in only]
        stale = [opset for opset in wanted if force or not is_fresh(paths[opset])]
        if not wanted:
            continue
        import torch
        import transformers_zoo as zoo
        # One seed for the module, the norm perturbation and the example inputs: both opsets
        # of a family carry identical weights.
        torch.manual_seed(seed)
        module, example, inputs, outputs, test_shapes = builder()
        zoo.randomize_norms(module, torch.Generator().manual_seed(seed))
        module.eval()
        for opset in stale:
            start = time.time()
            zoo.export_onnx(module, example, paths[opset], [s["name"] for s in inputs], list(outputs),
                            dynamic_axes_of(inputs, outputs), opset)
            model = onnx.load(paths[opset])
            onnx.checker.check_model(model, full_check=True)
            check_dynamic_dims(model, inputs, paths[opset])
            check_against_torch(module, paths[opset], names[opset], inputs,
                                test_shapes + [largest_differential_shape(family, inputs, test_shapes)])
            log(f"built {names[opset]} in {time.time() - start:.1f}s")
        for opset in wanted:
            model = onnx.load(paths[opset])
            entries.append(entry_for(names[opset], paths[opset], family, opset, description,
                                     inputs, test_shapes, model))

    for name, (maker, opset, description, inputs, test_shapes) in HANDBUILT.items():
        if only and name not in only:
            continue
        path = os.path.join(outdir, name + ".onnx")
        if force or not is_fresh(path):
            start = time.time()
            onnx.save(maker(), path)
            log(f"built {name} in {time.time() - start:.1f}s")
        model = onnx.load(path)
        check_dynamic_dims(model, inputs, path)
        entries.append(entry_for(name, path, name, opset, description, inputs, test_shapes, model))
    return entries


def model_names() -> list:
    """Every model build() writes, in manifest order: tests/models/CMakeLists.txt registers one
    ctest per name (`--list-names`), so a model added here is tested without touching CMake."""
    return [f"{family}_op{opset}" for family in TORCH_FAMILIES for opset in family_opsets(family)] + list(HANDBUILT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", nargs="?", default=os.environ.get("ONNXC_MODEL_DIR"),
                        help="where to write the models (default: $ONNXC_MODEL_DIR)")
    parser.add_argument("--force", action="store_true", help="rebuild even models that are up to date")
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME",
                        help="build only these models or families (e.g. bert, gpt_op17)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--list-names", action="store_true", help="print the model names and build nothing")
    args = parser.parse_args()
    if args.list_names:
        print("\n".join(model_names()))
        return 0
    if not args.outdir:
        parser.error("give OUTDIR or set ONNXC_MODEL_DIR")

    def log(message):
        if not args.quiet:
            print(message, flush=True)

    entries = build(args.outdir, args.force, set(args.only), log)
    unlisted = sorted({entry["name"] for entry in entries} - set(model_names()))
    if unlisted:
        # CMake would register no test for them.
        raise RuntimeError(f"models built but missing from model_names(): {', '.join(unlisted)}")
    manifest_path = os.path.join(args.outdir, "manifest.json")
    if args.only and os.path.exists(manifest_path):
        # A partial build keeps the other models' entries.
        with open(manifest_path) as f:
            previous = {entry["name"]: entry for entry in json.load(f)["models"]}
        previous.update({entry["name"]: entry for entry in entries})
        entries = list(previous.values())
    import numpy
    import torch
    manifest = {"generated_by": "tests/models/build_models.py",
                "versions": {"torch": torch.__version__, "onnx": onnx.__version__, "numpy": numpy.__version__},
                "models": entries}
    tmp_path = manifest_path + ".tmp"
    with open(tmp_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp_path, manifest_path)
    log(f"wrote {manifest_path} ({len(entries)} models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

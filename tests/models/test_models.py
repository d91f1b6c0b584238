"""Model tests: every model in manifest.json, at each of its test shapes, run by onnxc and
compared with onnxruntime.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/models -v

Environment:
  ONNXC            the onnxc binary; without it the onnxc tests are skipped (the ORT checks still run)
  ONNXC_MODEL_DIR  built models (default: build/models); built by build_models.py when the
                   manifest is missing or older than the model scripts
  ONNXC_BACKENDS   comma-separated backends to test (default: ref,jit,so): `ref` and `jit` are
                   `onnxc run --backend`; `so` compiles the model once with `onnxc compile` and runs
                   the library at every test shape (one artifact serves every shape)
  ONNXC_MODEL_CHECKS  `full` (default) or `passes`: what the sanitizer builds run (CONTRIBUTING.md).
                   `passes` checks the compiler's own C++ on every model without running the
                   kernels it emits, which ASan cannot see into: import, -O2 with every pass
                   verified, lowering to LLVM IR, the fusion counts, the IR round trip, and the
                   reference evaluator against onnxruntime at the test shapes. ORT's self-check,
                   the JIT, the .so and the differential lengths run in the normal build only.

The reference is onnxruntime on the CPU provider with graph optimizations disabled (the plain
graph); a second test checks that ORT's fully optimized run agrees with it. The reference
evaluator and the .so run at every test shape, the JIT at the first shape of one model per family
(each JIT run compiles the model again). A differential test
(test_compiled_matches_reference_at_lengths) also runs the .so at sequence lengths 1, 7, 129, 300
and 600 against onnxc's reference evaluator; its test ids carry the model name, so `-k MODEL-`
selects it with the model's other tests.
"""

import functools
import os
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from model_inputs import differential_shapes, make_inputs, shape_id  # noqa: E402
from ort_reference import output_file_name, run_ort  # noqa: E402
import mask_models  # noqa: E402
import model_sources  # noqa: E402
from model_checks import PASS_LEVEL, skip_at_pass_level, verify_and_lower  # noqa: E402

MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
BACKENDS = [b.strip() for b in os.environ.get("ONNXC_BACKENDS", "ref,jit,so").split(",") if b.strip()]
if PASS_LEVEL:
    BACKENDS = [b for b in BACKENDS if b == "ref"]
# Marks the tests that execute compiled kernels or only onnxruntime: not run at the pass level.
runs_kernels = skip_at_pass_level("ONNXC_MODEL_CHECKS=passes: compiled kernels and onnxruntime's "
                                  "self-check run in the normal build")
ONNXC_TIMEOUT_SECONDS = 600


def load_manifest() -> dict:
    import json
    path = os.path.join(MODEL_DIR, "manifest.json")
    newest_source = max(os.path.getmtime(source) for source in model_sources.SOURCES)
    if not os.path.exists(path) or os.path.getmtime(path) < newest_source:
        result = subprocess.run([sys.executable, os.path.join(HERE, "build_models.py"), MODEL_DIR, "--quiet"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"build_models.py {MODEL_DIR} failed:\n{result.stdout}{result.stderr}")
    with open(path) as f:
        return json.load(f)


MANIFEST = load_manifest()
# ctest's models/NAME sets ONNXC_TEST_MODEL=NAME: its `-k NAME-` alone would also select every
# model whose name ends in NAME (bert_op14 in hf_bert_op14 and hf_distilbert_op14), running them
# twice in the suite. A comma-separated list selects several (the sanitizer leg's models/tool_outputs:
# its half of the opset-14/17 twins, tests/models/CMakeLists.txt).
if os.environ.get("ONNXC_TEST_MODEL"):
    _selected = set(os.environ["ONNXC_TEST_MODEL"].split(","))
    MANIFEST = dict(MANIFEST, models=[entry for entry in MANIFEST["models"] if entry["name"] in _selected])
CASES = [pytest.param(entry, dims, id=f"{entry['name']}-{shape_id(dims)}")
         for entry in MANIFEST["models"] for dims in entry["test_shapes"]]


def model_path(entry: dict) -> str:
    return os.path.join(MODEL_DIR, entry["file"])


@functools.lru_cache(maxsize=None)
def _reference(name: str, dims_key: tuple, opt_level: str):
    entry = next(e for e in MANIFEST["models"] if e["name"] == name)
    feeds = make_inputs(entry, dict(dims_key))
    return feeds, run_ort(model_path(entry), feeds, opt_level)


def reference(entry: dict, dims: dict, opt_level: str = "disable"):
    """(inputs, {output name: ORT result}) for one model at one shape; computed once per session."""
    return _reference(entry["name"], tuple(dims.items()), opt_level)


def compare(label: str, got: np.ndarray, want: np.ndarray, tolerance: dict) -> None:
    """Prints the error and fails beyond tolerance (rtol on |want|, plus atol)."""
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{label}: shape {got.shape}, expected {want.shape}"
    abs_err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    max_abs = float(abs_err.max()) if abs_err.size else 0.0
    significant = np.abs(want) > tolerance["atol"]
    max_rel = float((abs_err[significant] / np.abs(want[significant])).max()) if significant.any() else 0.0
    allowed = tolerance["atol"] + tolerance["rtol"] * np.abs(want.astype(np.float64))
    used = float((abs_err / allowed).max()) if abs_err.size else 0.0
    print(f"{label}: max abs err {max_abs:.3e}, max rel err {max_rel:.3e} (|ref| max {np.abs(want).max():.3g}), "
          f"{used:.2f} of the tolerance")
    np.testing.assert_allclose(got, want, rtol=tolerance["rtol"], atol=tolerance["atol"], err_msg=label)


@runs_kernels
@pytest.mark.parametrize("entry, dims", CASES)
def test_ort_optimized_matches_plain(entry, dims):
    """Sanity check of the reference: ORT's fused graph and the plain graph agree."""
    _, plain = reference(entry, dims, "disable")
    _, optimized = reference(entry, dims, "all")
    for name, want in plain.items():
        compare(f"{entry['name']} {shape_id(dims)} {name} (ORT all vs disabled)", optimized[name], want,
                entry["tolerance"])


def onnxc_binary() -> str:
    path = os.environ.get("ONNXC")
    if not path:
        pytest.skip("ONNXC is not set (path to the onnxc binary)")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"ONNXC={path} is not an executable file")
    return path


def run_checked(command: list, what: str) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=ONNXC_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"timed out after {ONNXC_TIMEOUT_SECONDS}s: {' '.join(command)}")
    if result.returncode != 0:
        pytest.fail(f"{what}: exit code {result.returncode}: {' '.join(command)}\n"
                    f"stderr: {result.stderr.strip()[-3000:]}\nstdout: {result.stdout.strip()[-1000:]}")
    return result


@pytest.fixture(scope="session")
def compiled_libraries(tmp_path_factory):
    """model name -> model.so compiled once per test session (every shape runs the same file)."""
    cache = {}

    def get(entry: dict) -> str:
        if entry["name"] not in cache:
            directory = tmp_path_factory.mktemp(entry["name"])
            library = str(directory / f"{entry['name']}.so")
            start = time.time()
            result = run_checked([onnxc_binary(), "compile", model_path(entry), "-o", library], "onnxc compile")
            print(f"onnxc compile: {time.time() - start:.2f}s: {result.stdout.strip()}")
            cache[entry["name"]] = library
        return cache[entry["name"]]
    return get


def try_onnxc_run(onnxc: str, model: str, feeds: dict, workdir: str, backend: str, extra=()) -> tuple:
    """Runs `onnxc run` on .npy files of the inputs (and the options `extra`); returns (output
    directory, None) or, when it fails, (None, what went wrong). For the `so` backend, `model` is
    the compiled library."""
    input_dir = os.path.join(workdir, "inputs")
    output_dir = os.path.join(workdir, "outputs")
    os.makedirs(input_dir)
    command = [onnxc, "run", model]
    for name, value in feeds.items():
        path = os.path.join(input_dir, output_file_name(name))
        np.save(path, value)
        command += ["--input", f"{name}={path}"]
    command += ["--output-dir", output_dir]
    if backend != "so":
        command.append(f"--backend={backend}")
    command += list(extra)
    start = time.time()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=ONNXC_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {ONNXC_TIMEOUT_SECONDS}s: {' '.join(command)}"
    if result.returncode != 0:
        how = f"killed by signal {-result.returncode}" if result.returncode < 0 else f"exit code {result.returncode}"
        return None, (f"{how}: {' '.join(command)}\n"
                      f"stderr: {result.stderr.strip()[-3000:]}\nstdout: {result.stdout.strip()[-1000:]}")
    print(f"onnxc run --backend={backend}: {time.time() - start:.2f}s")
    return output_dir, None


def run_onnxc(onnxc: str, model: str, feeds: dict, workdir: str, backend: str, extra=()) -> str:
    """try_onnxc_run that fails the test when onnxc does."""
    output_dir, error = try_onnxc_run(onnxc, model, feeds, workdir, backend, extra)
    if error:
        pytest.fail(error)
    return output_dir


def ort_cases() -> list:
    """(entry, dims, backend) for the comparison with onnxruntime: the reference evaluator and
    the .so (compiled once) at every test shape, the JIT at the first shape of the first model of
    each family. Every `onnxc run --backend=jit` compiles the whole model again, which was most of
    these tests' time; the JIT shares the .so's lowering and differs only in how the module
    becomes code (ORC), so one run per family (the opset-14 and opset-17 exports of a family
    lower alike) checks it."""
    cases = []
    families_with_jit = set()
    for entry in MANIFEST["models"]:
        family = entry.get("family", entry["name"])
        runs_jit = family not in families_with_jit
        families_with_jit.add(family)
        for index, dims in enumerate(entry["test_shapes"]):
            for backend in BACKENDS:
                if backend != "jit" or (index == 0 and runs_jit):
                    cases.append(pytest.param(entry, dims, backend,
                                              id=f"{entry['name']}-{shape_id(dims)}-{backend}"))
    return cases


@pytest.mark.parametrize("entry, dims, backend", ort_cases())
def test_onnxc_matches_ort(entry, dims, backend, tmp_path, compiled_libraries):
    onnxc = onnxc_binary()
    feeds, want = reference(entry, dims)
    model = compiled_libraries(entry) if backend == "so" else model_path(entry)
    output_dir = run_onnxc(onnxc, model, feeds, str(tmp_path), backend)
    for name, expected in want.items():
        path = os.path.join(output_dir, output_file_name(name))
        if not os.path.exists(path):
            found = sorted(os.listdir(output_dir)) if os.path.isdir(output_dir) else "no output directory"
            pytest.fail(f"onnxc wrote no {path} (found: {found})")
        compare(f"{entry['name']} {shape_id(dims)} {name} (onnxc {backend} vs ORT)", np.load(path),
                expected, entry["tolerance"])


# ---- the differential check: compiled path against the reference evaluator at long lengths ---
# A pass that is right only on the shapes it looked at (the attention-mask classifier evaluated
# masks at lengths 1..100) compiles a model that is wrong at other lengths while every test shape
# passes. So every model also runs at the lengths of model_inputs.differential_shapes (1, 7, 129,
# 300, 600 on every sequence dimension, batch 2 at one of them): the .so, compiled once, at every
# shape, against `onnxc run --backend=ref` (the unoptimized graph) on the same inputs. The JIT,
# which compiles the same lowering again at every run, is compared once per family (ort_cases);
# differential_shapes' run_jit flags are not used. The ORT comparison stays at the test shapes.

# Under the sanitizers (ONNXC_SANITIZE, scripts/sanitize.sh) the differential check keeps the
# shapes whose every dimension is at most 129 (a batch at most 7): there it looks for memory and
# undefined-behaviour errors in the compiler and the runtime, which the longer lengths reach
# through the same code at several times the cost of an instrumented reference evaluator; the
# normal build's run checks the numbers at every length.
SANITIZED_MAX_DIM = 129
SANITIZED_MAX_BATCH = 7


def within_sanitized_limits(dims: dict) -> bool:
    return all(size <= (SANITIZED_MAX_BATCH if dim == "batch" else SANITIZED_MAX_DIM)
               for dim, size in dims.items())


def differential_cases() -> list:
    cases = []
    if PASS_LEVEL:
        return [pytest.param(entry, {}, "so", id=f"{entry['name']}-lengths-skipped", marks=runs_kernels)
                for entry in MANIFEST["models"]]
    sanitized = bool(os.environ.get("ONNXC_SANITIZE"))
    for entry in MANIFEST["models"]:
        shapes, note = differential_shapes(entry)
        if sanitized and shapes:
            shapes = [(dims, run_jit) for dims, run_jit in shapes if within_sanitized_limits(dims)]
            note = note if shapes else "no differential shape within the sanitizer build's limits"
        if not shapes:
            cases.append(pytest.param(entry, {}, "so", id=f"{entry['name']}-lengths-skipped",
                                      marks=pytest.mark.skip(reason=f"{entry['name']}: {note}")))
        # The .so at every length; the JIT runs once per family (ort_cases), at a test shape.
        for dims, _ in shapes:
            if "so" in BACKENDS:
                cases.append(pytest.param(entry, dims, "so",
                                          id=f"{entry['name']}-lengths-{shape_id(dims)}-so"))
    return cases


@functools.lru_cache(maxsize=None)
def _evaluated(name: str, dims_key: tuple) -> tuple:
    import tempfile
    entry = next(e for e in MANIFEST["models"] if e["name"] == name)
    with tempfile.TemporaryDirectory(prefix=f"{name}-ref-") as workdir:
        output_dir, error = try_onnxc_run(onnxc_binary(), model_path(entry), make_inputs(entry, dict(dims_key)),
                                          workdir, "ref")
        if error:
            return None, error
        return {file: np.load(os.path.join(output_dir, file)) for file in sorted(os.listdir(output_dir))}, None


def evaluated(entry: dict, dims: dict) -> tuple:
    """({output file: array}, None) from the reference evaluator, or (None, its error); once per
    model and shape in a session (the .so and the JIT compare with the same run)."""
    return _evaluated(entry["name"], tuple(dims.items()))


@pytest.mark.parametrize("entry, dims, backend", differential_cases())
def test_compiled_matches_reference_at_lengths(entry, dims, backend, tmp_path, compiled_libraries):
    """The compiled model agrees with the reference evaluator at sequence lengths beyond any a
    pass probed; an error on one side only (or on both: the lengths must be reachable) fails."""
    onnxc = onnxc_binary()
    label = f"{entry['name']} {shape_id(dims)}"
    print(f"{entry['name']}: {differential_shapes(entry)[1]}")
    want, ref_error = evaluated(entry, dims)
    model = compiled_libraries(entry) if backend == "so" else model_path(entry)
    output_dir, error = try_onnxc_run(onnxc, model, make_inputs(entry, dims), str(tmp_path), backend)
    if ref_error and error:
        pytest.fail(f"{label}: neither the reference nor onnxc {backend} runs at this shape (a position or "
                    f"mask table shorter than the length? rebuild the model with longer tables)\n"
                    f"reference: {ref_error}\n{backend}: {error}")
    if ref_error:
        pytest.fail(f"{label}: onnxc {backend} ran but the reference evaluator refused:\n{ref_error}")
    if error:
        pytest.fail(f"{label}: the reference evaluator ran but onnxc {backend} failed:\n{error}")
    got = sorted(os.listdir(output_dir))
    assert got == list(want), f"{label}: onnxc {backend} wrote {got}, the reference {list(want)}"
    for name, expected in want.items():
        compare(f"{label} {name} (onnxc {backend} vs reference)", np.load(os.path.join(output_dir, name)),
                expected, entry["tolerance"])


def run_dump(onnxc: str, source: str, destination: str, *flags: str) -> str:
    command = [onnxc, "dump", source, "-o", destination, *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=ONNXC_TIMEOUT_SECONDS)
    if result.returncode != 0:
        pytest.fail(f"exit code {result.returncode}: {' '.join(command)}\nstderr: {result.stderr.strip()[-3000:]}")
    with open(destination) as f:
        return f.read()


MODELS = [pytest.param(entry, id=entry["name"]) for entry in MANIFEST["models"]]


# What -O2 must fuse in each model family (issue 4): every attention block into one Attention
# op reading the projections in place (the 3-D form, with q_num_heads), every LayerNorm (alone,
# or with the residual Add before it as SkipLayerNormalization) and every GELU. The recurrent
# seq2seq models' additive (Bahdanau) attention becomes AdditiveAttention, their 3-D Luong
# attention a single-head Attention (fuse-additive-attention).
EXPECTED_FUSIONS = {
    "bert": {"Attention": 6, "LayerNorm": 13, "Gelu": 6},
    "gpt": {"Attention": 4, "LayerNorm": 9, "Gelu": 4},
    "encdec": {"Attention": 6, "LayerNorm": 10, "Gelu": 0},
    "vit": {"Attention": 4, "LayerNorm": 9, "Gelu": 4},
    "windowed_attn": {"Attention": 1, "LayerNorm": 1, "Gelu": 0},
    "llama": {"Attention": 2, "RMSNormalization": 5, "LayerNorm": 0},
    "attention_op23": {"Attention": 2, "RMSNormalization": 3},
    # The op's own cache: both Attention ops stay (past_key/past_value operands, presents results).
    "attention_op23_past": {"Attention": 2, "RMSNormalization": 5},
    "lstm_attn": {"Attention": 0, "AdditiveAttention": 1},
    "gru_bahdanau": {"Attention": 0, "AdditiveAttention": 1},
    "luong_attn": {"Attention": 2, "AdditiveAttention": 0},
    "alibi": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
}
EXPECTED_FUSIONS.update(mask_models.EXPECTED_FUSIONS)
# The libraries' own models (library_models.py): every attention block, norm and GELU. CLIP's
# quick_gelu (x * sigmoid(1.702 x)) is not GELU; T5's norm is RMSNorm; LN counts include the
# embeddings' and the stacks' final norms.
EXPECTED_FUSIONS.update({
    "hf_gpt2": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    # With its cache: queries are the new tokens, keys the cache and them (past + seq); the causal
    # mask offset by the past stays an operand (the Attention op's is_causal is not offset).
    "hf_gpt2_past": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "hf_bert": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "hf_roberta": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "hf_distilbert": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "hf_clip_text": {"Attention": 2, "LayerNorm": 5, "Gelu": 0},
    "hf_llama": {"Attention": 2, "RMSNormalization": 5, "LayerNorm": 0},
    "hf_llama_mask": {"Attention": 2, "RMSNormalization": 5, "LayerNorm": 0},
    # With its cache: grouped K/V heads concatenated to the past, rotary positions from position_ids.
    "hf_llama_past": {"Attention": 2, "RMSNormalization": 5, "LayerNorm": 0},
    # DeBERTa: heads in the batch, Softmax on the 4-D view, c2p + p2c position terms (gathered by
    # GatherElements) and XSoftmax's zeroing of hidden probabilities (docs/FUSIONS.md).
    "hf_deberta_v2": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "hf_bart": {"Attention": 6, "LayerNorm": 12, "Gelu": 4},
    # The generation views of one BART: the decoders' self and cross attention both fuse, the
    # cross K/V read from the encoder's outputs (cached) or projected from its hidden states.
    "hf_bart_seq2seq_encoder": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "hf_bart_seq2seq_decoder_past": {"Attention": 4, "LayerNorm": 7, "Gelu": 2},
    "hf_bart_seq2seq_decoder": {"Attention": 4, "LayerNorm": 7, "Gelu": 2},
    "hf_t5": {"Attention": 6, "RMSNormalization": 12, "LayerNorm": 0},
    # T5's generation views: the decoder step's self-attention adds the relative position bias of
    # the new rows (past .. past + seq - 1) against every key, an operand of the fused op.
    "hf_t5_seq2seq_encoder": {"Attention": 2, "RMSNormalization": 5, "LayerNorm": 0},
    "hf_t5_seq2seq_decoder_past": {"Attention": 4, "RMSNormalization": 7, "LayerNorm": 0},
    "hf_t5_seq2seq_decoder": {"Attention": 4, "RMSNormalization": 7, "LayerNorm": 0},
    "hf_vit": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "hf_whisper_encoder": {"Attention": 2, "LayerNorm": 5, "Gelu": 4},
    "nn_encoder_post_relu_padding": {"Attention": 2, "LayerNorm": 4, "Gelu": 0},
    "nn_encoder_bf_pre_gelu_causal": {"Attention": 2, "LayerNorm": 4, "Gelu": 2},
    "nn_encoder_bf_post_gelu_both": {"Attention": 2, "LayerNorm": 4, "Gelu": 2},
    "nn_encoder_pre_relu_causal": {"Attention": 2, "LayerNorm": 4, "Gelu": 0},
    "nn_transformer": {"Attention": 6, "LayerNorm": 12, "Gelu": 0},
    "nn_decoder": {"Attention": 4, "LayerNorm": 6, "Gelu": 2},
    # The 2017 Transformer for generation (post-LN, ReLU; nn.Transformer's final norms counted).
    "nn_transformer_seq2seq_encoder": {"Attention": 2, "LayerNorm": 5, "Gelu": 0},
    "nn_transformer_seq2seq_decoder": {"Attention": 4, "LayerNorm": 7, "Gelu": 0},
    # A hand-written cache: K/V torch.cat-ed to past_k/past_v per head, the causal mask offset by the past.
    "torch_gpt_cache": {"Attention": 2, "LayerNorm": 5, "Gelu": 2},
    "nn_mha": {"Attention": 1},
})
# Rotary embeddings sit between the head split and Q·Kᵀ, so these keep the 4-D Attention form
# (with K and V read before repeat_kv: no Expand may remain).
REPEATED_KV = {"llama", "hf_llama", "hf_llama_mask", "hf_llama_past"}
# Models whose attention stays unfused (EXPECTED_FUSIONS says why): no leftover check.
UNFUSED_ATTENTION = set()
# A KV cache is concatenated per head ([b, h, past + seq, d]): K and V are 4-D, not projections.
FOUR_D_ATTENTION = REPEATED_KV | {"hf_gpt2_past", "hf_bart_seq2seq_decoder_past", "attention_op23_past",
                                   "hf_t5_seq2seq_decoder_past", "torch_gpt_cache"}
# Ops that must be gone once everything above is fused.
UNFUSED_LEFTOVERS = ("Softmax(", "ReduceMean(", "Erf(", "Tanh(", "Sqrt(")


def count_ops(ir_text: str, op: str) -> int:
    return sum(1 for line in ir_text.splitlines() if f"= {op}(" in line)


@pytest.mark.parametrize("entry", MODELS)
def test_fusions(entry, tmp_path):
    """-O2 fuses every attention block, LayerNorm and GELU of the model (counts asserted)."""
    onnxc = onnxc_binary()
    text = run_dump(onnxc, model_path(entry), str(tmp_path / "fused.ir"), "-O2")
    expected = EXPECTED_FUSIONS[entry["family"]]
    found = {
        "Attention": count_ops(text, "Attention"),
        "LayerNorm": count_ops(text, "LayerNormalization") + count_ops(text, "SkipLayerNormalization"),
        "Gelu": count_ops(text, "Gelu"),
        "RMSNormalization": count_ops(text, "RMSNormalization"),
        "AdditiveAttention": count_ops(text, "AdditiveAttention"),
    }
    assert {k: found[k] for k in expected} == expected, f"{entry['name']}: fused ops {found}"
    if entry["family"] in REPEATED_KV:
        # repeat_kv expands (or tiles) K and V to [b, kv_heads, group, S, d]; a mask's Expand may stay.
        repeats = [line for line in text.splitlines()
                   if ("= Expand(" in line or "= Tile(" in line) and line.rsplit(":", 1)[-1].count(",") == 4]
        assert not repeats, f"{entry['name']}: repeat_kv's Expand remains: {repeats[0].strip()[:200]}"
    if entry["family"] in ("lstm_attn", "gru_bahdanau", "luong_attn"):  # tanh outside attention
        return
    if entry["family"] not in FOUR_D_ATTENTION:
        attention_lines = [line for line in text.splitlines() if "= Attention(" in line]
        assert all("q_num_heads" in line for line in attention_lines), \
            f"{entry['name']}: an Attention is in the 4-D form (head plumbing not absorbed)"
    leftovers = [op for op in UNFUSED_LEFTOVERS if op in text]
    if entry["family"] in UNFUSED_ATTENTION:
        leftovers = [op for op in leftovers if op != "Softmax("]
    assert not leftovers, f"{entry['name']}: unfused ops remain at -O2: {leftovers}"


def passes_cases() -> list:
    return [pytest.param(entry, id=f"{entry['name']}-passes") for entry in MANIFEST["models"]]


@pytest.mark.skipif(not PASS_LEVEL, reason="the normal build compiles and runs every model instead")
@pytest.mark.parametrize("entry", passes_cases())
def test_passes_verify_and_lower(entry, tmp_path):
    """-O3 with the IR verified and shapes re-inferred after every pass, then lowered to LLVM IR:
    every step of the compiler's own code on the model, no kernel run (ONNXC_MODEL_CHECKS=passes,
    the sanitizer builds). The normal build compiles and runs the model instead."""
    problem = verify_and_lower(onnxc_binary(), model_path(entry), str(tmp_path / f"{entry['name']}.ll"))
    assert problem is None, f"onnxc compile -O3 --verify-each --emit=llvm-unoptimized: {problem}"


@pytest.mark.parametrize("opt_level", ["-O0", "-O1"])
@pytest.mark.parametrize("entry", MODELS)
def test_dump_is_fully_typed_and_round_trips(entry, opt_level, tmp_path):
    """`onnxc dump` gives every value a dtype and a known-or-symbolic shape, and the printed IR
    parses back to the same text."""
    onnxc = onnxc_binary()
    first = run_dump(onnxc, model_path(entry), str(tmp_path / "first.ir"), opt_level)
    untyped = [line.strip() for line in first.splitlines()
               if "unknown" in line or "?" in line or "[*]" in line
               or (" = " in line and not line.lstrip().startswith("const") and " : " not in line)]
    assert not untyped, f"{len(untyped)} lines with unknown types, e.g.:\n" + "\n".join(untyped[:5])
    second = run_dump(onnxc, str(tmp_path / "first.ir"), str(tmp_path / "second.ir"))
    assert first == second, "print -> parse -> print changed the text"


def c_example_inputs(entry: dict, symbols: dict) -> dict:
    """The inputs examples/c/run_model.c fills in: element i is i % 10 / 4 - 1 (f32) or i % 7
    (integers), at the shapes the symbol values give."""
    import onnx
    model = onnx.load(model_path(entry), load_external_data=False)
    initializers = {init.name for init in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else symbols[d.dim_param] for d in tensor_type.shape.dim]
        count = int(np.prod(dims)) if dims else 1
        index = np.arange(count)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        if dtype == np.float32:
            data = (index % 10).astype(np.float32) * np.float32(0.25) - np.float32(1.0)
        else:
            data = (index % 7).astype(dtype)
        feeds[value.name] = data.reshape(dims)
    return feeds


C_EXAMPLE_MODELS = [pytest.param(entry, id=entry["name"]) for entry in MANIFEST["models"]
                    if entry["name"] in ("gpt_op17", "vit_op17")]


@pytest.mark.parametrize("entry", C_EXAMPLE_MODELS)
def test_c_example_runs_compiled_model(entry, tmp_path, compiled_libraries):
    """examples/c/run_model.c, built against a compiled transformer and its generated header,
    prints what onnxruntime computes on the same inputs."""
    library = compiled_libraries(entry)
    header = os.path.splitext(library)[0] + ".h"
    program = str(tmp_path / "run_model")
    # A library from a sanitized onnxc (ONNXC_SANITIZE, set by the sanitizer build's ctest)
    # needs the sanitizers' runtimes loaded first: the program is built with the same flags.
    sanitize = os.environ.get("ONNXC_SANITIZE", "")
    sanitize_flags = [f"-fsanitize={sanitize}", "-fno-sanitize-recover=all"] if sanitize else []
    run_checked(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", *sanitize_flags,
                 "-I", os.path.join(REPO, "runtime", "include"),
                 f"-DONNXC_MODEL_HEADER=\"{header}\"", os.path.join(REPO, "examples", "c", "run_model.c"),
                 library, f"-Wl,-rpath,{os.path.dirname(library)}", "-o", program], "building the C example")
    symbols = {name: value for name, value in entry["test_shapes"][0].items()}
    result = run_checked([program] + [f"{name}={value}" for name, value in symbols.items()], "run_model")
    want = run_ort(model_path(entry), c_example_inputs(entry, symbols), "disable")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(want), f"expected {len(want)} output lines, got:\n{result.stdout}"
    for line, (name, expected) in zip(lines, want.items()):
        head, _, values = line.partition(" = ")
        assert head.startswith(f"{name}: "), line
        shown = [float(v) for v in values.split() if v != "..."]
        flat = expected.reshape(-1)[:len(shown)].astype(np.float64)
        np.testing.assert_allclose(shown, flat, rtol=1e-4, atol=entry["tolerance"]["atol"], err_msg=line)


# ---- onnxc bench at its defaults on every model of the library zoo (issue 32, item 4) ---------
# No --shape: bench makes up valid inputs (ids within their table, masks of ones, empty caches) at
# batch 1 and sequence 128 and says so. Numbers are checked for sanity, never for speed; the .so
# is the one the tests above compiled, and three timed runs are enough.
LIBRARY_FAMILY_PREFIXES = ("hf_", "nn_", "torch_")
BENCH_MODELS = [pytest.param(entry, id=f"{entry['name']}-bench") for entry in MANIFEST["models"]
                if entry["family"].startswith(LIBRARY_FAMILY_PREFIXES)]


@runs_kernels
@pytest.mark.parametrize("entry", BENCH_MODELS)
def test_bench_runs_at_default_flags(entry, compiled_libraries):
    import json
    library = compiled_libraries(entry)
    result = run_checked([onnxc_binary(), "bench", library, "--iters", "3", "--warmup", "1",
                          "--threads", "1", "--json"], "onnxc bench")
    report = json.loads(result.stdout)
    latency = report["latency_ms"]
    assert latency["runs"] == 3 and report["throughput_per_s"] > 0, report
    assert 0 < latency["min"] <= latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    for symbol, value in report["default_dims"].items():
        assert value in (0, 1, 128), (symbol, value)
    for made in report["inputs"]:
        name = made["name"].lower()
        assert made["values"] != "given", made
        if "mask" in name and "random in [-1" not in made["values"]:
            assert made["values"] in ("ones", "zeros (no padding)"), made
        if "past" in name and "encoder" not in name and "cross" not in name:
            assert 0 in made["dims"], f"{made['name']}: the cache is not empty: {made}"
    print(f"{entry['name']}: {report['throughput_per_s']:.1f} inferences/s, defaults {report['default_dims']}")

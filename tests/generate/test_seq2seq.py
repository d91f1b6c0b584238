"""`onnxc generate --encoder` (encoder-decoder generation) against onnxruntime's greedy loop.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/generate -v

The models are three views of one random-weight HF BartForConditionalGeneration (tests/models/
library_models.py, 2+2 layers, hidden 64, vocabulary 384): the encoder, which also writes every
decoder layer's cross-attention K/V (past_key_values.N.encoder.key/value); the decoder step, which
reads those and its own growing cache (past_key_values.N.decoder.* in, present.N.decoder.* out);
and the decoder without a cache, which reads the encoder's hidden states at every step. The
generator runs the encoder once and keeps its outputs bound to the decoder for every step.

T5 comes in the same three views (hf_t5_seq2seq_*): its decoder step adds a relative position bias
whose rows must be the new tokens' (past .. past + seq - 1) at every step. The 2017 Transformer
(torch nn.Transformer with embeddings, sinusoidal positions and an LM head) comes as its encoder
(source ids -> memory) and a decoder without a cache, which the generator re-runs on the whole
target prefix at every step.

At the pass level (ONNXC_MODEL_CHECKS=passes, tests/models/model_checks.py: the sanitizer builds)
the per-model tests check these models' passes; here BART's cached generation and the refused uses (the
generator's encoder-decoder C++) stay, compiling only its two files; the other generations skip.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

from model_checks import PASS_LEVEL, skip_at_pass_level  # noqa: E402
from ort_reference import make_session  # noqa: E402

MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC")
SOURCE = [0, 45, 311, 67, 89, 123, 200, 17, 2]
START = [2]  # BART's decoder_start_token_id
NEW_TOKENS = 64
TIMEOUT = 600
MODELS = ("hf_bart_seq2seq_encoder", "hf_bart_seq2seq_decoder_past", "hf_bart_seq2seq_decoder",
          "hf_t5_seq2seq_encoder", "hf_t5_seq2seq_decoder_past", "hf_t5_seq2seq_decoder",
          "nn_transformer_seq2seq_encoder", "nn_transformer_seq2seq_decoder")
T5_START = [0]  # T5's decoder_start_token_id (its pad id)
T5_SOURCE = [45, 311, 67, 89, 123, 200, 17, 1]  # 1 is T5's end of sequence
TRANSFORMER_START = [1]
# At the pass level only the smallest generation runs (the kept tests compile these two only).
SMALLEST = ("hf_bart_seq2seq_encoder", "hf_bart_seq2seq_decoder_past")
compiled_kernels = skip_at_pass_level("ONNXC_MODEL_CHECKS=passes: more generations through compiled kernels "
                                      "(uninstrumented), the generator's C++ runs in "
                                      "test_kv_cache_and_cached_cross_attention_match_onnxruntime")

pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """{model name: (onnx path, compiled .so)}, compiled once for the module."""
    folder = tmp_path_factory.mktemp("seq2seq")
    built = {}
    for name in SMALLEST if PASS_LEVEL else MODELS:
        onnx_path = os.path.join(MODEL_DIR, f"{name}_op17.onnx")
        if not os.path.exists(onnx_path):
            pytest.skip(f"{onnx_path} is not built (ctest -R models/build)")
        library = str(folder / f"{name}.so")
        subprocess.run([ONNXC, "compile", onnx_path, "-o", library], check=True, capture_output=True,
                       text=True, timeout=TIMEOUT)
        built[name] = (onnx_path, library)
    return built


def run(*arguments: str, expect_failure: bool = False, usage_error: bool = False):
    """(ids, stderr) of `onnxc generate ARGUMENTS... --threads 1`; a failure exits 1, a usage
    error 2."""
    command = [ONNXC, "generate", *arguments, "--threads", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    if expect_failure or usage_error:
        want = 2 if usage_error else 1
        assert result.returncode == want, f"{command} should fail:\n{result.stdout}{result.stderr}"
        return None, result.stderr
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}{result.stderr}"
    line = result.stdout.strip()
    return ([int(token) for token in line.split(",")] if line else []), result.stderr


def seq2seq(decoder: str, encoder: str, *options: str, source=SOURCE, start=START, expect_failure=False):
    return run(decoder, "--encoder", encoder, "--source-ids", ",".join(map(str, source)),
               "--prompt-ids", ",".join(map(str, start)), *options, expect_failure=expect_failure)


def encode(encoder_path: str, source: list) -> dict:
    session = make_session(encoder_path, "all")
    ids = np.array([source], dtype=np.int64)
    names = [o.name for o in session.get_outputs()]
    feeds = {"input_ids": ids}
    if "attention_mask" in {i.name for i in session.get_inputs()}:
        feeds["attention_mask"] = np.ones_like(ids)
    return dict(zip(names, session.run(names, feeds)))


def ort_greedy_with_cache(encoder_path: str, decoder_path: str, source: list, count: int, start=START) -> list:
    encoded = encode(encoder_path, source)
    session = make_session(decoder_path, "all")
    feeds = {"encoder_attention_mask": np.ones((1, len(source)), dtype=np.int64)}
    selfs = []
    for info in session.get_inputs():
        if ".encoder." in info.name:
            feeds[info.name] = encoded[info.name]  # computed once, kept for every step
        elif ".decoder." in info.name:
            feeds[info.name] = np.zeros((1, info.shape[1], 0, info.shape[3]), dtype=np.float32)
            selfs.append(info.name)
    names = [o.name for o in session.get_outputs()]
    ids, produced, length = list(start), [], 0
    while len(produced) < count:
        feeds["input_ids"] = np.array([ids[length:]], dtype=np.int64)
        outputs = dict(zip(names, session.run(names, feeds)))
        token = int(np.argmax(outputs["logits"][0, -1]))
        produced.append(token)
        length = len(ids)
        ids.append(token)
        for name in selfs:
            feeds[name] = outputs[name.replace("past_key_values.", "present.", 1)]
    return produced


def ort_greedy_full(encoder_path: str, decoder_path: str, source: list, count: int, start=START) -> list:
    encoded = encode(encoder_path, source)
    session = make_session(decoder_path, "all")
    # BART's and T5's decoders read the hidden states and the source mask; nn.Transformer's the memory.
    context = {}
    for info in session.get_inputs():
        if info.name == "encoder_hidden_states":
            context[info.name] = encoded["last_hidden_state"]
        elif info.name == "memory":
            context[info.name] = encoded["memory"]
        elif info.name == "encoder_attention_mask":
            context[info.name] = np.ones((1, len(source)), dtype=np.int64)
    ids, produced = list(start), []
    while len(produced) < count:
        logits = session.run(["logits"], {"input_ids": np.array([ids], dtype=np.int64), **context})[0]
        token = int(np.argmax(logits[0, -1]))
        produced.append(token)
        ids.append(token)
    return produced


def test_kv_cache_and_cached_cross_attention_match_onnxruntime(libraries):
    encoder_path, encoder = libraries["hf_bart_seq2seq_encoder"]
    decoder_path, decoder = libraries["hf_bart_seq2seq_decoder_past"]
    ids, stderr = seq2seq(decoder, encoder, "--max-new-tokens", str(NEW_TOKENS))
    assert "encoder-decoder, using the KV cache in place" in stderr, stderr
    # The source mask and the four cross K/V come from the encoder; the self-attention cache
    # pairs with the presents.
    assert "4 cache pairs" in stderr and "5 inputs from the encoder" in stderr, stderr
    want = ort_greedy_with_cache(encoder_path, decoder_path, SOURCE, NEW_TOKENS)
    print(f"onnxc: {ids}\nort:   {want}")
    assert ids == want


@compiled_kernels
def test_full_sequence_decoder_matches_onnxruntime(libraries):
    encoder_path, encoder = libraries["hf_bart_seq2seq_encoder"]
    decoder_path, decoder = libraries["hf_bart_seq2seq_decoder"]
    ids, stderr = seq2seq(decoder, encoder, "--max-new-tokens", "24")
    assert "encoder-decoder, no KV cache" in stderr, stderr
    assert "2 inputs from the encoder" in stderr, stderr
    assert ids == ort_greedy_full(encoder_path, decoder_path, SOURCE, 24)


@compiled_kernels
def test_t5_cached_and_full_decoders_match_onnxruntime(libraries):
    """T5 with its cache, 64 tokens: the self-attention's relative position bias must be the new
    row's against every key at each step (position past, not 0), so the cached decoder's tokens
    equal both onnxruntime's loop over the same file and the decoder that re-reads the whole
    prefix (where no cache offsets the bias)."""
    encoder_path, encoder = libraries["hf_t5_seq2seq_encoder"]
    decoder_path, decoder = libraries["hf_t5_seq2seq_decoder_past"]
    ids, stderr = seq2seq(decoder, encoder, "--max-new-tokens", str(NEW_TOKENS), source=T5_SOURCE, start=T5_START)
    assert "encoder-decoder, using the KV cache in place" in stderr, stderr
    assert "4 cache pairs" in stderr and "5 inputs from the encoder" in stderr, stderr
    want = ort_greedy_with_cache(encoder_path, decoder_path, T5_SOURCE, NEW_TOKENS, start=T5_START)
    print(f"onnxc: {ids}\nort:   {want}")
    assert ids == want
    assert len(set(ids)) > 8, "greedy tokens this repetitive would hide a broken cache"
    full_path, full = libraries["hf_t5_seq2seq_decoder"]
    uncached, stderr = seq2seq(full, encoder, "--max-new-tokens", str(NEW_TOKENS), source=T5_SOURCE, start=T5_START)
    assert "encoder-decoder, no KV cache" in stderr and "2 inputs from the encoder" in stderr, stderr
    assert uncached == ort_greedy_full(encoder_path, full_path, T5_SOURCE, NEW_TOKENS, start=T5_START)
    assert uncached == ids


@compiled_kernels
def test_nn_transformer_re_runs_the_prefix_and_matches_onnxruntime(libraries):
    """nn.Transformer exported without a cache: the generator re-runs the decoder on the whole
    target prefix at every step, the encoder's memory bound once."""
    encoder_path, encoder = libraries["nn_transformer_seq2seq_encoder"]
    decoder_path, decoder = libraries["nn_transformer_seq2seq_decoder"]
    ids, stderr = seq2seq(decoder, encoder, "--max-new-tokens", str(NEW_TOKENS), start=TRANSFORMER_START)
    assert "encoder-decoder, no KV cache in the model, re-running the full sequence" in stderr, stderr
    assert "1 input from the encoder" in stderr, stderr
    want = ort_greedy_full(encoder_path, decoder_path, SOURCE, NEW_TOKENS, start=TRANSFORMER_START)
    print(f"onnxc: {ids}\nort:   {want}")
    assert ids == want
    assert len(set(ids)) > 8, "greedy tokens this repetitive would hide a decoder that ignores its prefix"
    other, _ = seq2seq(decoder, encoder, "--max-new-tokens", "16", source=[0, 9, 8, 7, 2], start=TRANSFORMER_START)
    assert other != ids[:16], "the tokens do not depend on the source"


@compiled_kernels
def test_another_source_and_the_onnx_encoder(libraries):
    """A second source re-encodes (the decoder's context follows it); an .onnx encoder is compiled
    in the process and gives the tokens of its .so."""
    encoder_path, encoder = libraries["hf_bart_seq2seq_encoder"]
    decoder_path, decoder = libraries["hf_bart_seq2seq_decoder_past"]
    source = [0, 9, 8, 7, 2]
    ids, _ = seq2seq(decoder, encoder, "--max-new-tokens", "16", source=source)
    assert ids == ort_greedy_with_cache(encoder_path, decoder_path, source, 16)
    first, _ = seq2seq(decoder, encoder, "--max-new-tokens", "16")
    assert ids != first, "the tokens do not depend on the source"
    from_onnx, stderr = seq2seq(decoder, encoder_path, "--max-new-tokens", "16", "--bench", source=source)
    assert from_onnx == ids
    assert "encode " in stderr and "(5 source tokens), prefill" in stderr, stderr


@compiled_kernels
def test_mapping_names_a_context_input(libraries):
    """The source mask named by the mapping instead of by its name gives the same tokens; a mapping
    to an encoder output that does not exist is refused naming it."""
    _, encoder = libraries["hf_bart_seq2seq_encoder"]
    _, decoder = libraries["hf_bart_seq2seq_decoder"]
    guessed, _ = seq2seq(decoder, encoder, "--max-new-tokens", "8")
    mapped, _ = seq2seq(decoder, encoder, "--max-new-tokens", "8", "--map",
                        "encoder_hidden_states=encoder:last_hidden_state", "--map",
                        "encoder_attention_mask=source_mask")
    assert mapped == guessed
    _, stderr = seq2seq(decoder, encoder, "--map", "encoder_hidden_states=encoder:nothing", expect_failure=True)
    assert stderr.strip().splitlines()[-1] == (
        f"error: {decoder}: mapping: encoder_hidden_states=encoder:nothing names no output of the encoder")


def test_bad_seq2seq_uses_fail_with_one_line(libraries):
    _, encoder = libraries["hf_bart_seq2seq_encoder"]
    _, decoder = libraries["hf_bart_seq2seq_decoder_past"]
    _, stderr = run(decoder, "--encoder", encoder, "--prompt-ids", "2", usage_error=True)
    assert stderr.strip().splitlines()[-1] == "error: --encoder needs --source-ids, the ids the encoder reads"
    _, stderr = run(decoder, "--source-ids", "1,2", "--prompt-ids", "2", usage_error=True)
    assert "--source-ids applies to an encoder-decoder model" in stderr.strip().splitlines()[-1]
    # Without its encoder the decoder's cross K/V look like a cache with no present output.
    _, stderr = run(decoder, "--prompt-ids", "2", expect_failure=True)
    assert "'past_key_values.0.encoder.key' has no matching output" in stderr.strip().splitlines()[-1], stderr
    # A source longer than BART's 1024 positions fails in the encoder's run, naming it.
    _, stderr = seq2seq(decoder, encoder, source=[5] * 1100, expect_failure=True)
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {encoder}: encoder: "), stderr

"""`onnxc generate` against onnxruntime's greedy loop over the same exported model.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/generate -v

The models are the random-weight HF GPT-2 of tests/models (2 layers, hidden 64, vocabulary 384):
hf_gpt2_past (past_key_i/past_value_i in, present_key_i/present_value_i out: the KV-cache mode)
and hf_gpt2 (no cache: the generator re-runs the whole sequence); and HF LLaMA with its cache
(hf_llama_past: position ids, grouped K/V heads); the opset-23 Attention op with its own cache
(attention_op23_past: past_key_N/past_value_N operands, present_key_N/present_value_N results, no
mask, positions from the cache's length in the graph); and a torch GPT that takes its cache as
explicit tensors (torch_gpt_cache: past_k_N/past_v_N). test_seq2seq.py has the encoder-decoder
ones. Each is compiled to a .so
once; 64 greedy tokens from a 3-token prompt take the context past 64 positions, where the
old input-specialized JIT failed. The ORT loop feeds its presents back as pasts (or re-runs the
sequence) and takes the argmax of the last logits row, the lowest id on ties like onnxc.

At the pass level (ONNXC_MODEL_CHECKS=passes, tests/models/model_checks.py: the sanitizer builds)
the per-model tests check these models' passes; here the KV-cache greedy run of hf_gpt2_past (the
generator's own C++: the cache pairs, the loop) stays, the cache-pair proof and the flash kernels
are read from LLVM IR with every pass verified, and the other generations are skipped.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

from model_checks import PASS_LEVEL, lowered_with_output, skip_at_pass_level  # noqa: E402
from ort_reference import make_session  # noqa: E402

MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC")
PROMPT = [64, 290, 318]
NEW_TOKENS = 64
TIMEOUT = 600

pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


# The models written with onnx.helper have no opset suffix (one opset each).
HANDBUILT = {"attention_op23_past"}
CACHED = ("hf_gpt2_past", "hf_llama_past", "attention_op23_past", "torch_gpt_cache")
# At the pass level only the smallest generation runs (the kept test compiles this model only).
compiled_kernels = skip_at_pass_level("ONNXC_MODEL_CHECKS=passes: more generations through compiled kernels "
                                      "(uninstrumented), the generator's C++ runs in "
                                      "test_kv_cache_greedy_matches_onnxruntime")


def model_file(name: str) -> str:
    path = os.path.join(MODEL_DIR, f"{name}.onnx" if name in HANDBUILT else f"{name}_op17.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} is not built (ctest -R models/build)")
    return path


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """{model name: (onnx path, compiled .so)}, compiled once for the module."""
    folder = tmp_path_factory.mktemp("generate")
    built = {}
    for name in ("hf_gpt2_past",) if PASS_LEVEL else ("hf_gpt2", *CACHED):
        onnx_path = model_file(name)
        library = str(folder / f"{name}.so")
        subprocess.run([ONNXC, "compile", onnx_path, "-o", library], check=True, capture_output=True,
                       text=True, timeout=TIMEOUT)
        built[name] = (onnx_path, library)
    return built


def generate(model: str, *options: str, expect_failure: bool = False):
    """(ids, stdout, stderr) of `onnxc generate MODEL --prompt-ids PROMPT OPTIONS...`."""
    command = [ONNXC, "generate", model, "--prompt-ids", ",".join(map(str, PROMPT)), "--threads", "1",
               *options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    if expect_failure:
        assert result.returncode == 1, f"{command} should fail:\n{result.stdout}{result.stderr}"
        return None, result.stdout, result.stderr
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}{result.stderr}"
    line = result.stdout.strip()
    ids = [int(token) for token in line.split(",")] if line else []
    return ids, result.stdout, result.stderr


def ort_greedy_with_cache(onnx_path: str, prompt: list, count: int) -> list:
    session = make_session(onnx_path, "all")
    pasts = [i for i in session.get_inputs() if i.name.startswith("past_")]
    inputs = {i.name for i in session.get_inputs()}
    feeds = {p.name: np.zeros((1, p.shape[1], 0, p.shape[3]), dtype=np.float32) for p in pasts}
    names = [o.name for o in session.get_outputs()]
    ids, produced, length = list(prompt), [], 0
    while len(produced) < count:
        new = ids[length:]
        feeds["input_ids"] = np.array([new], dtype=np.int64)
        if "attention_mask" in inputs:
            feeds["attention_mask"] = np.ones((1, len(ids)), dtype=np.int64)
        if "position_ids" in inputs:
            feeds["position_ids"] = np.arange(length, len(ids), dtype=np.int64)[None]
        outputs = dict(zip(names, session.run(names, feeds)))
        token = int(np.argmax(outputs["logits"][0, -1]))
        produced.append(token)
        length = len(ids)
        ids.append(token)
        for p in pasts:
            feeds[p.name] = outputs[p.name.replace("past_", "present_", 1)]
    return produced


def ort_greedy_full(onnx_path: str, prompt: list, count: int) -> list:
    session = make_session(onnx_path, "all")
    ids, produced = list(prompt), []
    while len(produced) < count:
        logits = session.run(["logits"], {"input_ids": np.array([ids], dtype=np.int64)})[0]
        token = int(np.argmax(logits[0, -1]))
        produced.append(token)
        ids.append(token)
    return produced


def test_kv_cache_greedy_matches_onnxruntime(libraries):
    onnx_path, library = libraries["hf_gpt2_past"]
    ids, _, stderr = generate(library, "--max-new-tokens", str(NEW_TOKENS))
    assert "using the KV cache in place" in stderr, stderr
    assert "4 cache pairs" in stderr and "updated in place" in stderr, stderr
    want = ort_greedy_with_cache(onnx_path, PROMPT, NEW_TOKENS)
    print(f"onnxc: {ids}\nort:   {want}")
    assert ids == want


@compiled_kernels
def test_logits_last_is_the_last_row_and_generates_alike(tmp_path):
    """`onnxc compile --logits=last` (driver/LastPositionLogits.h, what generate and serve compile):
    the library's logits are [batch, 1, vocab], onnxruntime's last row for a batch of two 9-token
    prompts, and greedy generation from it gives onnxruntime's tokens. A model without logits is
    refused in one line."""
    onnx_path = model_file("hf_llama_past")
    library = str(tmp_path / "last.so")
    compiled = subprocess.run([ONNXC, "compile", onnx_path, "-o", library, "--logits=last", "--verbose"],
                              capture_output=True, text=True, timeout=TIMEOUT)
    assert compiled.returncode == 0, compiled.stderr
    assert "at the last position only (" in compiled.stdout and "MatMul" in compiled.stdout, compiled.stdout
    session = make_session(onnx_path, "all")
    rng = np.random.default_rng(5)
    feeds = {"input_ids": rng.integers(0, 384, (2, 9)).astype(np.int64),
             "attention_mask": np.ones((2, 9), np.int64), "position_ids": np.tile(np.arange(9), (2, 1))}
    for past in (i for i in session.get_inputs() if i.name.startswith("past_")):
        feeds[past.name] = np.zeros((2, past.shape[1], 0, past.shape[3]), np.float32)
    feeds = {name: value for name, value in feeds.items() if name in {i.name for i in session.get_inputs()}}
    command = [ONNXC, "run", library, "--output-dir", str(tmp_path / "out")]
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
        command += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "out" / "logits.npy")
    want = session.run(["logits"], feeds)[0][:, -1:, :]
    assert got.shape == want.shape == (2, 1, 384)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    ids, _, _ = generate(library, "--max-new-tokens", "16")
    assert ids == ort_greedy_with_cache(onnx_path, PROMPT, 16)
    refused = subprocess.run([ONNXC, "compile", os.path.join(MODEL_DIR, "hf_bert_op17.onnx"), "-o",
                              str(tmp_path / "bert.so"), "--logits=last"], capture_output=True, text=True,
                             timeout=TIMEOUT)
    assert refused.returncode != 0 and "--logits=last" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


@compiled_kernels
def test_llama_with_positions_and_grouped_kv_matches_onnxruntime(libraries):
    """LLaMA-style: rotary positions from position_ids (the generator counts them on from the
    cache's length) and a cache of 2 K/V heads for 4 query heads."""
    onnx_path, library = libraries["hf_llama_past"]
    ids, _, stderr = generate(library, "--max-new-tokens", str(NEW_TOKENS))
    assert "using the KV cache in place" in stderr and "positions 'position_ids'" in stderr, stderr
    want = ort_greedy_with_cache(onnx_path, PROMPT, NEW_TOKENS)
    print(f"onnxc: {ids}\nort:   {want}")
    assert ids == want
    assert len(set(ids)) > 8, "greedy tokens this repetitive would hide a broken cache"


@compiled_kernels
@pytest.mark.parametrize("name, pairs", [("attention_op23_past", "past_key_0 -> present_key_0"),
                                         ("torch_gpt_cache", "past_k_0 -> present_k_0")])
def test_explicit_cache_greedy_matches_onnxruntime(libraries, name, pairs):
    """The cache roles from the names alone (the Attention op's present_key_N of step t is its
    past_key_N at t + 1; a torch model's past_k_N/present_k_N likewise), with no mask or position
    input: 64 greedy tokens equal onnxruntime's loop over the same file."""
    onnx_path, library = libraries[name]
    ids, _, stderr = generate(library, "--max-new-tokens", str(NEW_TOKENS))
    assert "using the KV cache in place" in stderr, stderr
    assert f"4 cache pairs ({pairs}, ...), updated in place" in stderr, stderr
    assert "mask" not in stderr and "positions" not in stderr, stderr
    want = ort_greedy_with_cache(onnx_path, PROMPT, NEW_TOKENS)
    print(f"onnxc: {ids}\nort:   {want}")
    assert ids == want
    assert len(set(ids)) > 8, "greedy tokens this repetitive would hide a broken cache"


@pytest.mark.parametrize("name", CACHED)
def test_cached_models_declare_in_place_pairs(name, tmp_path):
    """Every cache of these decoders is a pair the runtime updates in place (model_abi.h's
    onnxc_cache_pair): present = Concat(past, new) read only by the fused attention, or the
    Attention op's own present. A rewrite that breaks the proof turns the feature off silently
    otherwise (the tokens would still match, through two buffers). At the pass level: -O3, every
    pass verified, to LLVM IR."""
    if PASS_LEVEL:
        problem, printed = lowered_with_output(ONNXC, model_file(name), str(tmp_path / "m.ll"), ["--explain"])
        assert problem is None, problem
        assert "4 KV cache pairs updated in place: " in printed, printed
        assert "keeps two buffers" not in printed, printed
        return
    # The pairs are decided when the model is planned, before LLVM: optimized LLVM IR is enough
    # (the machine code and the link were two thirds of this test's time, and the generation
    # tests above run these decoders' libraries).
    result = subprocess.run([ONNXC, "compile", model_file(name), "-o", str(tmp_path / "m.ll"), "--emit=llvm",
                             "--explain"], check=True, capture_output=True, text=True, timeout=TIMEOUT)
    assert "4 KV cache pairs updated in place: " in result.stdout, result.stdout
    assert "keeps two buffers" not in result.stderr, result.stderr


def flash_kernels(onnx_path: str, tmp_path) -> int:
    """How many Attention nodes the compiled code runs through the flash kernel: its steps are
    the functions named flash_attention in the emitted LLVM IR."""
    llvm = str(tmp_path / "model.ll")
    subprocess.run([ONNXC, "compile", onnx_path, "--emit=llvm", "-o", llvm], check=True, capture_output=True,
                   text=True, timeout=TIMEOUT)
    with open(llvm) as f:
        return len(re.findall(r"^define [^@]*@flash_attention(\.[0-9]+)?\(", f.read(), re.MULTILINE))


def test_op23_attention_with_4d_past_takes_the_flash_kernel(tmp_path):
    """Layer 0 of attention_op23_past passes 4-D Q/K/V with a 4-D past: the flash kernel reads the
    past in place."""
    assert flash_kernels(model_file("attention_op23_past"), tmp_path) >= 1


def test_op23_attention_with_3d_qkv_and_past_takes_the_flash_kernel(tmp_path):
    """Layer 1 passes 3-D Q/K/V (4 query heads over 2 key/value heads) with a 4-D past: the flash
    kernel reads the past in place there too."""
    assert flash_kernels(model_file("attention_op23_past"), tmp_path) == 2


def compile_fixed_cache_decoder(tmp_path, name: str, **options) -> str:
    """attention_op23_past's decoder rebuilt with opset 24's fixed-length cache, compiled."""
    import onnx
    from handbuilt_models import make_attention_op23_past

    onnx_path = str(tmp_path / f"{name}.onnx")
    onnx.save(make_attention_op23_past(fixed_length="max_len", **options), onnx_path)
    library = str(tmp_path / f"{name}.so")
    compiled = subprocess.run([ONNXC, "compile", onnx_path, "-o", library], check=True, capture_output=True,
                              text=True, timeout=TIMEOUT)
    assert "4 KV cache pairs in place" in compiled.stdout, compiled.stdout
    return library


@compiled_kernels
def test_opset24_fixed_length_cache_generates_the_growing_caches_tokens(libraries, tmp_path):
    """attention_op23_past's decoder, its weights, with opset 24's fixed-length cache
    (tests/models/handbuilt_models.py: present = TensorScatter(past, new, write_indices), Attention-24
    with nonpad_kv_seqlen): the generator feeds write_indices and sets the cache's symbolic length to
    its capacity; 64 greedy tokens equal onnxruntime's loop over the op23 model. With HF's inputs
    (a mask over the cache, a computed bool attn_mask composed with nonpad_kv_seqlen, position ids),
    prompts of three lengths run left-padded in one batch and each row gets its own tokens."""
    library = compile_fixed_cache_decoder(tmp_path, "fixed")
    ids, _, stderr = generate(library, "--max-new-tokens", str(NEW_TOKENS))
    assert "write indices 'write_indices'" in stderr and "of a fixed length (the capacity), updated in place" \
        in stderr, stderr
    op23_path, _ = libraries["attention_op23_past"]
    assert ids == ort_greedy_with_cache(op23_path, PROMPT, NEW_TOKENS)

    library = compile_fixed_cache_decoder(tmp_path, "fixed_masked", with_mask=True)
    prompts = [PROMPT, [5, 6], [7, 8, 9, 10, 11]]
    command = [ONNXC, "generate", library, "--max-new-tokens", "12", "--threads", "1"]
    for prompt in prompts:
        command += ["--prompt-ids", ",".join(map(str, prompt))]
    result = subprocess.run(command, check=True, capture_output=True, text=True, timeout=TIMEOUT)
    assert "mask 'attention_mask', positions 'position_ids', write indices" in result.stderr, result.stderr
    rows = [list(map(int, row.split(","))) for row in result.stdout.split()]
    assert rows == [ort_greedy_with_cache(op23_path, prompt, 12) for prompt in prompts]


@compiled_kernels
def test_full_sequence_greedy_matches_onnxruntime(libraries):
    onnx_path, library = libraries["hf_gpt2"]
    ids, _, stderr = generate(library, "--max-new-tokens", str(NEW_TOKENS))
    assert "re-running the full sequence" in stderr, stderr
    assert ids == ort_greedy_full(onnx_path, PROMPT, NEW_TOKENS)


@compiled_kernels
def test_stream_bench_and_eos(libraries):
    _, library = libraries["hf_gpt2_past"]
    ids, _, _ = generate(library, "--max-new-tokens", "20")
    streamed, stdout, stderr = generate(library, "--max-new-tokens", "20", "--stream", "--bench")
    assert streamed == ids
    bench = re.search(r"prefill ([0-9.]+) ms \(3 prompt tokens\), per token: median ([0-9.]+) ms over 19 steps",
                      stderr)
    assert bench, stderr
    print(stderr.strip())
    # Stopping at an end id: the output ends at its first occurrence (an id after the first
    # change, so that the stop is not at the first token).
    eos = next((token for token in ids if token != ids[0]), ids[0])
    stopped, _, _ = generate(library, "--max-new-tokens", "20", "--eos-id", str(eos))
    assert stopped == ids[:ids.index(eos) + 1]


@compiled_kernels
def test_sampling_is_seeded(libraries):
    _, library = libraries["hf_gpt2_past"]
    options = ("--max-new-tokens", "24", "--sample", "--temperature", "1.5", "--top-k", "40", "--top-p", "0.95")
    first, _, _ = generate(library, *options, "--seed", "1")
    again, _, _ = generate(library, *options, "--seed", "1")
    other, _, _ = generate(library, *options, "--seed", "2")
    assert first == again
    assert first != other
    assert all(0 <= token < 384 for token in first)


@compiled_kernels
def test_capacity_past_64_and_beyond_it(libraries):
    _, library = libraries["hf_gpt2_past"]
    full, _, _ = generate(library, "--max-new-tokens", "70")
    preset, _, _ = generate(library, "--max-new-tokens", "70", "--capacity", "72")
    assert preset == full and len(full) == 70
    _, _, stderr = generate(library, "--max-new-tokens", "70", "--capacity", "40", expect_failure=True)
    assert stderr.strip().splitlines()[-1] == (
        f"error: {library}: after 38 tokens: the sequence would grow to 41 positions, past the capacity of "
        "40 (the capacity option; by default prompt + max_new_tokens)"), stderr
    _, _, stderr = generate(library, "--capacity", "2", expect_failure=True)
    assert stderr.strip().splitlines()[-1] == (
        f"error: {library}: the prompt has 3 tokens but the capacity is 2 positions (the capacity option)")


@compiled_kernels
def test_onnx_is_compiled_in_process(libraries):
    onnx_path, library = libraries["hf_gpt2_past"]
    from_library, _, _ = generate(library, "--max-new-tokens", "8")
    from_onnx, _, stderr = generate(onnx_path, "--max-new-tokens", "8")
    assert from_onnx == from_library
    assert "using the KV cache" in stderr


@compiled_kernels
@pytest.mark.skipif(bool(os.environ.get("ONNXC_SANITIZE")),
                    reason="a sanitized model.so needs the sanitizers' runtimes in the program")
def test_c_program_linked_with_model_so_alone_generates(libraries, tmp_path):
    """examples/c/generate.c links the .so and nothing else (no -lonnxc_runtime: the library
    exports onnxc_generate.h), and generates what `onnxc generate` does."""
    import shutil
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        pytest.skip("no C compiler")
    _, library = libraries["hf_gpt2_past"]
    program = str(tmp_path / "generate")
    subprocess.run([compiler, f"-I{REPO}/runtime/include", f"{REPO}/examples/c/generate.c", library,
                    f"-Wl,-rpath,{os.path.dirname(library)}", "-o", program], check=True, timeout=120)
    linked = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    assert "onnxc_runtime" not in linked
    result = subprocess.run([program, ",".join(map(str, PROMPT)), "16"], capture_output=True,
                            text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    ids, _, _ = generate(library, "--max-new-tokens", "16")
    assert [int(token) for token in result.stdout.strip().split(",")] == ids

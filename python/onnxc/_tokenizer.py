"""onnxc.Tokenizer: text to token ids and back, through libonnxc_text's C API (onnxc_tokenizer.h).

    tok = onnxc.Tokenizer("model-folder")      # tokenizer.json, tokenizer.model, or a folder with one
    ids = tok.encode("Hello world")            # add_special_tokens=True, as HF tokenizers
    text = tok.decode(ids)                     # skip_special_tokens=True, as HF tokenizers

The bindings are ctypes on the C API rather than the nanobind module: the tokenizers live in a
shared library of their own (so a model.so never carries PCRE2, utf8proc or SentencePiece), the
command line and C programs call the same functions, and the package needs no rebuild of _onnxc.
"""

import ctypes
import os

__all__ = ["Tokenizer", "TokenStream"]

_ADD_SPECIAL_TOKENS = 1
_NO_TRUNCATION = 2
_KEEP_SPECIAL_TOKENS = 1

_library = None


def _find_library():
    """libonnxc_text.so: $ONNXC_TEXT_LIBRARY, else beside this file (the wheel and the build tree
    put it there), else wherever the dynamic loader finds it."""
    explicit = os.environ.get("ONNXC_TEXT_LIBRARY")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "libonnxc_text.so"), os.path.join(here, "lib", "libonnxc_text.so")):
        if os.path.isfile(candidate):
            return candidate
    return "libonnxc_text.so"


def _lib():
    global _library
    if _library is not None:
        return _library
    lib = ctypes.CDLL(_find_library())
    i64p = ctypes.POINTER(ctypes.c_int64)
    signatures = {
        "onnxc_tokenizer_last_error": (ctypes.c_char_p, []),
        "onnxc_tokenizer_create": (ctypes.c_void_p, [ctypes.c_char_p]),
        "onnxc_tokenizer_create_from_json": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_size_t]),
        "onnxc_tokenizer_destroy": (None, [ctypes.c_void_p]),
        "onnxc_tokenizer_encode": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                                  ctypes.c_uint32, ctypes.POINTER(i64p),
                                                  ctypes.POINTER(ctypes.c_size_t)]),
        "onnxc_tokenizer_free_ids": (None, [i64p]),
        "onnxc_tokenizer_decode": (ctypes.c_int, [ctypes.c_void_p, i64p, ctypes.c_size_t, ctypes.c_uint32,
                                                  ctypes.POINTER(ctypes.c_void_p),
                                                  ctypes.POINTER(ctypes.c_size_t)]),
        "onnxc_tokenizer_free_text": (None, [ctypes.c_void_p]),
        "onnxc_tokenizer_token_to_id": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_char_p]),
        "onnxc_tokenizer_vocab_size": (ctypes.c_int64, [ctypes.c_void_p]),
        "onnxc_token_stream_create": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_uint32]),
        "onnxc_token_stream_push": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64,
                                                   ctypes.POINTER(ctypes.c_void_p),
                                                   ctypes.POINTER(ctypes.c_size_t)]),
        "onnxc_token_stream_finish": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                                     ctypes.POINTER(ctypes.c_size_t)]),
        "onnxc_token_stream_destroy": (None, [ctypes.c_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    _library = lib
    return lib


def _error():
    from . import Error  # the one error type of the package
    return Error(_lib().onnxc_tokenizer_last_error().decode("utf-8", "replace"))


def _text_bytes(text, what):
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"{what} must be str or bytes, got {type(text).__name__}")


def _id_array(ids):
    values = [int(i) for i in ids]
    return (ctypes.c_int64 * max(len(values), 1))(*values), len(values)


class Tokenizer:
    """A tokenizer.json (HF tokenizers), a SentencePiece .model, or a model folder holding one."""

    def __init__(self, path):
        lib = _lib()
        self._handle = None
        text = os.fsencode(os.fspath(path))
        if b"\0" in text:
            raise ValueError("tokenizer path contains a NUL byte")
        handle = lib.onnxc_tokenizer_create(text)
        if not handle:
            raise _error()
        self._handle = handle

    @classmethod
    def from_str(cls, json_text):
        """A tokenizer from the text of a tokenizer.json."""
        self = cls.__new__(cls)
        self._handle = None
        data = _text_bytes(json_text, "json_text")
        handle = _lib().onnxc_tokenizer_create_from_json(data, len(data))
        if not handle:
            raise _error()
        self._handle = handle
        return self

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib().onnxc_tokenizer_destroy(self._handle)
            self._handle = None

    def encode(self, text, add_special_tokens=True, truncation=True):
        """The ids of `text`; `truncation=False` ignores the file's truncation and padding."""
        data = _text_bytes(text, "text")
        flags = (_ADD_SPECIAL_TOKENS if add_special_tokens else 0) | (0 if truncation else _NO_TRUNCATION)
        ids = ctypes.POINTER(ctypes.c_int64)()
        count = ctypes.c_size_t()
        if _lib().onnxc_tokenizer_encode(self._handle, data, len(data), flags, ctypes.byref(ids),
                                         ctypes.byref(count)) != 0:
            raise _error()
        try:
            return ids[:count.value] if count.value else []
        finally:
            _lib().onnxc_tokenizer_free_ids(ids)

    def decode(self, ids, skip_special_tokens=True):
        array, count = _id_array(ids)
        text = ctypes.c_void_p()
        length = ctypes.c_size_t()
        flags = 0 if skip_special_tokens else _KEEP_SPECIAL_TOKENS
        if _lib().onnxc_tokenizer_decode(self._handle, array, count, flags, ctypes.byref(text),
                                         ctypes.byref(length)) != 0:
            raise _error()
        try:
            return ctypes.string_at(text.value, length.value).decode("utf-8")
        finally:
            _lib().onnxc_tokenizer_free_text(text)

    def token_to_id(self, token):
        """The id of a token string, or None."""
        value = _lib().onnxc_tokenizer_token_to_id(self._handle, _text_bytes(token, "token"))
        return None if value < 0 else value

    @property
    def vocab_size(self):
        return _lib().onnxc_tokenizer_vocab_size(self._handle)

    def stream(self, skip_special_tokens=True):
        """A TokenStream: push ids one at a time, get text as characters complete."""
        return TokenStream(self, skip_special_tokens)


class TokenStream:
    """Streaming detokenization: put(id) returns the text that id completes ("" while a character
    split across tokens is partial); end() returns what is left."""

    def __init__(self, tokenizer, skip_special_tokens=True):
        self._tokenizer = tokenizer  # kept alive as long as the stream
        flags = 0 if skip_special_tokens else _KEEP_SPECIAL_TOKENS
        self._handle = _lib().onnxc_token_stream_create(tokenizer._handle, flags)
        if not self._handle:
            raise _error()

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib().onnxc_token_stream_destroy(self._handle)
            self._handle = None

    def _take(self, status, text, length):
        if status != 0:
            raise _error()
        return ctypes.string_at(text.value, length.value).decode("utf-8") if length.value else ""

    def put(self, token_id):
        text = ctypes.c_void_p()
        length = ctypes.c_size_t()
        status = _lib().onnxc_token_stream_push(self._handle, int(token_id), ctypes.byref(text),
                                                ctypes.byref(length))
        return self._take(status, text, length)

    def end(self):
        text = ctypes.c_void_p()
        length = ctypes.c_size_t()
        status = _lib().onnxc_token_stream_finish(self._handle, ctypes.byref(text), ctypes.byref(length))
        return self._take(status, text, length)

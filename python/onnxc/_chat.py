"""onnxc.ChatTemplate: a model's chat template rendered as HF transformers renders it, through
libonnxc_text's C API (onnxc_chat.h).

    chat = onnxc.ChatTemplate("model-folder")   # chat_template.jinja, or tokenizer_config.json's
    prompt = chat.apply([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    chat = onnxc.ChatTemplate.from_str("{% for m in messages %}...{% endfor %}", bos_token="<s>")

The interpreter is onnxc's own implementation of the Jinja subset chat templates use
(docs/TOKENIZERS.md); a template outside it is refused in one line naming the construct.
"""

import ctypes
import json
import os

from ._tokenizer import _find_library

__all__ = ["ChatTemplate"]

_library = None


def _lib():
    global _library
    if _library is not None:
        return _library
    lib = ctypes.CDLL(_find_library())
    signatures = {
        "onnxc_chat_template_last_error": (ctypes.c_char_p, []),
        "onnxc_chat_template_load": (ctypes.c_void_p, [ctypes.c_char_p]),
        "onnxc_chat_template_from_string": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_size_t]),
        "onnxc_chat_template_destroy": (None, [ctypes.c_void_p]),
        "onnxc_chat_template_apply": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                                     ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                                     ctypes.POINTER(ctypes.c_size_t)]),
        "onnxc_chat_template_free_text": (None, [ctypes.c_void_p]),
        "onnxc_chat_template_source": (ctypes.c_char_p, [ctypes.c_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    _library = lib
    return lib


def _error():
    from . import Error  # the one error type of the package
    return Error(_lib().onnxc_chat_template_last_error().decode("utf-8", "replace"))


def _json(value, what):
    try:
        # ensure_ascii=False keeps the UTF-8 bytes; the C side reads them as they are.
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be JSON-serializable: {e}") from None


class ChatTemplate:
    """The chat template of a model folder, a tokenizer_config.json or a .jinja file."""

    def __init__(self, path, **variables):
        self._handle = None
        text = os.fsencode(os.fspath(path))
        if b"\0" in text:
            raise ValueError("chat template path contains a NUL byte")
        handle = _lib().onnxc_chat_template_load(text)
        if not handle:
            raise _error()
        self._handle = handle
        self._variables = variables

    @classmethod
    def from_str(cls, template, **variables):
        """A template from its text; `variables` (e.g. bos_token="<s>") go into every apply()."""
        self = cls.__new__(cls)
        self._handle = None
        data = template.encode("utf-8", "surrogatepass") if isinstance(template, str) else bytes(template)
        handle = _lib().onnxc_chat_template_from_string(data, len(data))
        if not handle:
            raise _error()
        self._handle = handle
        self._variables = variables
        return self

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib().onnxc_chat_template_destroy(self._handle)
            self._handle = None

    @property
    def source(self):
        return _lib().onnxc_chat_template_source(self._handle).decode("utf-8")

    def apply(self, messages, add_generation_prompt=True, **variables):
        """The prompt text of `messages` (a list of {"role", "content", ...} dicts). Keyword
        arguments (tools=[...], date_string=...) are extra template variables, as in
        transformers' apply_chat_template(..., **kwargs)."""
        merged = {**self._variables, **variables}
        messages_json = _json(list(messages), "messages")
        variables_json = _json(merged, "variables") if merged else None
        text = ctypes.c_void_p()
        length = ctypes.c_size_t()
        if _lib().onnxc_chat_template_apply(self._handle, messages_json, variables_json,
                                            1 if add_generation_prompt else 0, ctypes.byref(text),
                                            ctypes.byref(length)) != 0:
            raise _error()
        try:
            return ctypes.string_at(text.value, length.value).decode("utf-8")
        finally:
            _lib().onnxc_chat_template_free_text(text)

"""Text in, text out for Model.generate: libonnxc_text's onnxc_text_generate (onnxc_text_generate.h)
through ctypes, driving a generator of the onnxc._onnxc module's runtime.

The loop (encode, generate, streaming detokenization, stop strings) is the C library's, the one the
command line and C programs run: this file only converts arguments and results. ctypes releases the
GIL for the call; the text callback takes it back for each piece.
"""

import ctypes

from . import _onnxc
from ._tokenizer import _ADD_SPECIAL_TOKENS, _KEEP_SPECIAL_TOKENS, _error, _lib, _text_bytes

_TEXT_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t,
                                  ctypes.c_void_p)


class _Options(ctypes.Structure):
    """onnxc_text_generate_options."""
    _fields_ = [("stop", ctypes.POINTER(ctypes.c_char_p)), ("num_stop", ctypes.c_int32),
                ("encode_flags", ctypes.c_uint32), ("decode_flags", ctypes.c_uint32),
                ("add_bos", ctypes.c_int32), ("bos_token_id", ctypes.c_int64),
                ("on_text", _TEXT_CALLBACK), ("user_data", ctypes.c_void_p)]


_declared = False


def _text_lib():
    global _declared
    lib = _lib()
    if not _declared:
        i64pp = ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))
        signatures = {
            "onnxc_text_generate": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                   ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.POINTER(ctypes.c_size_t), ctypes.c_int64,
                                                   ctypes.POINTER(_Options), ctypes.POINTER(ctypes.c_void_p)]),
            "onnxc_text_result_text": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int64,
                                                         ctypes.POINTER(ctypes.c_size_t)]),
            "onnxc_text_result_ids": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int64, i64pp]),
            "onnxc_text_result_prompt_ids": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int64, i64pp]),
            "onnxc_text_result_stop_index": (ctypes.c_int32, [ctypes.c_void_p, ctypes.c_int64]),
            "onnxc_text_result_destroy": (None, [ctypes.c_void_p]),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        _declared = True
    return lib


def _ids(lib, function, result, row):
    pointer = ctypes.POINTER(ctypes.c_int64)()
    count = function(result, row, ctypes.byref(pointer))
    return pointer[:count] if count > 0 else []


def generate_text(generator, tokenizer, prompts, stop, on_text, add_special_tokens, skip_special_tokens,
                  bos_token_id, add_bos):
    """[(text, ids, prompt_ids, stop_index)] per prompt. `generator` is an onnxc._onnxc.TextGenerator;
    `on_text(row, piece)` is called as text is decided."""
    lib = _text_lib()
    stops = [_text_bytes(s, "stop string") for s in stop]
    for i, s in enumerate(stops):
        if not s or b"\0" in s:
            from . import Error
            raise Error(f"stop string {i} is {'empty' if not s else 'holding a NUL byte'}")
    encoded = [_text_bytes(p, "prompt") for p in prompts]
    options = _Options()
    stop_array = (ctypes.c_char_p * max(len(stops), 1))(*stops)
    options.stop = ctypes.cast(stop_array, ctypes.POINTER(ctypes.c_char_p))
    options.num_stop = len(stops)
    options.encode_flags = _ADD_SPECIAL_TOKENS if add_special_tokens else 0
    options.decode_flags = 0 if skip_special_tokens else _KEEP_SPECIAL_TOKENS
    options.add_bos = -1 if add_bos is None or bos_token_id is None else int(bool(add_bos))
    options.bos_token_id = -1 if bos_token_id is None else int(bos_token_id)
    failure = []

    def piece(row, text, length, _):
        try:
            on_text(row, ctypes.string_at(text, length).decode("utf-8"))
            return 0
        except BaseException as e:  # noqa: B036 - re-raised below, after the C loop returns
            failure.append(e)
            return 1

    callback = _TEXT_CALLBACK(piece) if on_text is not None else _TEXT_CALLBACK()
    options.on_text = callback
    texts = (ctypes.c_char_p * len(encoded))(*encoded)
    lengths = (ctypes.c_size_t * len(encoded))(*[len(p) for p in encoded])
    result = ctypes.c_void_p()
    status = lib.onnxc_text_generate(tokenizer._handle, generator.address, _onnxc.text_generation_api(),
                                     texts, lengths, len(encoded), ctypes.byref(options), ctypes.byref(result))
    if failure:
        if result:
            lib.onnxc_text_result_destroy(result)
        raise failure[0]
    if status != 0:
        raise _error()
    try:
        rows = []
        for row in range(len(encoded)):
            length = ctypes.c_size_t()
            text = lib.onnxc_text_result_text(result, row, ctypes.byref(length))
            rows.append((ctypes.string_at(text, length.value).decode("utf-8"),
                         _ids(lib, lib.onnxc_text_result_ids, result, row),
                         _ids(lib, lib.onnxc_text_result_prompt_ids, result, row),
                         lib.onnxc_text_result_stop_index(result, row)))
        return rows
    finally:
        lib.onnxc_text_result_destroy(result)

"""onnxc from Python: compile an ONNX transformer model to native code and run it on numpy arrays.

    import onnxc
    model = onnxc.compile("model.onnx")        # JIT into this process; onnxc.load("model.so") for a library
    (hidden,) = model.run(None, {"input_ids": ids, "attention_mask": mask})   # onnxruntime's spelling
    hidden = model(input_ids=ids, attention_mask=mask)                         # or call it

See docs/PYTHON.md for the whole API.
"""

import os

from . import _onnxc
from ._model import Model, ValueInfo
from ._progress import CompileProgress, progress_reporter as _progress_reporter
from ._tokenizer import Tokenizer, TokenStream
from ._chat import ChatTemplate
from ._serve import Server, serve

#: The package's version: pyproject.toml's, which the build compiled into the module (the same one
#: `onnxc --version` prints).
__version__ = _onnxc.__version__

__all__ = ["__version__", "ChatTemplate", "CompileProgress", "Error", "Model", "ValueInfo", "Tokenizer", "TokenStream",
           "Server", "compile", "load", "dump", "explain", "serve"]

#: Every error onnxc reports: a bad model, an unsupported op, a missing or mistyped input, a failed
#: run. A subclass of RuntimeError; its message is the one line `onnxc` prints after "error: ".
Error = _onnxc.Error
Error.__module__ = "onnxc"


def _path(path, what):
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"{what} must be a path (str or os.PathLike), got {type(path).__name__}") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if "\0" in text:
        # The C++ side would see the path cut at the NUL: name it whole instead.
        raise ValueError(f"{what} path contains a NUL byte: {text.encode('unicode_escape').decode()}")
    return text


def _passes(passes):
    if passes is None:
        return []
    if isinstance(passes, str):
        return [name for name in passes.split(",") if name]
    return [str(name) for name in passes]


def _threads(threads):
    threads = 0 if threads is None else int(threads)
    if threads < 0:
        raise ValueError(f"threads must be >= 0 (0 = one per core), got {threads}")
    return threads


def _model_folder(path):
    """(model file, generate defaults, folder info) of a model folder (driver/ModelFolder: an
    onnxruntime-genai folder, an Optimum export, or one .onnx or .so with its tokenizer;
    docs/GENERATE.md), or None for a file."""
    if not os.path.isdir(path):
        return None
    folder = _onnxc.model_folder(path)
    defaults = {key: folder[key] for key in ("mapping", "bos_token_id", "pad_token_id", "add_bos_token",
                                             "max_length", "max_new_tokens", "top_k", "top_p", "temperature",
                                             "repetition_penalty", "do_sample") if folder[key] not in (None, "")}
    eos = folder["eos_token_ids"]
    if eos:
        defaults["eos_token_id"] = eos[0] if len(eos) == 1 else list(eos)
    return folder["model"], defaults, folder


def _with_folder(model, folder_info, defaults):
    """`model` with its folder's tokenizer, genai config and generate() defaults."""
    from ._tokenizer import Tokenizer
    model._generate_defaults = defaults
    model.folder = folder_info
    if folder_info["tokenizer"]:
        model.tokenizer = Tokenizer(folder_info["tokenizer"])
    config_path = os.path.join(os.path.dirname(folder_info["model"]), "genai_config.json")
    if folder_info["kind"] == "onnxruntime-genai" and os.path.isfile(config_path):
        import json
        with open(config_path) as f:
            model.genai_config = json.load(f)
    return model


def compile(model, opt_level=3, threads=0, output=None, header=None, mcpu="native", mattr="",
            passes=None, precision="f32", progress=None, logits=None):
    """Compiles MODEL (.onnx or .ir, or a model folder: an onnxruntime-genai folder, whose
    genai_config.json names the decoder and its roles, an Optimum export, or a folder of one .onnx
    and its tokenizer.json; the folder's tokenizer becomes Model.tokenizer and its configs' stop ids
    and search settings generate()'s defaults) and returns a runnable Model.

    Without `output` the code is JIT-compiled into this process (nothing is written, no C++
    compiler needed). With `output="model.so"` a shared library and its C header (`header`, default
    model.h) are written as by `onnxc compile`, and the returned Model runs that library.
    `threads` is the runtime's thread count per run (0: one per core). `opt_level` 0-3 and
    `passes` (a list or "a,b" of registered pass names, run after the level's pipeline) choose the
    passes; `mcpu` / `mattr` the target, as on the command line. `precision` is the arithmetic of
    the matrix products: "f32" (the default), "bf16" (operands rounded to bfloat16, sums in f32;
    its error bound is in docs/KERNEL_ACCURACY.md) or "auto" (bf16 where the CPU has AMX-BF16);
    `Model.precision` says which it compiled.

    `logits` is "all" (the logits at every position, as the model computes them) or "last" (the
    generator's form: [batch, 1, vocab] at the last position only, so the LM head runs on one row per
    prompt; `onnxc compile --logits=last`). The default is "last" for a model folder, which is
    compiled for generation, and "all" for a model file.

    `progress` is called with a `CompileProgress` (stage, detail, done, total, bytes) at every step
    of the compile: the passes, each node lowered, LLVM's functions, the link, and "done" with the
    size written. None (the default) draws a tqdm bar when tqdm is installed and stderr is a
    terminal or this runs in a notebook; False draws nothing. Ctrl-C, or an exception the callback
    raises, stops the compile at its next step: nothing is left written and the exception
    (KeyboardInterrupt) propagates.
    """
    path = _path(model, "model")
    if logits not in (None, "all", "last"):
        raise ValueError(f"logits={logits!r}: use 'all' or 'last'")
    folder = _model_folder(path)
    if folder is not None:
        # A model folder: its model, its tokenizer, and its configs as generate()'s defaults.
        model_path, defaults, info = folder
        if model_path.endswith(".so"):
            raise Error(f"{path}: the folder's model is a compiled library ({os.path.basename(model_path)}); "
                        "use onnxc.load")
        # An Optimum merged decoder is compiled for generation: its use_cache_branch built in as
        # true (the decoder with the cache, which also takes the prompt; driver/MergedDecoder.h).
        compiled = _compile(model_path, opt_level, threads, output, header, mcpu, mattr, passes,
                            precision, progress, generation=info["merged_decoder"],
                            last_logits=logits != "all")
        return _with_folder(compiled, info, defaults)
    return _compile(path, opt_level, threads, output, header, mcpu, mattr, passes, precision, progress,
                    last_logits=logits == "last")


def _compile(path, opt_level, threads, output, header, mcpu, mattr, passes, precision, progress,
             generation=False, last_logits=False):
    """compile() of one model file; `generation`: for the generator (driver/MergedDecoder.h);
    `last_logits`: the logits at the last position only (driver/LastPositionLogits.h)."""
    opt_level = int(opt_level)
    threads = _threads(threads)
    if output is None and header is not None:
        raise ValueError("header= applies only with output= (a compiled library)")
    if output is not None:
        output = _path(output, "output")
        header = "" if header is None else _path(header, "header")
    with _progress_reporter(progress) as reporter:
        if output is None:
            runner = _onnxc.compile_jit(path, opt_level, _passes(passes), mcpu, mattr,
                                        str(precision), threads, reporter, generation, last_logits)
            return Model(runner, source=path)
        _onnxc.compile_library(path, opt_level, _passes(passes), mcpu, mattr, str(precision),
                               output, header, reporter, generation, last_logits)
    # Not checked against this CPU here: the library may be for another machine (its
    # first run refuses a CPU without its features, as load() does).
    return Model(_onnxc.load(output, threads, check_cpu=False), source=path)


def load(library, threads=0):
    """Loads a model library written by `onnxc compile` (or compile(output=...)), or a folder holding
    one with its tokenizer.json (and configs), as compile() takes a model folder. Raises
    onnxc.Error naming the missing features when this CPU lacks one the library's code uses
    (`Model.cpu_features`)."""
    path = _path(library, "library")
    folder = _model_folder(path)
    if folder is not None:
        # A folder of one compiled model.so and its tokenizer (and configs).
        model_path, defaults, info = folder
        if not model_path.endswith(".so"):
            raise Error(f"{path}: the folder's model is {os.path.basename(model_path)}, not a compiled "
                        "library; use onnxc.compile")
        return _with_folder(Model(_onnxc.load(model_path, _threads(threads)), source=model_path), info,
                            defaults)
    return Model(_onnxc.load(path, _threads(threads)), source=path)


def dump(model, opt_level=2, passes=None):
    """The text IR of MODEL after the -O`opt_level` pipeline (and `passes`): `onnxc dump -O2`."""
    return _onnxc.dump(_path(model, "model"), int(opt_level), _passes(passes))


def explain(model, opt_level=2, passes=None):
    """What the passes did and why they left candidates alone: the lines `onnxc dump --stats
    --explain` prints, statistics first ("fuse-attention: 2 fused"), then one line per rejected
    candidate naming its node and the reason."""
    return _onnxc.explain(_path(model, "model"), int(opt_level), _passes(passes))

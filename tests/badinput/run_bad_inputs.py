#!/usr/bin/env python3
"""Feeds the files of make_bad_models.py to the onnxc tool and checks its answers.

Usage: run_bad_inputs.py ONNXC OUTDIR

A bad model or input must end in exit code 1 with exactly one non-empty stderr
line `error: ...` that names what is wrong (checked by keywords), and nothing
that looks like a crash report. A negative or >= 128 exit code is a crash; no
answer within 30 s is a hang. Prints one line per case, then
`bad input: N passed, N failed`; exits 1 if any case failed.
"""

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

import cli_cases
import promise_cases
import size_cases

TIMEOUT_SECONDS = 30

# Text that means the tool crashed or leaked an internal failure instead of
# reporting the problem as one line.
CRASH_MARKERS = ("traceback (most recent call last)", "terminate called", "segmentation fault",
                 "core dumped", "stack dump", "please submit a bug report", "what():",
                 "assertion", "addresssanitizer", "#0 0x")

# A keyword is a regex, or a tuple of regexes of which one must match.
Keyword = Union[str, tuple]


@dataclass
class Case:
    label: str
    argv: list[str]
    # Plain strings the error line must contain (file and value names).
    names: list[str] = field(default_factory=list)
    # Regexes (or tuples of alternatives) matched after `strip` is removed.
    keywords: list[Keyword] = field(default_factory=list)
    # "error": must fail with one error line. "lenient": may succeed, but a
    # failure must still be one error line. "custom": `check` decides.
    mode: str = "error"
    check: Optional[Callable[["Result"], Optional[str]]] = None
    # Removed from stderr before keyword matching so that, for example, the
    # word "cycle" in "cycle.onnx" does not count as explaining the cycle.
    strip: list[str] = field(default_factory=list)


@dataclass
class Result:
    code: Optional[int]
    stdout: str
    stderr: str


def run(argv: list) -> Result:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return Result(None, "", "")
    return Result(done.returncode, done.stdout, done.stderr)


def keyword_matches(keyword: Keyword, text: str) -> bool:
    choices = keyword if isinstance(keyword, tuple) else (keyword,)
    return any(re.search(choice, text, re.IGNORECASE) for choice in choices)


def describe_keyword(keyword: Keyword) -> str:
    return " or ".join(keyword) if isinstance(keyword, tuple) else keyword


def crash_problem(result: Result) -> Optional[str]:
    if result.code is None:
        return f"hang: no exit within {TIMEOUT_SECONDS} s"
    if result.code < 0 or result.code >= 128:
        return f"crash: exit code {result.code}"
    for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        lowered = text.lower()
        for marker in CRASH_MARKERS:
            if marker in lowered:
                return f"crash report on {stream} ({marker!r})"
    return None


def error_line_problem(case: Case, result: Result) -> Optional[str]:
    """Checks the one-line `error:` form and the case's keywords."""
    lines = result.stderr.splitlines()
    if len(lines) != 1 or not lines[0].strip():
        return f"stderr has {len(lines)} lines, expected exactly one: {result.stderr.strip()[:300]!r}"
    line = lines[0]
    if not line.startswith("error:") or not line[len("error:"):].strip():
        return f"stderr line does not start with 'error: ': {line[:300]!r}"
    text = line
    for word in case.strip:
        text = text.replace(word, "")
    missing = [name for name in case.names if name not in line]
    missing += [describe_keyword(k) for k in case.keywords if not keyword_matches(k, text)]
    if missing:
        return f"error line lacks {', '.join(repr(m) for m in missing)}: {line[:300]!r}"
    return None


def judge(case: Case, result: Result) -> Optional[str]:
    problem = crash_problem(result)
    if problem:
        return problem
    if case.mode == "custom":
        return case.check(result)
    if case.mode == "lenient" and result.code == 0:
        return None
    if result.code != 1:
        return f"exit code {result.code}, expected 1; stderr: {result.stderr.strip()[:200]!r}"
    return error_line_problem(case, result)


def model_cases(onnxc: str, out: Path, scratch: Path) -> list:
    # file -> keywords the error must contain besides the file name.
    expectations = {
        "truncated.onnx": [], "garbage.onnx": [], "empty.onnx": [],
        "bad_raw_data.onnx": ["W_short"], "negative_dim.onnx": ["W_negative"],
        "absurd_dim.onnx": ["W_absurd"],
        "cycle.onnx": ["cycle"],
        "missing_input.onnx": ["nowhere_defined"],
        "unknown_ops.onnx": ["FrobnicateTensor", "QuantumFlux"],
        "opset_too_old.onnx": ["opset", r"\b6\b"],
        "old_opset_unconvertible.onnx": ["bn_spatial", "BatchNormalization-7", "opset 13", "spatial"],
        "old_opset_unknown_ops.onnx": ["FrobnicateTensor", "QuantumFlux"],
        "batchnorm_bad_mode.onnx": ["norm", "training_mode"],
        "prelu_no_slope.onnx": ["leaky", "PRelu takes 2 inputs"],
        "quantize_blocked.onnx": ["quant_blocked", "3 blocks", "blocks of 2"],
        "quantize_zero_point_shape.onnx": ["quant_zero_point", "zero point", r"\[3\]",
                                           r"\[4\]"],
        "maxpool_indices.onnx": ["pool_argmax", "Indices output is not supported"],
        "averagepool_no_kernel.onnx": ["pool_nokernel", "kernel_shape"],
        "pad_wrap_before_19.onnx": ["pad_wrap", "wrap", "opset 17"],
        "resize_antialias_13.onnx": ["resize_aa", "antialias", "opset 13"],
        "convtranspose_output_padding.onnx": ["deconv", "output_padding"],
        "resize_huge_scale.onnx": ["resize_huge", "too large"],
        "flex_mod_two_outputs.onnx": ["flex_mod", "score_mod", "one input and one output"],
        "flex_heads_not_multiple.onnx": ["flex_heads", "not a multiple"],
        "flex_softmax_precision.onnx": ["flex_precision", "softmax_precision", "not a float type"],
        "causal_conv_activation.onnx": ["conv_state", "relu"],
        "linear_attention_rule.onnx": ["la_rule", "unknown update_rule 'retnet'"],
        "linear_attention_heads.onnx": ["la_heads", r"q_num_heads \(3\)", "multiple",
                                        r"kv_num_heads \(2\)"],
        "linear_attention_no_beta.onnx": ["la_beta", "'delta' needs beta"],
        "external/external_escape.onnx": ["W_escape", ("escap", "outside the model")],
        "external/external_absolute.onnx": ["W_absolute",
                                            ("absolute", "escap", "outside the model")],
        "external/external_missing.onnx": ["W_missing", "missing_weights.bin"],
    }
    unparsable = {"truncated.onnx", "garbage.onnx", "empty.onnx"}
    cases = []
    for relative, keywords in expectations.items():
        path = str(out / relative)
        name = Path(relative).name
        run_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
        cases.append(Case(f"run {name}", [onnxc, "run", path, "--output-dir", run_dir,
                                          "--backend=ref"], [name], keywords, strip=[path, name]))
        cases.append(Case(f"dump {name}", [onnxc, "dump", path], [name], keywords,
                          strip=[path, name]))
        # inspect reads a model without importing it: only unreadable files
        # must fail; the rest may be summarized, but must not crash.
        if name == "unknown_ops.onnx":
            cases.append(Case(f"inspect {name}", [onnxc, "inspect", path], mode="custom",
                              check=inspect_lists_unknown_ops))
        else:
            mode = "error" if name in unparsable else "lenient"
            cases.append(Case(f"inspect {name}", [onnxc, "inspect", path], [name], mode=mode))
    cases.append(Case("run does_not_exist.onnx",
                      [onnxc, "run", str(out / "does_not_exist.onnx"), "--output-dir",
                       str(scratch)], ["does_not_exist.onnx"]))
    return cases


def inspect_lists_unknown_ops(result: Result) -> Optional[str]:
    # DESIGN.md: inspect lists the unsupported ops, all of them.
    if result.code != 0:
        return f"inspect exit code {result.code}, expected 0: {result.stderr.strip()[:200]!r}"
    missing = [op for op in ("FrobnicateTensor", "QuantumFlux") if op not in result.stdout]
    return f"inspect output does not list {missing}" if missing else None


def relu_output_check(output_dir: str, source: np.ndarray) -> Callable:
    def check(result: Result) -> Optional[str]:
        if result.code != 0:
            return f"exit code {result.code}, expected 0: {result.stderr.strip()[:200]!r}"
        produced = Path(output_dir) / "y.npy"
        if not produced.exists():
            return f"no {produced.name} in the output folder"
        got = np.load(produced)
        want = np.maximum(source, 0)
        if got.dtype != want.dtype or got.shape != want.shape or not np.allclose(got, want):
            return f"y.npy is {got.dtype}{list(got.shape)}, not relu of the input"
        return None
    return check


def fortran_check(output_dir: str, source: np.ndarray) -> Callable:
    """Column-major input: refusing it is fine, and so is reading it right."""
    computed = relu_output_check(output_dir, source)

    def check(result: Result) -> Optional[str]:
        if result.code == 0:
            return computed(result)
        if result.code != 1:
            return f"exit code {result.code}, expected 1 or 0"
        return error_line_problem(Case("", [], keywords=["fortran"]), result)
    return check


def runtime_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """Models that parse but are wrong at a node: run must name the culprit."""
    culprits = {"gather_out_of_range.onnx": ["gather_oob"],
                "reshape_impossible.onnx": ["reshape_bad"],
                "split_mismatch.onnx": ["split_bad"],
                "string_initializer.onnx": ["word_table"],
                "duplicate_output.onnx": ["'y'"]}
    good_input = f"x={out / 'good_input.npy'}"
    cases = []
    for name, names in culprits.items():
        path = str(out / name)
        run_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
        cases.append(Case(f"run {name}", [onnxc, "run", path, "--input", good_input,
                                          "--output-dir", run_dir, "--backend=ref"],
                          [name] + names))
        # dump stops before evaluation, so a defect only the evaluator sees
        # (an index out of range) may legitimately pass it.
        cases.append(Case(f"dump {name}", [onnxc, "dump", path], [name], mode="lenient"))
    return cases


def gather_output_check(output_dir: str, ids: np.ndarray) -> Callable:
    def check(result: Result) -> Optional[str]:
        if result.code != 0:
            return f"exit code {result.code}, expected 0: {result.stderr.strip()[:200]!r}"
        produced = Path(output_dir) / "y.npy"
        if not produced.exists():
            return f"no {produced.name} in the output folder"
        got = np.load(produced)
        want = np.arange(24, dtype=np.float32).reshape(8, 3)[ids]
        if got.shape != want.shape or not np.array_equal(got, want):
            return f"y.npy is {got.dtype}{list(got.shape)}, not the gathered rows"
        return None
    return check


def bad_data_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """A valid model fed invalid index data: the compiled runs (JIT and a
    compiled .so) must fail the step with one error line naming the step and
    the indices input; the evaluator names the node."""
    model = str(out / "gather_ids.onnx")
    library = str(scratch / "gather_ids.so")

    def compiled(result: Result) -> Optional[str]:
        if result.code != 0 or not Path(library).exists():
            return f"compile exit code {result.code}: {result.stderr.strip()[:200]!r}"
        return None
    # Cases run in order: this one writes the library the "so" cases run.
    cases = [Case("compile gather_ids.onnx", [onnxc, "compile", model, "-o", library],
                  mode="custom", check=compiled)]
    good, bad = str(out / "good_ids.npy"), str(out / "bad_ids.npy")
    step_names = ["step 'Gather embed_lookup'", "'ids'"]
    for label, target, backend in (("jit", model, ["--backend=jit"]), ("so", library, []),
                                   ("ref", model, ["--backend=ref"])):
        output_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
        cases.append(Case(f"run gather_ids ({label}) with good ids (control)",
                          [onnxc, "run", target, "--input", f"ids={good}", "--output-dir",
                           output_dir] + backend, mode="custom",
                          check=gather_output_check(output_dir, np.load(good))))
        output_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
        names = ["embed_lookup"] if label == "ref" else step_names
        cases.append(Case(f"run gather_ids ({label}) with an out-of-range id",
                          [onnxc, "run", target, "--input", f"ids={bad}", "--output-dir",
                           output_dir] + backend, names, [r"out of range"],
                          strip=[bad, "bad_ids.npy"]))
    return cases


def expected_scatter_gather(model: str, values: np.ndarray) -> np.ndarray:
    if model == "scatternd_rows":
        mask = np.zeros((4, 3), dtype=np.float32)
        mask[values[:, 0]] = -1.0
        return mask
    scores = np.arange(12, dtype=np.float32).reshape(3, 4)
    return np.take_along_axis(scores, values % 4, axis=1)


def scatter_gather_check(output_dir: str, model: str, values: np.ndarray) -> Callable:
    def check(result: Result) -> Optional[str]:
        if result.code != 0:
            return f"exit code {result.code}, expected 0: {result.stderr.strip()[:200]!r}"
        produced = Path(output_dir) / "y.npy"
        if not produced.exists():
            return f"no {produced.name} in the output folder"
        got, want = np.load(produced), expected_scatter_gather(model, values)
        if got.shape != want.shape or not np.array_equal(got, want):
            return f"y.npy is {got.tolist()}, expected {want.tolist()}"
        return None
    return check


def scatter_gather_data_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """ScatterND / GatherElements fed indices out of range: JIT and .so fail
    naming the step and the indices input, the evaluator names the node and
    the index itself; in-range (also negative) indices give numpy's answer."""
    cases = []
    for model, node, op, name, bad_index in (("scatternd_rows", "mask_fill", "ScatterND",
                                              "rows", "index 4"),
                                             ("gather_elements_positions", "rel_pos",
                                              "GatherElements", "positions", "index -5")):
        path, library = str(out / f"{model}.onnx"), str(scratch / f"{model}.so")

        def compiled(result: Result, library=library) -> Optional[str]:
            if result.code != 0 or not Path(library).exists():
                return f"compile exit code {result.code}: {result.stderr.strip()[:200]!r}"
            return None
        cases.append(Case(f"compile {model}.onnx", [onnxc, "compile", path, "-o", library],
                          mode="custom", check=compiled))
        good, bad = str(out / f"good_{name}.npy"), str(out / f"bad_{name}.npy")
        for label, target, backend in (("jit", path, ["--backend=jit"]), ("so", library, []),
                                       ("ref", path, ["--backend=ref"])):
            output_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
            cases.append(Case(f"run {model} ({label}) with good {name} (control)",
                              [onnxc, "run", target, "--input", f"{name}={good}",
                               "--output-dir", output_dir] + backend, mode="custom",
                              check=scatter_gather_check(output_dir, model, np.load(good))))
            output_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
            names = [node, bad_index] if label == "ref" else [f"step '{op} {node}'", f"'{name}'"]
            cases.append(Case(f"run {model} ({label}) with an out-of-range index",
                              [onnxc, "run", target, "--input", f"{name}={bad}",
                               "--output-dir", output_dir] + backend, names, [r"out of range"],
                              strip=[bad, f"bad_{name}.npy"]))
    return cases


def kv_output_check(output_dir: str, out: Path, past_file: str, mask_file: str) -> Callable:
    def check(result: Result) -> Optional[str]:
        if result.code != 0:
            return f"exit code {result.code}, expected 0: {result.stderr.strip()[:300]!r}"
        produced = Path(output_dir) / "y.npy"
        if not produced.exists():
            return f"no {produced.name} in the output folder"
        x, past, mask = (np.load(out / name) for name in ("kv_x.npy", past_file, mask_file))
        keys = np.concatenate([past, x], axis=1)
        want = x @ keys.transpose(0, 2, 1) + mask[:, None, :]
        got = np.load(produced)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            return f"y.npy is {got.dtype}{list(got.shape)}, expected {list(want.shape)} scores plus the mask"
        return None
    return check


def kv_mask_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """A mask input whose length must be past + seq (the keys it is added to): one compiled
    .so, the JIT and the evaluator take a cache of 5 and an empty one, and refuse a mask of
    another length (also of length 1, which a broadcast would have stretched) naming it."""
    model, library = str(out / "kv_mask.onnx"), str(scratch / "kv_mask.so")

    def compiled(result: Result) -> Optional[str]:
        if result.code != 0 or not Path(library).exists():
            return f"compile exit code {result.code}: {result.stderr.strip()[:300]!r}"
        return None
    cases = [Case("compile kv_mask.onnx", [onnxc, "compile", model, "-o", library], mode="custom",
                  check=compiled)]
    for label, target, backend in (("jit", model, ["--backend=jit"]), ("so", library, []),
                                   ("ref", model, ["--backend=ref"])):
        def argv(past: str, mask: str, output_dir: str) -> list:
            return ([onnxc, "run", target, "--input", f"x={out / 'kv_x.npy'}", "--input", f"past={out / past}",
                     "--input", f"mask={out / mask}", "--output-dir", output_dir] + backend)
        for past, mask, what in (("kv_past.npy", "kv_mask.npy", "a cache of 5"),
                                 ("kv_empty_past.npy", "kv_short_mask.npy", "an empty cache")):
            output_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
            cases.append(Case(f"run kv_mask ({label}) with {what} (control)", argv(past, mask, output_dir),
                              mode="custom", check=kv_output_check(output_dir, out, past, mask)))
        for past, mask, what in (("kv_past.npy", "kv_long_mask.npy", "9 for past 5 + seq 3"),
                                 ("kv_past.npy", "kv_one_mask.npy", "1 for past 5 + seq 3"),
                                 ("kv_empty_past.npy", "kv_mask.npy", "8 for past 0 + seq 3")):
            output_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
            cases.append(Case(f"run kv_mask ({label}) with a mask of length {what}",
                              argv(past, mask, output_dir), ["'mask'"], [r"past", r"seq"],
                              strip=[str(out / past), str(out / mask)]))
    return cases


def npy_cases(onnxc: str, out: Path, scratch: Path) -> list:
    good = str(out / "good.onnx")

    # argv[4] is the NAME=FILE binding: stripped before keyword matching, since
    # "wrong_shape.npy" itself contains "shape".
    def run_with(binding: str) -> tuple:
        output_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
        argv = [onnxc, "run", good, "--input", binding, "--output-dir", output_dir,
                "--backend=ref"]
        return argv, output_dir

    cases = []
    argv, output_dir = run_with(f"x={out / 'good_input.npy'}")
    cases.append(Case("run good.onnx with a good input (control)", argv, mode="custom",
                      check=relu_output_check(output_dir, np.load(out / "good_input.npy"))))
    argv, _ = run_with(f"x={out / 'wrong_shape.npy'}")
    cases.append(Case("run wrong_shape.npy", argv,
                      keywords=[r"\bx\b", ("shape", "dim", r"4, 5", r"4x5")], strip=[argv[4]]))
    argv, _ = run_with(f"x={out / 'wrong_dtype.npy'}")
    cases.append(Case("run wrong_dtype.npy", argv,
                      keywords=[r"\bx\b", ("dtype", "i64", "int64", "type")], strip=[argv[4]]))
    argv, _ = run_with(f"x={out / 'not_npy.npy'}")
    cases.append(Case("run not_npy.npy", argv, ["not_npy.npy"]))
    argv, output_dir = run_with(f"x={out / 'fortran.npy'}")
    cases.append(Case("run fortran.npy", argv, mode="custom",
                      check=fortran_check(output_dir, np.load(out / "fortran.npy"))))
    argv, _ = run_with(f"x={out / 'no_such_file.npy'}")
    cases.append(Case("run missing .npy file", argv, ["no_such_file.npy"]))
    argv, _ = run_with(f"no_such_input={out / 'good_input.npy'}")
    cases.append(Case("run unknown input name", argv, ["no_such_input"]))
    return cases


def external_link_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """External data behind names that pass every path check (a hard link to
    a file outside the folder, a FIFO): refused once opened, never read or
    waited on."""
    expectations = {"external_hardlink.onnx": ["W_hardlink", "hardlinked.bin", "hard link"],
                    "external_fifo.onnx": ["W_fifo", "pipe.bin", "not a regular file"]}
    cases = []
    for name, names in expectations.items():
        path = str(out / "external" / name)
        run_dir = tempfile.mkdtemp(prefix="run_", dir=scratch)
        cases.append(Case(f"run {name}", [onnxc, "run", path, "--output-dir", run_dir,
                                          "--backend=ref"], [name] + names))
        cases.append(Case(f"dump {name}", [onnxc, "dump", path], [name] + names))
    return cases


def unchanged_check(keywords: list, files: dict) -> Callable:
    """One error line with `keywords`, and every file still holds its bytes
    (or, for None, was never created)."""
    def check(result: Result) -> Optional[str]:
        if result.code != 1:
            return f"exit code {result.code}, expected 1: {result.stderr.strip()[:200]!r}"
        problem = error_line_problem(Case("", [], keywords=keywords), result)
        if problem:
            return problem
        for path, before in files.items():
            now = path.read_bytes() if path.exists() else None
            if now != before:
                return f"{path.name} was written although compile refused"
        return None
    return check


def no_overwrite_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """Nothing the user has is overwritten or dropped: colliding output file
    names, and compile outputs that name the input model or each other (by
    any spelling: ./m.onnx, a symlink, a header that is the library)."""
    output_dir = scratch / "collision_out"
    cases = [Case("run output_collision.onnx (a/b and a_b)",
                  [onnxc, "run", str(out / "output_collision.onnx"), "--backend=ref",
                   "--output-dir", str(output_dir)], ["'a/b'", "'a_b'", "a_b.npy"])]
    # An output file that is an input's .npy (a_b.npy fed as x, then --output-dir beside it),
    # by its own name and through a symlink.
    folder = Path(tempfile.mkdtemp(prefix="run_over_input_", dir=scratch))
    np.save(folder / "a_b.npy", np.ones((2, 3), np.float32))
    (folder / "alias.npy").symlink_to("a_b.npy")
    for feed in ("a_b.npy", "alias.npy"):
        cases.append(Case(f"run output_collision.onnx --input x={feed} --output-dir beside it",
                          [onnxc, "run", str(out / "output_collision.onnx"), "--backend=ref",
                           "--input", f"x={folder / feed}", "--output-dir", str(folder)],
                          mode="custom",
                          check=unchanged_check([r"input 'x'"], {
                              folder / "a_b.npy": (folder / "a_b.npy").read_bytes()})))
    # Each case gets its own folder: m.onnx, link.so -> m.onnx, dangling.h ->
    # fresh.so (not there yet), so one overwrite cannot spoil the next case.
    def fresh_folder() -> Path:
        folder = Path(tempfile.mkdtemp(prefix="compile_", dir=scratch))
        (folder / "m.onnx").write_bytes((out / "good.onnx").read_bytes())
        (folder / "link.so").symlink_to("m.onnx")
        (folder / "dangling.h").symlink_to("fresh.so")
        return folder

    over_input = {"-o m.onnx": lambda f: ["-o", str(f / "m.onnx")],
                  "-o ./m.onnx": lambda f: ["-o", str(f / "." / "m.onnx")],
                  "-o a symlink to m.onnx": lambda f: ["-o", str(f / "link.so")],
                  "--header m.onnx": lambda f: ["-o", str(f / "lib.so"), "--header",
                                                str(f / "m.onnx")]}
    for label, argv in over_input.items():
        folder = fresh_folder()
        model = folder / "m.onnx"
        cases.append(Case(f"compile m.onnx {label}", [onnxc, "compile", str(model)] + argv(folder),
                          mode="custom",
                          check=unchanged_check([r"input model"], {model: model.read_bytes()})))
    # Over the external data file the weights were read from.
    for label, argv in {"-o weights.bin": lambda f: ["-o", str(f / "weights.bin")],
                        "--header weights.bin": lambda f: ["-o", str(f / "m.so"), "--header",
                                                           str(f / "weights.bin")]}.items():
        folder = Path(tempfile.mkdtemp(prefix="compile_external_", dir=scratch))
        for name in ("m.onnx", "weights.bin"):
            (folder / name).write_bytes((out / "external_good" / name).read_bytes())
        weights = folder / "weights.bin"
        cases.append(Case(f"compile external_good/m.onnx {label}",
                          [onnxc, "compile", str(folder / "m.onnx")] + argv(folder),
                          mode="custom", check=unchanged_check(
                              [r"external data file", "weights.bin"],
                              {weights: weights.read_bytes(), folder / "m.so": None})))
    one_file = {"--header = the library": lambda f: ["-o", str(f / "a.so"), "--header",
                                                     str(f / "a.so")],
                "-o a.h (the default header)": lambda f: ["-o", str(f / "a.h")],
                "--header a dangling link to the library":
                    lambda f: ["-o", str(f / "fresh.so"), "--header", str(f / "dangling.h")]}
    for label, argv in one_file.items():
        folder = fresh_folder()
        written = {folder / name: None for name in ("a.so", "a.h", "fresh.so")}
        cases.append(Case(f"compile {label}",
                          [onnxc, "compile", str(folder / "m.onnx")] + argv(folder),
                          mode="custom", check=unchanged_check([r"header"], written)))
    return cases


# A well-formed library whose descriptor claims an input of rank 3 with no
# dims: the signature was rebuilt from it (reading dims[0]) before any
# session checked it.
FORGED_DESCRIPTOR_C = r"""
#include "onnxc/model_abi.h"
static const onnxc_tensor_info inputs[1] = {{"x", ONNXC_F32, 3, 0, "[?, ?, ?]"}};
static const onnxc_model_descriptor model = {ONNXC_ABI_VERSION, "forged", 0, 0, 0, 1, inputs,
                                             0, 0, 0, 0, 0, 0};
const onnxc_model_descriptor *onnxc_descriptor(void) { return &model; }
"""


def forged_descriptor_cases(onnxc: str, folder: Path) -> list:
    compiler = shutil.which("cc")
    if not compiler:
        return []
    source, library = folder / "forged.c", folder / "forged.so"
    source.write_text(FORGED_DESCRIPTOR_C)
    include = Path(__file__).resolve().parents[2] / "runtime" / "include"
    built = subprocess.run([compiler, "-shared", "-fPIC", f"-I{include}", str(source), "-o",
                            str(library)], capture_output=True, text=True)
    if built.returncode != 0:
        return [Case("build forged.so", ["false"], mode="custom",
                     check=lambda result: f"cc failed: {built.stderr.strip()[:200]!r}")]
    return [Case(f"{command} forged.so (descriptor without dims)",
                 [onnxc, command, str(library)], ["forged.so", "'x'"], ["descriptor", "no dims"],
                 strip=[str(library)]) for command in ("run", "bench")]


def library_file_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """A model.so cut short, or not one at all, is refused with one line
    before dlopen maps it (a cut segment raised SIGBUS inside the loader)."""
    folder = Path(tempfile.mkdtemp(prefix="library_", dir=scratch))
    library, obj = folder / "whole.so", folder / "object.o"
    built = [subprocess.run([onnxc, "compile", str(out / "good.onnx"), "-o", str(path)] + extra,
                            capture_output=True, text=True, timeout=TIMEOUT_SECONDS).returncode
             for path, extra in ((library, []), (obj, ["--emit=obj"]))]
    if built != [0, 0] or not library.exists():
        return [Case("compile good.onnx for the library cases", ["false"], mode="custom",
                     check=lambda result: f"compile exit codes {built}")]
    data = library.read_bytes()
    files = {"cut_in_segment.so": (data[:4096], ["truncated"]),
             "cut_in_half.so": (data[: len(data) // 2], ["truncated"]),
             "cut_in_header.so": (data[:100], ["truncated"]),
             "empty.so": (b"", ["too short"]),
             "text.so": (b"this is not a library\n" * 10, ["not an elf"]),
             "relocatable.so": (obj.read_bytes(), ["not a shared object"])}
    cases = [Case("run whole.so (control)", [onnxc, "run", str(library), "--shape", "x=2x3"],
                  mode="custom",
                  check=lambda r: None if r.code == 0 else f"exit code {r.code}: {r.stderr!r}")]
    cases += forged_descriptor_cases(onnxc, folder)
    for name, (contents, keywords) in files.items():
        (folder / name).write_bytes(contents)
        for command in ("run", "bench"):
            cases.append(Case(f"{command} {name}", [onnxc, command, str(folder / name)], [name],
                              keywords, strip=[str(folder / name), name]))
    return cases


def compile_limit_cases(onnxc: str, out: Path, scratch: Path) -> list:
    """Shapes no compiled model can run with are refused when compiling (AOT
    and JIT), naming the value, instead of a model.so that fails every call."""
    # Shape inference may name the first result the negative dim reaches.
    expectations = {"negative_input_dim.ir": [("'x'", "'%y'"), "negative"],
                    "negative_unused_input_dim.ir": ["'x'", "negative"],
                    "rank9_input.onnx": ["'x'", "rank 9"],
                    "rank9_output.onnx": ["'y'", "rank 9"]}
    cases = []
    for name, names in expectations.items():
        path = str(out / name)
        library = str(scratch / (Path(name).stem + ".so"))
        cases.append(Case(f"compile {name}", [onnxc, "compile", path, "-o", library],
                          keywords=names, strip=[path, library]))
        if name.endswith(".onnx"):
            cases.append(Case(f"run {name} (jit)", [onnxc, "run", path], keywords=names,
                              strip=[path]))
    return cases


def huge_parameters_check(result: Result) -> Optional[str]:
    if result.code != 0:
        return f"inspect exit code {result.code}: {result.stderr.strip()[:200]!r}"
    if "parameters: 18446744073709551616 (64.0 EiB)" not in result.stdout:
        line = [l for l in result.stdout.splitlines() if l.startswith("parameters")]
        return f"inspect does not count 2^64 parameters: {line!r}"
    return None


def inspect_count_cases(onnxc: str, out: Path, scratch: Path) -> list:
    return [Case("inspect huge_parameters.onnx ([2^32, 2^32])",
                 [onnxc, "inspect", str(out / "huge_parameters.onnx")], mode="custom",
                 check=huge_parameters_check)]


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: run_bad_inputs.py ONNXC OUTDIR", file=sys.stderr)
        return 2
    onnxc, out = sys.argv[1], Path(sys.argv[2]).resolve()
    if not (out / "good.onnx").exists():
        print(f"{out}: no bad models here; run make_bad_models.py first", file=sys.stderr)
        return 2
    scratch = out / "runs"
    scratch.mkdir(exist_ok=True)
    passed = failed = 0
    cases = (model_cases(onnxc, out, scratch) + runtime_cases(onnxc, out, scratch)
             + bad_data_cases(onnxc, out, scratch)
             + scatter_gather_data_cases(onnxc, out, scratch) + npy_cases(onnxc, out, scratch)
             + kv_mask_cases(onnxc, out, scratch)
             + external_link_cases(onnxc, out, scratch) + no_overwrite_cases(onnxc, out, scratch)
             + library_file_cases(onnxc, out, scratch) + compile_limit_cases(onnxc, out, scratch)
             + inspect_count_cases(onnxc, out, scratch)
             + size_cases.cases(onnxc, out, scratch, Case)
             + cli_cases.cases(onnxc, out, scratch, Case, error_line_problem)
             + promise_cases.cases(onnxc, out, scratch, Case, error_line_problem))
    for case in cases:
        problem = judge(case, run(case.argv))
        if problem:
            failed += 1
            print(f"FAIL {case.label}: {problem}")
        else:
            passed += 1
            print(f"PASS {case.label}")
    print(f"bad input: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

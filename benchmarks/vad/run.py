"""Streaming silero-vad benchmark: onnxc vs onnxruntime (and OpenVINO), per 512-sample chunk, in one run.

    bash benchmarks/e2e/setup_peers.sh      # newest onnxruntime and OpenVINO in build/peers-venv
    .venv/bin/python benchmarks/vad/run.py [--peer-python build/peers-venv/bin/python]
                                           [--models silero_vad,silero_vad_16k_op15,silero_vad_openvino_16k]
                                           [--chunks 400] [--warmup 20] [--rounds 3] [--threads 1]

The models are the silero-vad wheel's (tests/controlflow/silero_vad.py fetches it from PyPI into
build/silero once): `silero_vad` is the file the wheel's OnnxWrapper loads by default (an If on
`sr` over its 8 and 16 kHz networks), `silero_vad_16k_op15` its opset-15 form and
`silero_vad_openvino_16k` the form it ships for OpenVINO (16 kHz only, no If). onnxc compiles the
same file with its input dims fixed on the command line (`--shape input=1x576 --shape
state=2x1x128`: the wheel's symbolic dims do not compile ahead of time) into
build/bench-vad/NAME.so; onnxruntime and OpenVINO run the wheel's file
as it is, as a user does (OpenVINO cannot read the two files with the If; its column says n/a).

Each engine streams --warmup + --chunks chunks of a synthetic signal (noise and voiced bursts) in a
process of its own (stream_runner.py): 512 new samples after 64 of context, the state output fed
back as the next state input, one thread (onnxc threads=1; onnxruntime intra_op_num_threads=1,
inter_op_num_threads=1; OpenVINO INFERENCE_NUM_THREADS=1), every call timed from Python, as a
streaming application calls it. Engines take turns, --rounds times; each one's figures are its
round with the lowest median. Printed per model: min and median ms per chunk of each engine, the
ratios onnxc / onnxruntime (below 1: onnxc is faster) and onnxc / OpenVINO, and the largest
difference of the speech probabilities from onnxruntime's over all the calls; then `onnxc bench`'s
figures for the same library without Python in the loop. Nothing is asserted: the machine is
shared; read the ratio.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "controlflow"))

import silero_vad as vad  # noqa: E402  (tests/controlflow/silero_vad.py)


def run(command: list, env=None) -> str:
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(os.path.basename(word) for word in command[:3])}: "
                           f"{vad.last_line(result.stderr)}")
    return result.stdout


def library_for(onnxc: str, model: str, workdir: str) -> str:
    """The library of MODEL with pinned input dims, compiled again when older than the onnxc
    binary."""
    stem = os.path.basename(model)[:-len(".onnx")]
    library = os.path.join(workdir, stem + ".so")
    if not os.path.exists(library) or os.path.getmtime(library) < os.path.getmtime(onnxc):
        start = time.time()
        vad.compile_so(onnxc, model, library, {"input": [1, 576], "state": [2, 1, 128], "sr": []})
        print(f"compiled {library} in {time.time() - start:.1f} s", flush=True)
    return library


def stream(python: str, engine: str, model: str, args, env=None) -> dict:
    out = run([python, os.path.join(HERE, "stream_runner.py"), engine, model, "--chunks", str(args.chunks),
               "--warmup", str(args.warmup), "--threads", str(args.threads)], env)
    data = json.loads(out.strip().splitlines()[-1])
    data["min_ms"] = min(data["times_ms"])
    data["median_ms"] = statistics.median(data["times_ms"])
    return data


def onnxc_bench(onnxc: str, model: str, library: str, threads: int, iters: int, workdir: str) -> str:
    """`onnxc bench` of the library on one mid-burst chunk with a zero state: no Python in the loop."""
    import onnx
    names = {value.name for value in onnx.load(model, load_external_data=False).graph.input}
    chunk = vad.framed(vad.speech_like_signal(20))[8:9]
    with tempfile.TemporaryDirectory(dir=workdir) as folder:
        inputs = []
        for name, value in (("input", chunk), ("state", np.zeros((2, 1, 128), np.float32)),
                            ("sr", np.array(16000, dtype=np.int64))):
            if name not in names:
                continue
            np.save(os.path.join(folder, name + ".npy"), value)
            inputs += ["--input", f"{name}={os.path.join(folder, name + '.npy')}"]
        out = run([onnxc, "bench", library, "--threads", str(threads), "--iters", str(iters)] + inputs)
    latency = re.search(r"min ([\d.]+) ms\s+median ([\d.]+) ms", out)
    return f"min {float(latency.group(1)):.4f} ms, median {float(latency.group(2)):.4f} ms" if latency else out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--build", default=os.path.join(REPO, "build"),
                        help="the build folder: its python/ has the onnxc package; the wheel goes to its silero/")
    parser.add_argument("--peer-python", default=os.path.join(REPO, "build", "peers-venv", "bin", "python"),
                        help="the Python whose onnxruntime (and OpenVINO) are timed")
    parser.add_argument("--models", default="silero_vad,silero_vad_16k_op15,silero_vad_openvino_16k")
    parser.add_argument("--chunks", type=int, default=400, help="timed chunks per round (512 samples, 32 ms)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed chunks streamed first")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if not os.path.exists(args.peer_python):
        raise SystemExit(f"no {args.peer_python}: run `bash benchmarks/e2e/setup_peers.sh` first "
                         "(it makes build/peers-venv with the newest onnxruntime and OpenVINO)")
    workdir = os.path.join(args.build, "bench-vad")
    os.makedirs(workdir, exist_ok=True)
    files = {os.path.basename(path)[:-len(".onnx")]: path for path in vad.fetch(args.build)}
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    missing = [n for n in names if n not in files]
    if missing:
        raise SystemExit(f"not in {vad.WHEEL}: {missing} (it has {sorted(files)})")
    has_openvino = subprocess.run([args.peer_python, "-c", "import openvino"], capture_output=True).returncode == 0
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"), PYTHONDONTWRITEBYTECODE="1")

    libraries = {name: library_for(args.onnxc, files[name], workdir) for name in names}
    print(f"silero-vad ({vad.WHEEL}), streaming 16 kHz chunks of 512 samples (+64 of context), state carried; "
          f"{args.threads} thread(s), {args.chunks} timed chunks after {args.warmup}, best of {args.rounds} rounds")
    header = (f"{'model':<24} | {'onnxc min':>9} {'median':>7} | {'ORT min':>8} {'median':>7} | {'ratio':>5} |"
              f" {'OV min':>7} {'median':>7} | {'ratio':>5} | prob diff")
    notes, versions = [], set()
    rows = []
    for name in names:
        best = {}
        for _ in range(args.rounds):
            for engine, python, model, extra in (("onnxc", sys.executable, libraries[name], env),
                                                 ("onnxruntime", args.peer_python, files[name], None),
                                                 ("openvino", args.peer_python, files[name], None)):
                if engine == "openvino" and (not has_openvino or best.get("openvino") == "n/a"):
                    continue
                try:
                    result = stream(python, engine, model, args, extra)
                except RuntimeError as error:
                    if engine != "openvino":
                        raise
                    best["openvino"] = "n/a"
                    notes.append(f"{name}: OpenVINO cannot run {os.path.basename(model)}: {error}")
                    continue
                versions.add(result["version"])
                if engine not in best or result["median_ms"] < best[engine]["median_ms"]:
                    best[engine] = result
        ours, theirs, vino = best["onnxc"], best["onnxruntime"], best.get("openvino")
        diff = float(np.abs(np.array(ours["probabilities"]) - np.array(theirs["probabilities"])).max())
        line = (f"{name:<24} | {ours['min_ms']:>9.4f} {ours['median_ms']:>7.4f} | {theirs['min_ms']:>8.4f}"
                f" {theirs['median_ms']:>7.4f} | {ours['median_ms'] / theirs['median_ms']:>5.2f} |")
        if isinstance(vino, dict):
            line += (f" {vino['min_ms']:>7.4f} {vino['median_ms']:>7.4f} |"
                     f" {ours['median_ms'] / vino['median_ms']:>5.2f} |")
        else:
            line += f" {'n/a':>7} {'':>7} | {'':>5} |"
        rows.append(line + f" {diff:.1e}")
        notes.append(f"{name}: probability {min(theirs['probabilities']):.3f}..{max(theirs['probabilities']):.3f};"
                     f" onnxc .so load {ours['load_ms']:.1f} ms, ORT session {theirs['load_ms']:.1f} ms;"
                     f" `onnxc bench` (no Python) {onnxc_bench(args.onnxc, files[name], libraries[name], args.threads, args.chunks, workdir)}")
    print("peers: " + ", ".join(sorted(v for v in versions if v != "onnxc")))
    print("ms per chunk; ratio = onnxc median / the peer's median (below 1: onnxc is faster)")
    print(header)
    print("\n".join(rows))
    print("\n" + "\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

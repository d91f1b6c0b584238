"""Attention benchmark: onnxc's fused attention kernel vs onnxruntime on the same subgraph, in one run.

    .venv/bin/python benchmarks/attention/run.py [--onnxc build/tools/onnxc] [--seqs 512,2048]
                                                [--heads 12] [--head-size 64] [--iters 10]
                                                [--onnxc-model auto|exported|attention]

The subgraph is written the way a torch export writes attention (opset 17): Q, K, V inputs
f32 [1, heads, seq, head_size], MatMul(Q, Transpose(K, perm 0,1,3,2)) -> Div by sqrt(head_size)
-> [Add of the causal mask Trilu(ConstantOfShape([seq, seq], -inf), k=1, upper), with seq read
from Q's Shape, as torch's Transformer writes it] -> Softmax(-1) -> MatMul(V).
The same computation is also written with the opset-23 Attention op (is_causal for the causal
case). onnxruntime (all graph optimizations, sequential, the given threads) runs the exported
subgraph; onnxc compiles the exported subgraph when its -O2 pipeline fuses it into an Attention
op (--onnxc-model auto, the default), else the Attention-op model; the table says which ran.

For every S, mask and thread count it prints onnxc's and ORT's min / median latency, the ratio
(onnxc / ORT, below 1 means onnxc is faster), onnxc's throughput in GFLOP/s and as a fraction of
--peak-gflops per thread (the useful work: 4 * heads * head_size * the visible (query, key) pairs;
causal counts S(S+1)/2 pairs), each side's peak resident memory (VmHWM of its own process) and
the largest absolute difference between the outputs. Then, per S, onnxc's causal / non-causal
latency. Each side runs in a process of its own on identical .npy inputs; timings are not
asserted anywhere (the machine is shared: read the ratios).

--clock cpu (for a loaded machine) times every run by its process's CPU time instead
(cpu_timer.py: ORT as above, onnxc's .so through its C API): time spent descheduled while other
work shares the core is not counted. With one thread, the min is close to the latency of a quiet
core (the other load still disturbs the caches).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "benchmarks", "e2e"))

from run import onnxc_bench, ort_bench, run  # noqa: E402  (benchmarks/e2e/run.py)


def value_info(name: str, heads: int, size: int):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, heads, "seq", size])


def exported_model(path: str, heads: int, size: int, causal: bool) -> None:
    """MatMul(Q, Kᵀ) -> Div -> [Add mask] -> Softmax -> MatMul(V), as torch.onnx writes it."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="attn/Transpose"),
             helper.make_node("MatMul", ["q", "kt"], ["scores"], name="attn/MatMul"),
             helper.make_node("Div", ["scores", "sqrt_d"], ["scaled"], name="attn/Div")]
    initializers = [numpy_helper.from_array(np.array(np.sqrt(size), dtype=np.float32), "sqrt_d")]
    logits = "scaled"
    if causal:
        initializers += [numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
                         numpy_helper.from_array(np.array([3], dtype=np.int64), "three"),
                         numpy_helper.from_array(np.array(1, dtype=np.int64), "one")]
        minus_inf = numpy_helper.from_array(np.array([-np.inf], dtype=np.float32), "minus_inf")
        nodes += [helper.make_node("Shape", ["q"], ["q_shape"], name="mask/Shape"),
                  helper.make_node("Slice", ["q_shape", "two", "three"], ["seq"], name="mask/Slice"),
                  helper.make_node("Concat", ["seq", "seq"], ["square"], axis=0, name="mask/Concat"),
                  helper.make_node("ConstantOfShape", ["square"], ["full"], value=minus_inf,
                                   name="mask/ConstantOfShape"),
                  helper.make_node("Trilu", ["full", "one"], ["causal_mask"], upper=1, name="mask/Trilu"),
                  helper.make_node("Add", ["scaled", "causal_mask"], ["masked"], name="attn/Add")]
        logits = "masked"
    nodes += [helper.make_node("Softmax", [logits], ["probs"], axis=-1, name="attn/Softmax"),
              helper.make_node("MatMul", ["probs", "v"], ["y"], name="attn/MatMul_1")]
    graph = helper.make_graph(nodes, "attention_subgraph",
                              [value_info(n, heads, size) for n in ("q", "k", "v")],
                              [value_info("y", heads, size)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="benchmarks/attention")
    model.ir_version = 8
    onnx.save(model, path)


def attention_op_model(path: str, heads: int, size: int, causal: bool) -> None:
    """The opset-23 Attention op on the same 4-D inputs."""
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=int(causal),
                            scale=float(1.0 / np.sqrt(size)), name="attn/Attention")
    graph = helper.make_graph([node], "attention_op",
                              [value_info(n, heads, size) for n in ("q", "k", "v")],
                              [value_info("y", heads, size)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)],
                              producer_name="benchmarks/attention")
    model.ir_version = 10
    onnx.save(model, path)


def fuses_attention(onnxc: str, model: str) -> bool:
    """Whether onnxc's -O2 pipeline turns the exported subgraph into one Attention op."""
    ir = run([onnxc, "dump", model, "-O2"])
    return re.search(r"=\s*Attention\(", ir) is not None and "Softmax(" not in ir


def max_difference(onnxc: str, library: str, inputs: list, ort_outputs: str, workdir: str) -> float:
    out_dir = os.path.join(workdir, "onnxc_out")
    run([onnxc, "run", library, "--output-dir", out_dir] + inputs)
    got = np.load(os.path.join(out_dir, "y.npy")).astype(np.float64)
    return float(np.abs(got - np.load(ort_outputs)["y"]).max())


def cpu_bench(side: str, model: str, inputs: list, threads: int, iters: int) -> dict:
    """min / median CPU time per run and peak memory of one side (cpu_timer.py)."""
    out = run([sys.executable, os.path.join(HERE, "cpu_timer.py"), side, model, "--threads", str(threads),
               "--iters", str(iters)] + inputs)
    data = json.loads(out.strip().splitlines()[-1])
    times = sorted(data["times_ms"])
    return {"min_ms": times[0], "median_ms": times[len(times) // 2], "peak_mib": data["peak_mib"]}


def useful_gflop(heads: int, seq: int, size: int, causal: bool) -> float:
    pairs = seq * (seq + 1) // 2 if causal else seq * seq
    return 4.0 * heads * size * pairs / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--seqs", default="512,2048")
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--head-size", type=int, default=64)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--masks", default="none,causal")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--onnxc-model", choices=["auto", "exported", "attention"], default="auto")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    parser.add_argument("--peak-gflops", type=float, default=102.0, help="FMA peak of one core")
    parser.add_argument("--workdir", default=os.path.join(REPO, "build", "bench-attention"))
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    heads, size = args.heads, args.head_size

    print(f"{'S':>5} {'mask':<6} {'thr':>3} {'onnxc ran':<9} | {'onnxc min':>9} {'median':>8} |"
          f" {'ORT min':>8} {'median':>8} | {'ratio':>5} | {'GFLOP/s':>7} {'of peak':>7} |"
          f" {'onnxc MiB':>9} {'ORT MiB':>8} | max |diff|", flush=True)
    notes, minimum = [], {}
    for seq in [int(s) for s in args.seqs.split(",")]:
        rng = np.random.default_rng(seq)
        for causal in [m.strip() == "causal" for m in args.masks.split(",")]:
            tag = f"s{seq}_{'causal' if causal else 'full'}"
            exported = os.path.join(args.workdir, f"exported_{tag}.onnx")
            attention = os.path.join(args.workdir, f"attention_{tag}.onnx")
            exported_model(exported, heads, size, causal)
            attention_op_model(attention, heads, size, causal)
            choice = args.onnxc_model
            if choice == "auto":
                choice = "exported" if fuses_attention(args.onnxc, exported) else "attention"
            library = os.path.join(args.workdir, f"onnxc_{tag}.so")
            run([args.onnxc, "compile", exported if choice == "exported" else attention, "-o", library])
            with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
                inputs = []
                for name in ("q", "k", "v"):
                    path = os.path.join(workdir, f"{name}.npy")
                    np.save(path, rng.standard_normal((1, heads, seq, size), dtype=np.float32))
                    inputs += ["--input", f"{name}={path}"]
                for threads in [int(t) for t in args.threads.split(",")]:
                    ort_outputs = os.path.join(workdir, "ort.npz")
                    try:
                        theirs = ort_bench(exported, inputs, threads, args.iters, ort_outputs)
                        ours = onnxc_bench(args.onnxc, library, inputs, threads, args.iters)
                        diff = max_difference(args.onnxc, library, inputs, ort_outputs, workdir)
                        if args.clock == "cpu":
                            theirs = cpu_bench("ort", exported, inputs, threads, args.iters)
                            ours = cpu_bench("onnxc", library, inputs, threads, args.iters)
                    except RuntimeError as error:
                        notes.append(f"S {seq} {tag} threads {threads}: {str(error).splitlines()[-1]}")
                        continue
                    minimum[(seq, causal, threads)] = ours["min_ms"]
                    gflops = useful_gflop(heads, seq, size, causal) / (ours["min_ms"] / 1e3)
                    print(f"{seq:>5} {'causal' if causal else 'none':<6} {threads:>3} {choice:<9} |"
                          f" {ours['min_ms']:>9.2f} {ours['median_ms']:>8.2f} |"
                          f" {theirs['min_ms']:>8.2f} {theirs['median_ms']:>8.2f} |"
                          f" {ours['min_ms'] / theirs['min_ms']:>5.2f} |"
                          f" {gflops:>7.1f} {gflops / (args.peak_gflops * threads):>6.0%} |"
                          f" {ours['peak_mib']:>9.1f} {theirs['peak_mib']:>8.1f} | {diff:.2e}", flush=True)
    for (seq, causal, threads), ms in sorted(minimum.items()):
        full = minimum.get((seq, False, threads))
        if causal and full:
            notes.append(f"S {seq} threads {threads}: onnxc causal / non-causal = {ms / full:.2f}")
    notes.append("GFLOP/s counts 4 * heads * head_size flops per visible (query, key) pair")
    print("\n" + "\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

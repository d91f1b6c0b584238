"""Weight-only quantized models (int4 / int8 weights, f32 activations) through `onnxc run`, the
reference evaluator and the JIT, against onnxruntime on the same file.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/models/test_int4_models.py -v

- com.microsoft MatMulNBits graphs built here: bits 4 and 8; block sizes 16, 32, 128; K a
  multiple of the block and not; zero points absent, packed uint8 and float; a bias; a trivial
  g_idx; accuracy_level 0 and 4 (onnxruntime's CPU kernel then quantizes A to int8 per block,
  which onnxc's import writes out: without it the level-4 outputs would differ by about 1%);
  A of 1 row, 7 rows, a 3-D batch and 40 rows (a prompt: on the GEMM at level 0, in tasks of 16
  rows at level 4). All of them are nodes of ONE model (one input and one
  output each), so each backend compiles once.
- GatherBlockQuantized (int4 data, uint4 data with zero points, uint8 data holding packed
  4-bit values) and MatMulBnb4 (FP4 and NF4) in a second model.
- A tied int4 LM head as onnxruntime-genai's builder writes it: the head's MatMulNBits weights,
  Reshaped, are the embedding's GatherBlockQuantized table.
- onnxruntime's own MatMulNBitsQuantizer (block 32, symmetric and not; its MatMulNBits form and
  its QDQ form, int4 initializers -> blocked DequantizeLinear -> MatMul at opset 21) applied to
  the zoo's HF LLaMA export (hf_llama_op17), the last hidden state compared.
- `onnxc dump --format=onnx` of the QDQ model keeps its int4 initializers and runs in
  onnxruntime with the same outputs.

The weights are dequantized exactly (integers times scales), so the outputs agree to f32
summation order: the bound is 1e-5 of the output's range (2e-5 where A is quantized to int8,
whose per-block sums onnxruntime adds in a different order).
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC") or os.path.join(REPO, "build", "tools", "onnxc", "onnxc")
OPSETS = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
# A sanitized build checks the importer and the reference evaluator; ASan cannot see into the
# kernels the JIT emits.
BACKENDS = ["ref"] if os.environ.get("ONNXC_SANITIZE") else ["ref", "jit"]


def pack(values: np.ndarray, bits: int) -> np.ndarray:
    """Rows of small unsigned integers packed `bits` at a time, low bits first."""
    per_byte = 8 // bits
    rows, length = values.shape
    padded = np.zeros((rows, -(-length // per_byte) * per_byte), np.uint8)
    padded[:, :length] = values
    grouped = padded.reshape(rows, -1, per_byte).astype(np.uint16)
    shifts = (np.arange(per_byte) * bits).astype(np.uint16)
    return (grouped << shifts).sum(axis=2).astype(np.uint8)


# (name, bits, block, K, N, zero points, bias, accuracy_level, A shape without K, g_idx)
NBITS_CASES = [
    ("b4_k64_bs16", 4, 16, 64, 24, "none", False, 0, [1], False),
    ("b4_k200_bs32_zp", 4, 32, 200, 40, "packed", True, 0, [7], False),
    ("b4_k300_bs128_zp", 4, 128, 300, 17, "packed", False, 0, [2, 3], False),
    # 40 rows: a prompt, on the f32 GEMM over the dequantized panels.
    ("b4_k200_bs32_zp_m40", 4, 32, 200, 40, "packed", False, 0, [2, 20], False),
    ("b4_k96_bs32_fzp", 4, 32, 96, 16, "float", False, 0, [7], False),
    # onnxruntime 1.23.2 reads no packed zero points when a g_idx is given (its reorder path
    # takes 8); the op's definition and onnxc apply them, so g_idx goes without or with float.
    ("b4_k96_bs32_gidx", 4, 32, 96, 16, "none", False, 0, [7], True),
    ("b4_k96_bs32_fzp_gidx", 4, 32, 96, 16, "float", True, 4, [1], True),
    ("b8_k100_bs16", 8, 16, 100, 24, "none", True, 0, [7], False),
    ("b8_k256_bs128_zp", 8, 128, 256, 20, "packed", False, 0, [1], False),
    ("b4_k200_bs32_l4", 4, 32, 200, 40, "packed", True, 4, [7], False),
    # A prompt at accuracy_level 4: tasks of 16 rows (three row chunks) by column chunks.
    ("b4_k200_bs32_l4_m40", 4, 32, 200, 40, "packed", False, 4, [2, 20], False),
    ("b4_k64_bs16_l4", 4, 16, 64, 24, "none", False, 4, [1], False),
    ("b4_k300_bs128_l4", 4, 128, 300, 17, "none", False, 4, [2, 3], False),
    ("b8_k100_bs16_l4", 8, 16, 100, 24, "packed", False, 4, [7], False),
    ("b4_k96_bs32_fzp_l4", 4, 32, 96, 16, "float", False, 4, [1], False),
    # Wide enough for 16 column chunks of uneven size (85 panels of 16 in 22 groups of 4, the
    # last panel short): one row, and three rows of the multi-row kernel.
    ("b4_k64_bs32_n1349", 4, 32, 64, 1349, "packed", False, 0, [1], False),
    ("b4_k64_bs32_n1349_m3", 4, 32, 64, 1349, "none", True, 0, [3], False),
]
WIDE_CASES = [c for c in NBITS_CASES if c[4] > 1000]


def nbits_node(case, rng, initializers):
    name, bits, block, k, n, zp_kind, bias, level, lead, g_idx = case
    blocks = -(-k // block)
    q = rng.integers(0, 2**bits, (n, k))
    padded = np.zeros((n, blocks * block), np.int64)
    padded[:, :k] = q
    b = pack(padded.reshape(n * blocks, block), bits).reshape(n, blocks, block * bits // 8)
    inputs = [f"a_{name}", f"{name}_b", f"{name}_s"]
    initializers += [numpy_helper.from_array(b, f"{name}_b"),
                     numpy_helper.from_array((rng.random(n * blocks) * 0.05 + 0.01).astype(np.float32),
                                             f"{name}_s")]
    zero_points = rng.integers(0, 2**bits, (n, blocks))
    if zp_kind == "packed":
        initializers.append(numpy_helper.from_array(pack(zero_points, bits), f"{name}_z"))
        inputs.append(f"{name}_z")
    elif zp_kind == "float":
        initializers.append(numpy_helper.from_array(
            (zero_points + rng.random((n, blocks))).astype(np.float32), f"{name}_z"))
        inputs.append(f"{name}_z")
    if g_idx or bias:
        inputs += [""] * (4 - len(inputs))
        inputs.append(f"{name}_g" if g_idx else "")
        if g_idx:
            initializers.append(numpy_helper.from_array((np.arange(k) // block).astype(np.int32),
                                                        f"{name}_g"))
    if bias:
        inputs.append(f"{name}_bias")
        initializers.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32),
                                                    f"{name}_bias"))
    node = helper.make_node("MatMulNBits", inputs, [f"y_{name}"], name=name, domain="com.microsoft",
                            K=k, N=n, bits=bits, block_size=block, accuracy_level=level)
    return (node, helper.make_tensor_value_info(f"a_{name}", TP.FLOAT, lead + [k]),
            helper.make_tensor_value_info(f"y_{name}", TP.FLOAT, lead + [n]))


def save(graph, path, opsets=OPSETS):
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10  # onnxruntime 1.23 reads up to 10
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def run_onnxruntime(path, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    # The file as written: onnxruntime's optimizer would fuse a QDQ graph's blocked
    # DequantizeLinear -> MatMul into MatMulNBits at accuracy_level 4
    # (session.qdq_matmulnbits_accuracy_level), i.e. int8 activations, 0.7% away here.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def run_onnxc(path, feeds, backend, scratch, threads=None):
    out = os.path.join(scratch, f"out_{backend}_{threads}_{os.path.basename(path)}")
    os.makedirs(out, exist_ok=True)
    args = [ONNXC, "run", path, "--backend=" + backend, "--output-dir", out]
    if threads:
        args.append(f"--threads={threads}")
    for name, value in feeds.items():
        file = os.path.join(scratch, f"{name.replace('/', '_')}.npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}


def compare(got, want, bound, label):
    scale = max(np.abs(want).max(), 1e-6)
    error = np.abs(got.astype(np.float64) - want).max() / scale
    print(f"{label}: max error {error:.2e} of the range {scale:.3g}")
    assert got.shape == want.shape, label
    assert error <= bound, f"{label}: error {error:.3g} of the output range (bound {bound})"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return str(tmp_path_factory.mktemp("int4"))


@pytest.fixture(scope="module")
def nbits_model(scratch):
    rng = np.random.default_rng(29)
    nodes, inputs, outputs, initializers = [], [], [], []
    for case in NBITS_CASES:
        node, a, y = nbits_node(case, rng, initializers)
        nodes.append(node)
        inputs.append(a)
        outputs.append(y)
    path = save(helper.make_graph(nodes, "nbits", inputs, outputs, initializers),
                os.path.join(scratch, "nbits.onnx"))
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
             .astype(np.float32) for i in inputs}
    return path, feeds, run_onnxruntime(path, feeds)


@pytest.mark.parametrize("backend", BACKENDS)
def test_matmulnbits_against_onnxruntime(nbits_model, scratch, backend):
    path, feeds, want = nbits_model
    got = run_onnxc(path, feeds, backend, scratch)
    for case in NBITS_CASES:
        name, level = case[0], case[7]
        # Level 4 with a float zero point or g_idx runs onnxruntime's f32 path.
        bound = 2e-5 if level == 4 and case[5] != "float" and not case[9] else 1e-5
        compare(got[f"y_{name}"], want[f"y_{name}"], bound, f"{backend} {name}")


@pytest.mark.skipif("jit" not in BACKENDS, reason="compiled code only")
@pytest.mark.parametrize("threads", [1, 3])
def test_column_chunks_on_any_thread_count(nbits_model, scratch, threads):
    """Every thread count covers each column chunk once, however the chunks divide."""
    path, feeds, want = nbits_model
    got = run_onnxc(path, feeds, "jit", scratch, threads)
    for case in WIDE_CASES:
        compare(got[f"y_{case[0]}"], want[f"y_{case[0]}"], 1e-5, f"{threads} threads {case[0]}")


def test_int4_weights_stay_4bit(nbits_model):
    """At -O2 every 4-bit MatMulNBits with integer zero points (11 of the cases: float zero
    points are applied at import, 8-bit weights stay a DequantizeLinear) is one
    BlockQuantizedMatMul over its i4/u4 constants, so the JIT run above went through the int4
    kernels, not through weights widened to f32: the 4 at accuracy_level 4 imported as the op
    with int8 activations, the 7 others fused from DequantizeLinear -> MatMul."""
    path = nbits_model[0]
    result = subprocess.run([ONNXC, "dump", path, "-O2", "--stats"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "fuse-block-quantized-matmul: 7 fused" in result.stderr, result.stderr
    assert result.stdout.count("= BlockQuantizedMatMul(") == 11, result.stdout
    assert result.stdout.count("activation_int8 = 1") == 4, result.stdout


def test_accuracy_level_4_is_not_the_f32_product(nbits_model):
    """Guards the level-4 comparisons above: onnxruntime's int8 path must be measurably away from
    its f32 path on these cases, or the test could not tell them apart."""
    path, feeds, want = nbits_model
    model = onnx.load(path)
    for node in model.graph.node:
        for attribute in node.attribute:
            if attribute.name == "accuracy_level":
                attribute.i = 0
    f32_path = path.replace(".onnx", "_level0.onnx")
    onnx.save(model, f32_path)
    f32 = run_onnxruntime(f32_path, feeds)
    for case in NBITS_CASES:
        if case[7] == 4 and case[5] != "float" and not case[9]:
            y = f"y_{case[0]}"
            scale = np.abs(want[y]).max()
            distance = np.abs(f32[y] - want[y]).max() / scale
            print(f"{case[0]}: level 4 is {distance:.2e} of the range from level 0")
            assert distance > 1e-3, case[0]


def gather_model(scratch, rng):
    """GatherBlockQuantized over int4, uint4 (with zero points) and uint8-packed tables, and
    MatMulBnb4 FP4 / NF4, on the same ids."""
    vocab, hidden, block = 50, 64, 16
    blocks = hidden // block
    nodes, outputs = [], []
    inits = [numpy_helper.from_array(
        (rng.random((vocab, blocks)) * 0.1 + 0.01).astype(np.float32), "scales")]
    int4 = rng.integers(-8, 8, (vocab, hidden))
    inits.append(helper.make_tensor("t_int4", TP.INT4, [vocab, hidden], int4.flatten()))
    uint4 = rng.integers(0, 16, (vocab, hidden))
    inits.append(helper.make_tensor("t_uint4", TP.UINT4, [vocab, hidden], uint4.flatten()))
    inits.append(helper.make_tensor("z_uint4", TP.UINT4, [vocab, blocks],
                                    rng.integers(0, 16, vocab * blocks)))
    inits.append(numpy_helper.from_array(pack(rng.integers(0, 16, (vocab, hidden)), 4), "t_u8"))
    inits.append(numpy_helper.from_array(pack(rng.integers(0, 16, (vocab, blocks)), 4), "z_u8"))
    for name, ins in (("int4", ["t_int4", "ids", "scales"]),
                      ("uint4", ["t_uint4", "ids", "scales", "z_uint4"]),
                      ("u8", ["t_u8", "ids", "scales", "z_u8"]),
                      ("u8_nozp", ["t_u8", "ids", "scales"])):
        nodes.append(helper.make_node("GatherBlockQuantized", ins, [f"e_{name}"], name=f"g_{name}",
                                      domain="com.microsoft", gather_axis=0, quantize_axis=1,
                                      block_size=block, bits=4))
        outputs.append(helper.make_tensor_value_info(f"e_{name}", TP.FLOAT, [2, 3, hidden]))
    k, n, bnb_block = 64, 24, 32
    for quant_type in (0, 1):
        inits.append(numpy_helper.from_array(
            rng.integers(0, 256, (n * k + 1) // 2).astype(np.uint8), f"bnb_b{quant_type}"))
        inits.append(numpy_helper.from_array(
            (rng.random(-(-n * k // bnb_block)) + 0.5).astype(np.float32), f"bnb_m{quant_type}"))
        nodes.append(helper.make_node("MatMulBnb4", ["x", f"bnb_b{quant_type}", f"bnb_m{quant_type}"],
                                      [f"y_bnb{quant_type}"], name=f"bnb{quant_type}",
                                      domain="com.microsoft", K=k, N=n, block_size=bnb_block,
                                      quant_type=quant_type))
        outputs.append(helper.make_tensor_value_info(f"y_bnb{quant_type}", TP.FLOAT, [5, n]))
    inputs = [helper.make_tensor_value_info("ids", TP.INT64, [2, 3]),
              helper.make_tensor_value_info("x", TP.FLOAT, [5, k])]
    path = save(helper.make_graph(nodes, "gbq", inputs, outputs, inits),
                os.path.join(scratch, "gather.onnx"))
    feeds = {"ids": np.array([[0, 49, 7], [3, 3, 20]], np.int64),
             "x": rng.standard_normal((5, k)).astype(np.float32)}
    return path, feeds


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_block_quantized_and_bnb4(scratch, backend):
    path, feeds = gather_model(scratch, np.random.default_rng(7))
    want = run_onnxruntime(path, feeds)
    got = run_onnxc(path, feeds, backend, scratch)
    for name, value in want.items():
        # Gathered rows are dequantized element by element: exact.
        compare(got[name], value, 1e-5 if name.startswith("y_") else 1e-7, f"{backend} {name}")


def tied_head_model(scratch, rng):
    """A tied int4 LM head as onnxruntime-genai's builder writes it (shared_embeddings, the default
    for a model with tie_word_embeddings): the head's MatMulNBits B [vocab, blocks, block / 2],
    Reshaped to [vocab, hidden / 2], is the embedding's GatherBlockQuantized table, and both read
    the same scales and packed zero points."""
    vocab, hidden, block = 40, 64, 32
    blocks = hidden // block
    b = pack(rng.integers(0, 16, (vocab, hidden)), 4).reshape(vocab, blocks, block // 2)
    inits = [numpy_helper.from_array(b, "lm_head.MatMul.weight_Q4G32"),
             numpy_helper.from_array((rng.random((vocab, blocks)) * 0.1 + 0.01).astype(np.float32),
                                     "lm_head.MatMul.weight_scale"),
             numpy_helper.from_array(pack(rng.integers(0, 16, (vocab, blocks)), 4),
                                     "lm_head.MatMul.weight_zp"),
             numpy_helper.from_array(np.array([vocab, hidden // 2], np.int64), "table_shape"),
             numpy_helper.from_array(np.array(1.5, np.float32), "scale")]
    head = ["lm_head.MatMul.weight_Q4G32", "lm_head.MatMul.weight_scale", "lm_head.MatMul.weight_zp"]
    nodes = [helper.make_node("Reshape", [head[0], "table_shape"], ["table"], name="reshape"),
             helper.make_node("GatherBlockQuantized", ["table", "ids"] + head[1:], ["embedded"],
                              name="embed", domain="com.microsoft", bits=4, block_size=block,
                              gather_axis=0, quantize_axis=1),
             helper.make_node("Mul", ["embedded", "scale"], ["hidden"], name="mul"),
             helper.make_node("MatMulNBits", ["hidden"] + head, ["logits"], name="lm_head",
                              domain="com.microsoft", K=hidden, N=vocab, bits=4, block_size=block)]
    graph = helper.make_graph(nodes, "tied", [helper.make_tensor_value_info("ids", TP.INT64, [1, 3])],
                              [helper.make_tensor_value_info("logits", TP.FLOAT, [1, 3, vocab])],
                              inits)
    return save(graph, os.path.join(scratch, "tied_head.onnx")), {
        "ids": np.array([[0, 39, 7]], np.int64)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_tied_int4_head(scratch, backend):
    path, feeds = tied_head_model(scratch, np.random.default_rng(11))
    want = run_onnxruntime(path, feeds)["logits"]
    compare(run_onnxc(path, feeds, backend, scratch)["logits"], want, 1e-5, f"{backend} tied head")


@pytest.fixture(scope="module")
def quantized_llama(scratch):
    """hf_llama_op17 through MatMulNBitsQuantizer (block 32), in both of its output formats."""
    source = os.path.join(MODEL_DIR, "hf_llama_op17.onnx")
    if not os.path.exists(source):
        pytest.skip(f"{source} missing (ctest -R models/build)")
    import logging

    from onnx import version_converter
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    logging.getLogger("onnxruntime.quantization").setLevel(logging.WARNING)
    base = onnx.load(source)
    # The QDQ form needs opset 21 (blocked DequantizeLinear); the quantizer only bumps the
    # import, so the rest of the graph is converted first.
    sources = {"QOperator": base, "QDQ": version_converter.convert_version(base, 21)}
    paths = {}
    for symmetric in (True, False):
        for fmt, model in sources.items():
            quantizer = MatMulNBitsQuantizer(onnx.ModelProto.FromString(model.SerializeToString()),
                                             block_size=32, is_symmetric=symmetric,
                                             quant_format=getattr(QuantFormat, fmt))
            quantizer.process()
            label = f"{fmt}_{'sym' if symmetric else 'asym'}"
            paths[label] = os.path.join(scratch, f"llama_{label}.onnx")
            onnx.save(quantizer.model.model, paths[label])
    ids = np.random.default_rng(3).integers(0, 100, (2, 9)).astype(np.int64)
    return paths, {"input_ids": ids}


@pytest.mark.parametrize("label", ["QOperator_sym", "QOperator_asym", "QDQ_sym", "QDQ_asym"])
def test_matmulnbits_quantizer_llama(quantized_llama, scratch, label):
    paths, feeds = quantized_llama
    path = paths[label]
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert ("MatMulNBits" in ops) == label.startswith("QOperator"), ops
    want = run_onnxruntime(path, feeds)
    # The JIT compiles the whole model (seconds): once is enough, since both formats import as
    # the same IR (the hand-built MatMulNBits graphs above run through the JIT too).
    backends = BACKENDS if label == "QDQ_sym" else ["ref"]
    for backend in backends:
        got = run_onnxc(path, feeds, backend, scratch)
        for name, value in want.items():
            compare(got[name], value, 1e-4, f"{label} {backend} {name}")


def test_dump_keeps_int4(quantized_llama, scratch):
    """`onnxc dump --format=onnx` of the QDQ model (at -O0, so nothing folds) writes its int4
    weights as INT4/UINT4 initializers, and onnxruntime runs the dump with the same outputs."""
    paths, feeds = quantized_llama
    for label in ("QDQ_sym", "QDQ_asym"):
        dumped = os.path.join(scratch, f"dump_{label}.onnx")
        result = subprocess.run([ONNXC, "dump", paths[label], "-O0", "--format=onnx", "-o", dumped],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        types = {i.data_type for i in onnx.load(dumped).graph.initializer}
        assert types & {TP.INT4, TP.UINT4}, types
        want = run_onnxruntime(paths[label], feeds)
        got = run_onnxruntime(dumped, feeds)
        for name, value in want.items():
            compare(got[name], value, 1e-5, f"dump {label} {name}")


def test_refusals(scratch):
    """What onnxc does not take is refused in one line naming the node."""
    rng = np.random.default_rng(1)
    k, n, block = 32, 8, 16
    b = numpy_helper.from_array(rng.integers(0, 256, (n, 2, 8)).astype(np.uint8), "b")
    s = numpy_helper.from_array(np.ones(n * 2, np.float32), "s")
    g = numpy_helper.from_array(np.arange(k)[::-1].astype(np.int32) // block, "g")
    cases = {
        "act-order": (helper.make_node("MatMulNBits", ["a", "b", "s", "", "g"], ["y"], name="mm",
                                       domain="com.microsoft", K=k, N=n, bits=4, block_size=block),
                      "g_idx (act-order)"),
        "bits": (helper.make_node("MatMulNBits", ["a", "b", "s"], ["y"], name="mm",
                                  domain="com.microsoft", K=k, N=n, bits=3, block_size=block),
                 "bits=3"),
    }
    for label, (node, expected) in cases.items():
        graph = helper.make_graph([node], label,
                                  [helper.make_tensor_value_info("a", TP.FLOAT, [1, k])],
                                  [helper.make_tensor_value_info("y", TP.FLOAT, [1, n])], [b, s, g])
        model = helper.make_model(graph, opset_imports=OPSETS)
        path = os.path.join(scratch, f"refuse_{label}.onnx")
        onnx.save(model, path)
        result = subprocess.run([ONNXC, "dump", path, "-O0"], capture_output=True, text=True)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode != 0 and len(lines) == 1, result.stderr
        assert "node 'mm'" in lines[0] and expected in lines[0], lines[0]

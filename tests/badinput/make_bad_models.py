#!/usr/bin/env python3
"""Writes malformed ONNX models and .npy inputs for run_bad_inputs.py.

Usage: make_bad_models.py OUTDIR

Every file is something a user could plausibly hand to onnxc (a download cut
short, a model written by a buggy exporter, a hostile external-data path); the
tool must answer each with one `error:` line. The external-data models live in
OUTDIR/external/ so that their "../outside.bin" points at a real file,
OUTDIR/outside.bin: the importer has to refuse the path, not just miss the file.
"""

import os
import random
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import size_cases

OPSET = 17


def tensor_info(name: str, dims: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def model_of(nodes: list, inputs: list, outputs: list, initializers: list = (),
             opset: int = OPSET, name: str = "bad") -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="onnxc-badinput")
    # Pin the IR version: a newer onnx would stamp one older readers refuse,
    # which is not the defect under test.
    model.ir_version = 8
    return model


def weight_model(weight: TensorProto) -> onnx.ModelProto:
    """y = x + W, for models whose defect is in the initializer W."""
    node = helper.make_node("Add", ["x", weight.name], ["y"], name="add_w")
    return model_of([node], [tensor_info("x", [4])], [tensor_info("y", [4])], [weight])


def raw_weight(name: str, dims: list, raw: bytes) -> TensorProto:
    weight = TensorProto()
    weight.name = name
    weight.data_type = TensorProto.FLOAT
    weight.dims.extend(dims)
    weight.raw_data = raw
    return weight


def external_weight(name: str, location: str, length: int) -> TensorProto:
    weight = TensorProto()
    weight.name = name
    weight.data_type = TensorProto.FLOAT
    weight.dims.extend([4])
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return weight


def save(model: onnx.ModelProto, path: Path) -> None:
    # SerializeToString rather than onnx.save: onnx.save may try to resolve
    # or validate external data, and these models are meant to be wrong.
    path.write_bytes(model.SerializeToString())


def write_truncated(out: Path) -> None:
    # A big initializer makes the graph (field 7) span the middle of the file,
    # so the cut always lands inside a length-delimited field.
    weight = raw_weight("W", [256, 4], np.arange(1024, dtype=np.float32).tobytes())
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul")
    model = model_of([node], [tensor_info("x", [2, 256])], [tensor_info("y", [2, 4])], [weight])
    data = model.SerializeToString()
    (out / "truncated.onnx").write_bytes(data[: len(data) // 2])


def write_garbage(out: Path) -> None:
    data = bytearray(random.Random(1234).randbytes(4096))
    # Wire type 7 does not exist, so the first tag is invalid whatever the
    # rest decodes to; random bytes alone could, rarely, parse.
    data[0] = 0xFF
    (out / "garbage.onnx").write_bytes(bytes(data))


def write_graph_defects(out: Path) -> None:
    x, y = tensor_info("x", [2, 3]), tensor_info("y", [2, 3])
    cycle = [helper.make_node("Relu", ["b"], ["a"], name="first"),
             helper.make_node("Neg", ["a"], ["b"], name="second"),
             helper.make_node("Add", ["x", "a"], ["y"], name="join")]
    save(model_of(cycle, [x], [y]), out / "cycle.onnx")

    missing = [helper.make_node("Add", ["x", "nowhere_defined"], ["y"], name="add_missing")]
    save(model_of(missing, [x], [y]), out / "missing_input.onnx")

    unknown = [helper.make_node("FrobnicateTensor", ["x"], ["t"], name="frob"),
               helper.make_node("Relu", ["t"], ["u"], name="relu"),
               helper.make_node("QuantumFlux", ["u"], ["y"], name="flux")]
    save(model_of(unknown, [x], [y]), out / "unknown_ops.onnx")

    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    save(model_of(relu, [x], [y], opset=6), out / "opset_too_old.onnx")

    # Opsets 7-12 are converted to 13 on import: BatchNormalization-7 with spatial=0 has no
    # opset-9 form, and an op ONNX does not know must not reach the converter.
    stats = [numpy_helper.from_array(np.ones([3], np.float32), n) for n in ("s", "b", "m", "v")]
    spatial = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn_spatial",
                                spatial=0)]
    save(model_of(spatial, [x], [y], stats, opset=8), out / "old_opset_unconvertible.onnx")
    save(model_of(unknown, [x], [y], opset=10), out / "old_opset_unknown_ops.onnx")

    # Ops imported as their ONNX function expansion still check their form.
    stats = [numpy_helper.from_array(np.ones([3], np.float32), n) for n in ("s", "b", "m", "v")]
    norm = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="norm",
                             training_mode=2)]
    save(model_of(norm, [x], [y], stats), out / "batchnorm_bad_mode.onnx")
    prelu = [helper.make_node("PRelu", ["x"], ["y"], name="leaky")]
    save(model_of(prelu, [x], [y]), out / "prelu_no_slope.onnx")

    write_quantization_defects(out)
    write_vision_defects(out)
    write_preview_defects(out)
    write_linear_attention_defects(out)


def write_quantization_defects(out: Path) -> None:
    """A blocked scale (opset 21 block_size) with one block too many for x, and
    a per-axis scale whose zero point has another length."""
    x = tensor_info("x", [2, 4])
    q = helper.make_tensor_value_info("q", TensorProto.INT8, [2, 4])
    blocked = [numpy_helper.from_array(np.full([2, 3], 0.5, np.float32), "block_scale"),
               numpy_helper.from_array(np.zeros([2, 3], np.int8), "block_zero")]
    node = [helper.make_node("QuantizeLinear", ["x", "block_scale", "block_zero"], ["q"],
                             name="quant_blocked", axis=1, block_size=2)]
    save(model_of(node, [x], [q], blocked, opset=21), out / "quantize_blocked.onnx")
    mismatched = [numpy_helper.from_array(np.full([4], 0.5, np.float32), "axis_scale"),
                  numpy_helper.from_array(np.zeros([3], np.int8), "axis_zero")]
    node = [helper.make_node("QuantizeLinear", ["x", "axis_scale", "axis_zero"], ["q"],
                             name="quant_zero_point", axis=1)]
    save(model_of(node, [x], [q], mismatched, opset=13), out / "quantize_zero_point_shape.onnx")



def write_vision_defects(out: Path) -> None:
    # Pad, pooling, Resize and ConvTranspose: the attribute combinations
    # onnxc refuses, each with its own line.
    image, pooled = tensor_info("x", [1, 2, 6, 6]), tensor_info("y", [1, 2, 3, 3])
    indices = helper.make_tensor_value_info("i", TensorProto.INT64, [1, 2, 3, 3])
    argmax = [helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool_argmax",
                               kernel_shape=[2, 2], strides=[2, 2])]
    save(model_of(argmax, [image], [pooled, indices]), out / "maxpool_indices.onnx")
    no_kernel = [helper.make_node("AveragePool", ["x"], ["y"], name="pool_nokernel")]
    save(model_of(no_kernel, [image], [pooled]), out / "averagepool_no_kernel.onnx")
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    wrap = [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_wrap", mode="wrap")]
    save(model_of(wrap, [image], [pooled], [pads]), out / "pad_wrap_before_19.onnx")
    scales = numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")
    antialias = [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize_aa",
                                  mode="linear", antialias=1)]
    save(model_of(antialias, [image], [pooled], [scales], opset=13), out / "resize_antialias_13.onnx")
    huge = numpy_helper.from_array(np.array([1, 1, 1e30, 1], np.float32), "scales")
    blowup = [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize_huge")]
    save(model_of(blowup, [image], [pooled], [huge]), out / "resize_huge_scale.onnx")
    weight = numpy_helper.from_array(np.ones([2, 2, 3, 3], np.float32), "w")
    deconv = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv",
                               strides=[2, 2], output_padding=[2, 0])]
    save(model_of(deconv, [image], [pooled], [weight]), out / "convtranspose_output_padding.onnx")


def flex_model(name: str, q_heads: int, **attrs) -> onnx.ModelProto:
    """One ai.onnx.preview FlexAttention of Q [1, q_heads, 4, 8] and K, V [1, 2, 4, 8]."""
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, q_heads, 4, 8])
    k, v = tensor_info("k", [1, 2, 4, 8]), tensor_info("v", [1, 2, 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, q_heads, 4, 8])
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name=name,
                            domain="ai.onnx.preview", **attrs)
    model = model_of([node], [q, k, v], [y], opset=26)
    model.opset_import.append(helper.make_opsetid("ai.onnx.preview", 1))
    return model


def write_preview_defects(out: Path) -> None:
    # FlexAttention and CausalConvWithState: the forms refused at import.
    s = tensor_info("s", ["B", "H", "L", "S"])
    twice = helper.make_graph([helper.make_node("Neg", ["s"], ["n"]),
                               helper.make_node("Abs", ["s"], ["a"])], "mod", [s],
                              [tensor_info("n", []), tensor_info("a", [])])
    save(flex_model("flex_mod", 2, score_mod=twice), out / "flex_mod_two_outputs.onnx")
    save(flex_model("flex_heads", 3), out / "flex_heads_not_multiple.onnx")
    save(flex_model("flex_precision", 2, softmax_precision=TensorProto.INT32),
         out / "flex_softmax_precision.onnx")
    x, y = tensor_info("x", [1, 4, 5]), tensor_info("y", [1, 4, 5])
    weight = numpy_helper.from_array(np.ones([4, 1, 3], np.float32), "w")
    conv = [helper.make_node("CausalConvWithState", ["x", "w"], ["y"], name="conv_state",
                             activation="relu")]
    save(model_of(conv, [x], [y], [weight], opset=27), out / "causal_conv_activation.onnx")


def write_linear_attention_defects(out: Path) -> None:
    """LinearAttention (opset 27) nodes the schema forbids: an update rule it does not define,
    query heads that are no multiple of the KV heads, a delta rule without its beta."""
    def info(name: str, last: int) -> onnx.ValueInfoProto:
        return tensor_info(name, [1, 3, last])

    qkv = [info("q", 16), info("k", 16), info("v", 16)]
    y = info("y", 16)
    rule = [helper.make_node("LinearAttention", ["q", "k", "v"], ["y", "state"], name="la_rule",
                             q_num_heads=2, kv_num_heads=2, update_rule="retnet")]
    save(model_of(rule, qkv, [y], opset=27), out / "linear_attention_rule.onnx")
    heads = [helper.make_node("LinearAttention", ["q", "k", "v"], ["y", "state"], name="la_heads",
                              q_num_heads=3, kv_num_heads=2, update_rule="linear")]
    save(model_of(heads, qkv, [y], opset=27), out / "linear_attention_heads.onnx")
    no_beta = [helper.make_node("LinearAttention", ["q", "k", "v"], ["y", "state"], name="la_beta",
                                q_num_heads=2, kv_num_heads=2, update_rule="delta")]
    save(model_of(no_beta, qkv, [y], opset=27), out / "linear_attention_no_beta.onnx")


def write_weight_defects(out: Path) -> None:
    # 16 floats need 64 bytes; 10 is neither enough nor a multiple of 4.
    save(weight_model(raw_weight("W_short", [4, 4], bytes(10))), out / "bad_raw_data.onnx")
    save(weight_model(raw_weight("W_negative", [-3], b"")), out / "negative_dim.onnx")
    # 1e14 elements: an importer that trusts dims would try to allocate 400 TB.
    save(weight_model(raw_weight("W_absurd", [10**7, 10**7], bytes(16))), out / "absurd_dim.onnx")


def write_external_defects(out: Path) -> None:
    external = out / "external"
    external.mkdir(exist_ok=True)
    # The escape target exists and is the right size, so only the path is wrong.
    (out / "outside.bin").write_bytes(np.ones(4, dtype=np.float32).tobytes())
    cases = {"external_escape.onnx": ("W_escape", "../outside.bin"),
             "external_absolute.onnx": ("W_absolute", "/etc/passwd"),
             "external_missing.onnx": ("W_missing", "missing_weights.bin")}
    for file_name, (weight_name, location) in cases.items():
        save(weight_model(external_weight(weight_name, location, 16)), external / file_name)


def write_runtime_defects(out: Path) -> None:
    """Well-formed models whose nodes are wrong for their operands.

    All take x: f32[2, 3] like good.onnx, so run_bad_inputs.py can feed them
    a valid input and reach the evaluator."""
    x, y = tensor_info("x", [2, 3]), tensor_info("y", [2, 3])
    index = helper.make_tensor("far_index", TensorProto.INT64, [1], [5])
    gather = [helper.make_node("Gather", ["x", "far_index"], ["y"], name="gather_oob", axis=0)]
    save(model_of(gather, [x], [tensor_info("y", [1, 3])], [index]),
         out / "gather_out_of_range.onnx")

    shape = helper.make_tensor("bad_shape", TensorProto.INT64, [2], [4, 4])
    reshape = [helper.make_node("Reshape", ["x", "bad_shape"], ["y"], name="reshape_bad")]
    save(model_of(reshape, [x], [tensor_info("y", [4, 4])], [shape]),
         out / "reshape_impossible.onnx")

    sizes = helper.make_tensor("split_sizes", TensorProto.INT64, [2], [2, 2])
    split = [helper.make_node("Split", ["x", "split_sizes"], ["y", "z"], name="split_bad",
                              axis=1)]
    save(model_of(split, [x], [tensor_info("y", [2, 2]), tensor_info("z", [2, 2])], [sizes]),
         out / "split_mismatch.onnx")

    words = helper.make_tensor("word_table", TensorProto.STRING, [2], [b"a", b"b"])
    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    save(model_of(relu, [x], [y], [words]), out / "string_initializer.onnx")

    # Two nodes writing one value: not SSA, so the graph is ambiguous.
    twice = [helper.make_node("Relu", ["x"], ["y"], name="relu_a"),
             helper.make_node("Neg", ["x"], ["y"], name="neg_b")]
    save(model_of(twice, [x], [y]), out / "duplicate_output.onnx")


def write_bad_index_data(out: Path) -> None:
    """A valid model whose int64 indices come from the user: the data decides.

    Compiled runs (JIT and .so) must fail the step with one error line, as the
    evaluator does, rather than read out of bounds or return zeros."""
    table = helper.make_tensor("table", TensorProto.FLOAT, [8, 3],
                               np.arange(24, dtype=np.float32).tolist())
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [4])
    gather = [helper.make_node("Gather", ["table", "ids"], ["y"], name="embed_lookup", axis=0)]
    model = model_of(gather, [ids], [tensor_info("y", [4, 3])], [table], name="lookup")
    onnx.checker.check_model(model)
    save(model, out / "gather_ids.onnx")
    np.save(out / "good_ids.npy", np.array([0, 7, -8, 3], dtype=np.int64))
    np.save(out / "bad_ids.npy", np.array([1, 2, 8, 0], dtype=np.int64))


def write_scatter_gather_index_data(out: Path) -> None:
    """ScatterND and GatherElements with indices from the user.

    As write_bad_index_data: the compiled runs must fail the step with one
    error line when an index is out of range, and the evaluator must name
    the node and the index."""
    mask = helper.make_tensor("mask", TensorProto.FLOAT, [4, 3],
                              np.zeros(12, dtype=np.float32).tolist())
    fill = helper.make_tensor("fill", TensorProto.FLOAT, [2, 3], [-1.0] * 6)
    rows = helper.make_tensor_value_info("rows", TensorProto.INT64, [2, 1])
    scatter = [helper.make_node("ScatterND", ["mask", "rows", "fill"], ["y"], name="mask_fill")]
    model = model_of(scatter, [rows], [tensor_info("y", [4, 3])], [mask, fill], opset=18,
                     name="scatter")
    onnx.checker.check_model(model)
    save(model, out / "scatternd_rows.onnx")
    np.save(out / "good_rows.npy", np.array([[3], [-4]], dtype=np.int64))
    np.save(out / "bad_rows.npy", np.array([[1], [4]], dtype=np.int64))

    scores = helper.make_tensor("scores", TensorProto.FLOAT, [3, 4],
                                np.arange(12, dtype=np.float32).tolist())
    positions = helper.make_tensor_value_info("positions", TensorProto.INT64, [3, 2])
    gather = [helper.make_node("GatherElements", ["scores", "positions"], ["y"], name="rel_pos",
                               axis=1)]
    model = model_of(gather, [positions], [tensor_info("y", [3, 2])], [scores],
                     name="gather_elements")
    onnx.checker.check_model(model)
    save(model, out / "gather_elements_positions.onnx")
    np.save(out / "good_positions.npy", np.array([[0, 3], [-1, 2], [1, -4]], dtype=np.int64))
    np.save(out / "bad_positions.npy", np.array([[0, 3], [-5, 2], [1, 1]], dtype=np.int64))


def write_npy_cases(out: Path) -> None:
    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    model = model_of(relu, [tensor_info("x", [2, 3])], [tensor_info("y", [2, 3])], name="good")
    onnx.checker.check_model(model)
    save(model, out / "good.onnx")

    rng = np.random.default_rng(7)
    np.save(out / "good_input.npy", rng.standard_normal((2, 3)).astype(np.float32))
    np.save(out / "wrong_shape.npy", np.zeros((4, 5), dtype=np.float32))
    np.save(out / "wrong_dtype.npy", np.zeros((2, 3), dtype=np.int64))
    (out / "not_npy.npy").write_bytes(random.Random(99).randbytes(200))
    # Column-major data: a reader that ignores fortran_order would compute on
    # the transposed element order.
    fortran = np.asfortranarray(np.arange(-3, 3, dtype=np.float32).reshape(2, 3))
    np.save(out / "fortran.npy", fortran)


def write_kv_cache_mask(out: Path) -> None:
    """A KV-cache attention score: keys are the cache and the new tokens (Concat, past + seq),
    and the mask input, with a dimension of its own, must cover exactly those keys. A mask of
    another length is bad input, whichever backend runs it; an empty cache is good input."""
    nodes = [helper.make_node("Concat", ["past", "x"], ["keys"], name="cat_keys", axis=1),
             helper.make_node("Transpose", ["keys"], ["keys_t"], name="keys_t", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["x", "keys_t"], ["scores"], name="scores"),
             helper.make_node("Unsqueeze", ["mask", "one"], ["mask3"], name="mask3"),
             helper.make_node("Add", ["scores", "mask3"], ["y"], name="add_mask")]
    one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
    inputs = [tensor_info("x", ["batch", "seq", 4]), tensor_info("past", ["batch", "past", 4]),
              tensor_info("mask", ["batch", "past+seq"])]
    model = model_of(nodes, inputs, [tensor_info("y", ["batch", "seq", "past+seq"])], [one], name="kv_mask")
    onnx.checker.check_model(model)
    save(model, out / "kv_mask.onnx")
    rng = np.random.default_rng(12)
    np.save(out / "kv_x.npy", rng.standard_normal((2, 3, 4)).astype(np.float32))
    np.save(out / "kv_past.npy", rng.standard_normal((2, 5, 4)).astype(np.float32))
    np.save(out / "kv_empty_past.npy", np.zeros((2, 0, 4), dtype=np.float32))
    np.save(out / "kv_mask.npy", rng.standard_normal((2, 8)).astype(np.float32))
    np.save(out / "kv_short_mask.npy", rng.standard_normal((2, 3)).astype(np.float32))
    np.save(out / "kv_long_mask.npy", rng.standard_normal((2, 9)).astype(np.float32))
    np.save(out / "kv_one_mask.npy", rng.standard_normal((2, 1)).astype(np.float32))


def write_external_link_defects(out: Path) -> None:
    """External data that every path check passes but is no file of the folder:
    a hard link to outside.bin (the outside file under an inside name), and a
    FIFO (a plain open would wait for a writer forever)."""
    external = out / "external"
    external.mkdir(exist_ok=True)
    link, fifo = external / "hardlinked.bin", external / "pipe.bin"
    for stale in (link, fifo):
        if stale.exists() or stale.is_symlink():
            stale.unlink()
    os.link(out / "outside.bin", link)
    os.mkfifo(fifo)
    cases = {"external_hardlink.onnx": ("W_hardlink", link.name),
             "external_fifo.onnx": ("W_fifo", fifo.name)}
    for file_name, (weight_name, location) in cases.items():
        save(weight_model(external_weight(weight_name, location, 16)), external / file_name)


def write_output_collision(out: Path) -> None:
    """Outputs 'a/b' and 'a_b' both sanitize to a_b.npy in --output-dir."""
    nodes = [helper.make_node("Relu", ["x"], ["a/b"], name="relu"),
             helper.make_node("Neg", ["x"], ["a_b"], name="neg")]
    model = model_of(nodes, [tensor_info("x", [2, 3])],
                     [tensor_info("a/b", [2, 3]), tensor_info("a_b", [2, 3])], name="collide")
    onnx.checker.check_model(model)
    save(model, out / "output_collision.onnx")


def write_external_weights(out: Path) -> None:
    """A good model whose W lives in weights.bin: compile must not write over it."""
    folder = out / "external_good"
    folder.mkdir(exist_ok=True)
    (folder / "weights.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    save(weight_model(external_weight("W", "weights.bin", 16)), folder / "m.onnx")


def write_uncompilable_shapes(out: Path) -> None:
    """Shapes the IR holds but no compiled model can run with: a negative
    input dim (text IR, since the ONNX importer refuses it already) and
    inputs or outputs of rank 9, past the C API's ONNXC_MAX_RANK of 8."""
    (out / "negative_input_dim.ir").write_text(
        "graph @neg(%x: f32[-4]) -> (%y: f32[-4]) {\n  %y = Relu(%x)\n  return %y\n}\n")
    # Read by no node, so no shape rule sees the dim: only the compiler can.
    (out / "negative_unused_input_dim.ir").write_text(
        "graph @neg(%x: f32[-4], %z: f32[2]) -> (%y: f32[2]) {\n  %y = Relu(%z)\n"
        "  return %y\n}\n")
    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    save(model_of(relu, [tensor_info("x", [1] * 9)], [tensor_info("y", [1] * 9)]),
         out / "rank9_input.onnx")
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [0])
    grow = [helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="grow")]
    save(model_of(grow, [tensor_info("x", [1] * 8)], [tensor_info("y", [1] * 9)], [axes]),
         out / "rank9_output.onnx")


def write_huge_parameter_count(out: Path) -> None:
    """An initializer claiming [2^32, 2^32] floats: 2^64 elements, which a
    64-bit count wraps to 0."""
    save(weight_model(raw_weight("W_huge", [2**32, 2**32], b"")), out / "huge_parameters.onnx")


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: make_bad_models.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    write_truncated(out)
    write_garbage(out)
    (out / "empty.onnx").write_bytes(b"")
    write_graph_defects(out)
    write_weight_defects(out)
    write_external_defects(out)
    write_external_link_defects(out)
    write_output_collision(out)
    write_external_weights(out)
    write_uncompilable_shapes(out)
    write_huge_parameter_count(out)
    write_runtime_defects(out)
    write_bad_index_data(out)
    write_scatter_gather_index_data(out)
    write_npy_cases(out)
    write_kv_cache_mask(out)
    size_cases.write(out)
    print(f"bad inputs written to {os.fspath(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A copy of a genai folder whose RMS norms are plain ONNX ops, for an onnxc without importers of
onnxruntime's SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization (they belong to
another change): test_genai_folder.py then still checks the folder's attention against
onnxruntime, which runs the original model. Once onnxc imports both ops, the folder is used as it is
and this is not called.

  SimplifiedLayerNormalization(x, scale)            -> x / sqrt(mean(x * x) + eps) * scale
  SkipSimplifiedLayerNormalization(x, skip, scale)  -> the same of x + skip; output 3 is x + skip
"""

import os
import shutil

import onnx
from onnx import TensorProto, helper

PLAIN_OPS = ("SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization")


def _rms(prefix, x, scale, eps, out):
    return [helper.make_node("Mul", [x, x], [prefix + "sq"]),
            helper.make_node("ReduceMean", [prefix + "sq"], [prefix + "ms"], axes=[-1], keepdims=1),
            helper.make_node("Add", [prefix + "ms", prefix + "eps"], [prefix + "mse"]),
            helper.make_node("Sqrt", [prefix + "mse"], [prefix + "rms"]),
            helper.make_node("Div", [x, prefix + "rms"], [prefix + "normed"]),
            helper.make_node("Mul", [prefix + "normed", scale], [out])], \
        helper.make_tensor(prefix + "eps", TensorProto.FLOAT, [], [eps])


def plain_norm_folder(folder, out):
    """Writes OUT: FOLDER with model.onnx's RMS norms decomposed. Returns OUT."""
    os.makedirs(out, exist_ok=True)
    model = onnx.load(os.path.join(folder, "model.onnx"))
    nodes = []
    for i, node in enumerate(model.graph.node):
        eps = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
        prefix = f"plain_norm_{i}_"
        if node.op_type == "SimplifiedLayerNormalization":
            plain, constant = _rms(prefix, node.input[0], node.input[1], eps, node.output[0])
        elif node.op_type == "SkipSimplifiedLayerNormalization":
            total = node.output[3] if len(node.output) > 3 and node.output[3] else prefix + "sum"
            plain, constant = _rms(prefix, total, node.input[2], eps, node.output[0])
            plain.insert(0, helper.make_node("Add", [node.input[0], node.input[1]], [total]))
        else:
            nodes.append(node)
            continue
        nodes += plain
        model.graph.initializer.append(constant)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save(model, os.path.join(out, "model.onnx"), save_as_external_data=True,
              location="model.onnx.data")
    for name in os.listdir(folder):
        if not name.startswith("model.onnx") and not name.startswith("."):
            shutil.copy(os.path.join(folder, name), out)
    return out

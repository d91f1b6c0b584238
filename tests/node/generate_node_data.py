"""Writes the ONNX backend node tests of the onnx package this Python imports, as the on-disk
cases (model.onnx, test_data_set_N/input_K.pb and output_K.pb) that onnxc_node_tests reads.

onnx wheels since 1.20 ship the node cases as code only (onnx/backend/test/case/node/), not as
data; the expected outputs are computed here by onnx's own reference implementation, exactly as
the onnx repository generates its data. Only cases whose default-domain opset is at least
--min-opset are written (the older ones come from the test venv's onnx package), and the cases
of any opset whose name starts with a --renewed prefix: ops whose meaning an erratum changed at
older opsets (onnx 1.23's Attention), which the older package's data still has the old way.

  python generate_node_data.py OUTPUT_DIR [--min-opset 24] [--renewed test_attention_ ...]
"""
import argparse
import os
import shutil
import sys

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases


def default_opset(model: onnx.ModelProto) -> int:
    return max((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")),
               default=0)


def tensor_bytes(value, name: str) -> bytes:
    if isinstance(value, onnx.TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, name).SerializeToString()


def write_case(case, root: str) -> bool:
    """Writes one case; False (nothing written) for inputs that are not plain tensors."""
    graph = case.model.graph
    for value_info in list(graph.input) + list(graph.output):
        if not value_info.type.HasField("tensor_type"):
            return False
    folder = os.path.join(root, case.name)
    os.makedirs(folder)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for index, (inputs, outputs) in enumerate(case.data_sets):
        data = os.path.join(folder, f"test_data_set_{index}")
        os.makedirs(data)
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for k, value in enumerate(values):
                with open(os.path.join(data, f"{kind}_{k}.pb"), "wb") as f:
                    f.write(tensor_bytes(value, infos[k].name))
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--min-opset", type=int, default=24)
    parser.add_argument("--renewed", action="append", default=[])
    args = parser.parse_args()
    staging = args.output + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    written = 0
    for case in node_cases.collect_testcases(None):
        renewed = any(case.name.startswith(prefix) for prefix in args.renewed)
        if (renewed or default_opset(case.model) >= args.min_opset) and write_case(case, staging):
            written += 1
    shutil.rmtree(args.output, ignore_errors=True)
    os.rename(staging, args.output)
    renewed = "".join(f", {prefix}* at any opset" for prefix in args.renewed)
    print(f"{written} node cases of onnx {onnx.__version__} at opset >= {args.min_opset}{renewed} "
          f"-> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

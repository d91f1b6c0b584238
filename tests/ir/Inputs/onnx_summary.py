#!/usr/bin/env python3
"""Prints what an ONNX file holds, for FileCheck: the checker's verdict, opset imports, graph
inputs and outputs with their types, initializers, and each node as `domain::Op(inputs) ->
(outputs)`."""

import sys

import onnx


def type_text(value) -> str:
    tensor = value.type.tensor_type
    dims = ", ".join(d.dim_param if d.HasField("dim_param") else str(d.dim_value) if d.HasField("dim_value")
                     else "?" for d in tensor.shape.dim)
    return f"{onnx.TensorProto.DataType.Name(tensor.elem_type).lower()}[{dims}]"


def main() -> int:
    model = onnx.load(sys.argv[1])
    onnx.checker.check_model(model)
    print("checker: ok")
    for opset in model.opset_import:
        print(f"opset {opset.domain or 'ai.onnx'} {opset.version}")
    for value in model.graph.input:
        print(f"input {value.name}: {type_text(value)}")
    for value in model.graph.output:
        print(f"output {value.name}: {type_text(value)}")
    for tensor in model.graph.initializer:
        print(f"initializer {tensor.name}: {list(tensor.dims)}")
    for node in model.graph.node:
        prefix = f"{node.domain}::" if node.domain else ""
        print(f"node {prefix}{node.op_type}({', '.join(node.input)}) -> ({', '.join(node.output)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

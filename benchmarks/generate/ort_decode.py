"""onnxruntime's greedy decode loop over a KV-cache decoder, timed, in a process of its own.

    python ort_decode.py MODEL.onnx --prompt-length 128 --new-tokens 16 --threads 1

The loop is the fast one an onnxruntime user writes: all graph optimizations, and IOBinding, so
that each step's presents stay OrtValues that the next step binds as its pasts (no copy to numpy
and back); only the logits row is read. Prints one JSON object: the prefill's latency (the first,
cold run and the best of three warm ones), every per-token step (ms) and the tokens.
"""

import argparse
import json
import time

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--prompt-length", type=int, required=True)
    parser.add_argument("--new-tokens", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--vocab", type=int, required=True)
    args = parser.parse_args()

    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    pasts = [i for i in session.get_inputs() if i.name.startswith("past_")]
    outputs = [o.name for o in session.get_outputs()]
    present_of = {p.name: p.name.replace("past_", "present_", 1) for p in pasts}

    prompt = [int(t) for t in np.random.default_rng(0).integers(0, args.vocab, args.prompt_length)]

    def prefill():
        binding = session.io_binding()
        binding.bind_cpu_input("input_ids", np.array([prompt], dtype=np.int64))
        binding.bind_cpu_input("attention_mask", np.ones((1, len(prompt)), dtype=np.int64))
        for past in pasts:
            binding.bind_cpu_input(past.name, np.zeros((1, past.shape[1], 0, past.shape[3]), dtype=np.float32))
        for name in outputs:
            binding.bind_output(name, "cpu")
        session.run_with_iobinding(binding)
        return dict(zip(outputs, binding.get_outputs()))

    start = time.perf_counter()
    values = prefill()
    cold_ms = (time.perf_counter() - start) * 1e3
    warm = []
    for _ in range(3):
        start = time.perf_counter()
        values = prefill()
        warm.append((time.perf_counter() - start) * 1e3)

    tokens = [int(np.argmax(values["logits"].numpy()[0, -1]))]
    steps = []
    length = len(prompt)
    mask = np.ones((1, length + args.new_tokens), dtype=np.int64)
    while len(tokens) < args.new_tokens:
        start = time.perf_counter()
        binding = session.io_binding()
        binding.bind_cpu_input("input_ids", np.array([[tokens[-1]]], dtype=np.int64))
        binding.bind_cpu_input("attention_mask", mask[:, :length + 1])
        for past in pasts:
            binding.bind_ortvalue_input(past.name, values[present_of[past.name]])
        for name in outputs:
            binding.bind_output(name, "cpu")
        session.run_with_iobinding(binding)
        values = dict(zip(outputs, binding.get_outputs()))
        tokens.append(int(np.argmax(values["logits"].numpy()[0, -1])))
        steps.append((time.perf_counter() - start) * 1e3)
        length += 1
    print(json.dumps({"prefill_cold_ms": cold_ms, "prefill_warm_ms": min(warm), "steps_ms": steps,
                      "tokens": tokens, "version": ort.__version__}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

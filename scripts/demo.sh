#!/usr/bin/env bash
# The main job on the bundled example, from a fresh clone: setup, build, then
# build a small BERT-style encoder (torch.onnx export, fixed seed), inspect it,
# show its optimized IR, compile it to a shared library, run it, benchmark it,
# and compare with onnxruntime.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
# ONNXC_DEMO_REUSE_BUILD=1: the build in ONNXC_BUILD_DIR is current (tests/docs/readme_quickstart.py
# runs the demo inside the test suite, after setup and the build).
if [[ "${ONNXC_DEMO_REUSE_BUILD:-0}" != 1 ]]; then
  bash "$repo/scripts/setup.sh"
  bash "$repo/scripts/build.sh" >/dev/null
fi
build="${ONNXC_BUILD_DIR:-$repo/build}"
onnxc="$build/tools/onnxc"
python="$repo/.venv/bin/python"
demo="$build/demo"
mkdir -p "$demo"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "build the example: a 2-layer BERT-style encoder exported by torch.onnx (opset 17)"
"$python" "$repo/examples/models/build_tiny_bert.py" "$demo/tiny_bert.onnx"
"$python" "$repo/examples/models/make_inputs.py" "$demo/inputs"

step "onnxc inspect"
"$onnxc" inspect "$demo/tiny_bert.onnx"

step "onnxc dump -O1 (the graph header and its first 20 nodes; weights are elided)"
"$onnxc" dump "$demo/tiny_bert.onnx" -O1 -o "$demo/tiny_bert.O1.ir"
head -n 1 "$demo/tiny_bert.O1.ir"; grep -v "^  const " "$demo/tiny_bert.O1.ir" | sed -n 2,21p
echo "... ($(wc -l < "$demo/tiny_bert.O1.ir") lines in $demo/tiny_bert.O1.ir)"

step "onnxc compile: native code for this CPU in a shared library, with a C header"
"$onnxc" compile "$demo/tiny_bert.onnx" -o "$demo/tiny_bert.so"

step "onnxc run the compiled model"
"$onnxc" run "$demo/tiny_bert.so" \
  --input input_ids="$demo/inputs/input_ids.npy" \
  --input attention_mask="$demo/inputs/attention_mask.npy" \
  --output-dir "$demo/onnxc_out"

step "onnxc bench (batch 1, sequence 32: the longest this example allows; one thread)"
"$onnxc" bench "$demo/tiny_bert.so" --shape input_ids=1x32 --threads 1 --iters 20

step "compare with onnxruntime on the same inputs"
"$python" "$repo/tests/models/ort_reference.py" "$demo/tiny_bert.onnx" \
  --input input_ids="$demo/inputs/input_ids.npy" \
  --input attention_mask="$demo/inputs/attention_mask.npy" \
  --output-dir "$demo/ort_out" >/dev/null
"$python" "$repo/examples/compare_outputs.py" "$demo/onnxc_out" "$demo/ort_out"

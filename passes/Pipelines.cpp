//===- passes/Pipelines.cpp - The -O0 ... -O3 pass pipelines --------------===//
#include "passes/Pipelines.h"

#include "ir/Error.h"
#include "passes/PassRegistry.h"

namespace onnxc {

namespace {
// Folding exposes identities and duplicates, merging exposes dead nodes, and
// removing dead nodes can leave more to fold, hence the fixed point. An If
// on a folded condition becomes the branch it takes. Shape
// simplification gives Reshapes constant targets, which leaves the Shape ->
// Gather -> Concat chains that computed them dead.
void addCleanup(PassManager &pm) {
  std::vector<std::unique_ptr<Pass>> group;
  for (const char *name :
       {"fold-constants", "inline-constant-if", "fold-channel-affine", "remove-identity",
        "simplify-casts", "simplify-shapes", "simplify-transposes", "cse", "dce"})
    group.push_back(createPass(name));
  pm.addFixedPointGroup(std::move(group), kCleanupRounds);
}

// The transformer fusions. Each matches exported patterns independently of
// the others, except skip-LayerNorm, which takes the LayerNormalization ops
// fuse-layernorm made (and the opset-17 ones) with the residual Add before
// them, and fuse-additive-attention, which takes the 3-D single-head
// attention fuse-attention (4-D scores only) leaves. The cleanup after them
// removes what the fusions left dead.
void addFusions(PassManager &pm) {
  // quantize_dynamic's MatMul chains become the integer GEMM op first; the
  // f32 ops around them (attention, norms, GELU) then fuse as usual.
  pm.addPass("fuse-dynamic-quantized-matmul");
  // Exporters' spellings of attention are first brought to the one form
  // fuse-attention matches: heads folded into the batch to [b, h, S, d], a
  // packed qkv to three head splits. The cleanup merges the Reshape pairs
  // and Transposes that leaves.
  pm.addPass("lift-batched-heads");
  pm.addPass("split-packed-qkv");
  addCleanup(pm);
  // After the cleanup, which leaves the head merge fuse-attention reads:
  // torch's sequence-first head splits and merges (which the cleanup has
  // merged into one Reshape and one Transpose each) become batch-first
  // ones between Transposes, KV heads repeated for grouped-query attention
  // take repeat_kv's form, and XSoftmax's zeroed rows go after the merge,
  // so the fused op still writes the merged heads.
  pm.addPass("batch-first-heads");
  pm.addPass("group-repeated-kv");
  pm.addPass("expand-xsoftmax");
  // The Transposes batch-first-heads put around a fused op fold into its
  // seq_first before the cleanup, which could merge them with their
  // neighbours.
  pm.addPass("fuse-attention");
  // The Attention ops a model brought read repeated KV heads as fuse-attention's do not.
  pm.addPass("group-attention-kv");
  pm.addPass("fold-seq-first-attention");
  for (const char *name : {"fuse-additive-attention", "fuse-layernorm", "fuse-rmsnorm",
                           "fuse-skip-layernorm", "fuse-gelu"})
    pm.addPass(name);
  addCleanup(pm);
}
} // namespace

int parseOptimizationLevel(const std::string &text) {
  if (text.size() != 1 || text[0] < '0' || text[0] > '3')
    fail("unknown optimization level '-O", text, "': use -O0 to -O3");
  return text[0] - '0';
}

void addOptimizationPipeline(PassManager &pm, int level) {
  parseOptimizationLevel(std::to_string(level));
  if (level == 0)
    return;
  // First: every later pass, and the kernels, then see the f32 graph an
  // f16/bf16 model computes (its weights widened exactly), so one matcher
  // and one set of kernels serve both.
  pm.addPass("widen-half-precision");
  // Before any folding: fold-constants would turn a QDQ graph's quantized
  // weights (DequantizeLinear of a constant) into f32 constants, and its
  // embedding tables are gathered before they are dequantized. The
  // activations' quantize-dequantize pairs that remain become f32 arithmetic
  // that fuses with the elementwise ops around it. int4 weights stay 4-bit
  // (fuse-block-quantized-matmul) before the cleanup could widen them to f32.
  if (level >= 2) {
    pm.addPass("fuse-block-quantized-matmul");
    pm.addPass("fuse-static-quantized-matmul");
    pm.addPass("fuse-static-quantized-conv");
    pm.addPass("sink-dequantize");
    pm.addPass("expand-fake-quantize");
  }
  addCleanup(pm);
  if (level >= 2)
    addFusions(pm);
  // -O3 adds nothing at the graph level: its codegen-level fusion
  // (elementwise chains, GEMM epilogues) and weight pre-packing happen in
  // lowering whenever a model is compiled.
}

void addPassesByName(PassManager &pm, const std::vector<std::string> &names) {
  for (const std::string &name : names)
    pm.addPass(name);
}

std::vector<std::string> splitPassList(std::string_view list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos)
      comma = list.size();
    if (comma > start)
      names.emplace_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

} // namespace onnxc

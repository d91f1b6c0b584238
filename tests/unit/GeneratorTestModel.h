//===- tests/unit/GeneratorTestModel.h - Toy decoders for generator tests --===//
//
// Two toy decoders written as descriptors (like RuntimeTestModel.h): one with
// a KV cache (past_key_0 [batch, 2, past, 3] in, present_key_0 out, the mask
// past+seq long) and one without. Both predict the next id from the whole
// prefix, (sum of ids + 7 * length) mod 16, as logits peaked at it; the cache
// model reads the earlier ids back from its past input only, so a cache that
// is not carried from step to step changes the tokens.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc_generate.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::runtime::testing::toy {

inline constexpr int64_t kVocab = 16, kHeads = 2, kDim = 3;

// Symbols: 0 batch, 1 seq, 2 past (the cache model only).
inline const int64_t kBatch[] = {1, 1, 1, 0};
inline const int64_t kSeq[] = {1, 1, 1, 1};
inline const int64_t kPast[] = {1, 1, 1, 2};
inline const int64_t kTotal[] = {2, 1, 1, 2, 1, 1, 1};
inline const int64_t kHeadsExpr[] = {1, kHeads, 0};
inline const int64_t kDimExpr[] = {1, kDim, 0};
inline const int64_t kVocabExpr[] = {1, kVocab, 0};
inline const int64_t kIdsBytes[] = {1, 8, 2, 0, 1};
inline const int64_t kIds32Bytes[] = {1, 4, 2, 0, 1};
inline const int64_t kMaskBytes[] = {2, 8, 2, 0, 2, 8, 2, 0, 1};
inline const int64_t kPastBytes[] = {1, 4 * kHeads *kDim, 2, 0, 2};
inline const int64_t kPresentBytes[] = {2, 4 * kHeads *kDim, 2, 0, 2, 4 * kHeads *kDim, 2, 0, 1};
inline const int64_t kLogitsBytes[] = {1, 4 * kVocab, 2, 0, 1};

inline int64_t nextId(int64_t idSum, int64_t length) { return (idSum + 7 * length) % kVocab; }

inline void writeLogits(float *row, int64_t target) {
  for (int64_t v = 0; v < kVocab; ++v)
    row[v] = -float((v - target + kVocab) % kVocab);
}

/// The cache model's step for ids of type Id; `positions`, when given, must
/// be past, past + 1, ... (the kernel fails otherwise).
template <typename Id>
int32_t cacheStep(void *const *buffers, const int64_t *symbols, const int64_t *positions) {
  auto *ids = static_cast<const Id *>(buffers[0]);
  auto *mask = static_cast<const int64_t *>(buffers[1]);
  auto *past = static_cast<const float *>(buffers[2]);
  auto *present = static_cast<float *>(buffers[3]);
  auto *logits = static_cast<float *>(buffers[4]);
  int64_t batch = symbols[0], seq = symbols[1], pastLength = symbols[2], total = pastLength + seq;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < total; ++t)
      if (mask[b * total + t] != 1)
        return 1;
    for (int64_t s = 0; positions && s < seq; ++s)
      if (positions[b * seq + s] != pastLength + s)
        return 1;
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t t = 0; t < total; ++t)
        for (int64_t d = 0; d < kDim; ++d)
          present[((b * kHeads + h) * total + t) * kDim + d] =
              t < pastLength ? past[((b * kHeads + h) * pastLength + t) * kDim + d]
                             : float(ids[b * seq + t - pastLength] + 100 * h + 10 * d);
    float sum = 0;
    for (int64_t t = 0; t < total; ++t) {
      sum += present[(b * kHeads * total + t) * kDim];
      if (t >= pastLength)
        writeLogits(logits + (b * seq + t - pastLength) * kVocab, nextId(int64_t(sum), t + 1));
    }
  }
  return 0;
}

/// The cache model honouring left padding (the joining rows of continuous
/// batching): positions under mask 0 are skipped, and the length in the
/// rule is the position id + 1. buffers: ids (i32), mask, past, present,
/// logits, position_ids.
inline int32_t paddedKernel(void *const *buffers, const int64_t *symbols, int64_t, int64_t) {
  auto *ids = static_cast<const int32_t *>(buffers[0]);
  auto *mask = static_cast<const int64_t *>(buffers[1]);
  auto *past = static_cast<const float *>(buffers[2]);
  auto *present = static_cast<float *>(buffers[3]);
  auto *logits = static_cast<float *>(buffers[4]);
  auto *positions = static_cast<const int64_t *>(buffers[5]);
  int64_t batch = symbols[0], seq = symbols[1], pastLength = symbols[2], total = pastLength + seq;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t t = 0; t < total; ++t)
        for (int64_t d = 0; d < kDim; ++d)
          present[((b * kHeads + h) * total + t) * kDim + d] =
              t < pastLength ? past[((b * kHeads + h) * pastLength + t) * kDim + d]
                             : float(ids[b * seq + t - pastLength] + 100 * h + 10 * d);
    float sum = 0;
    for (int64_t t = 0; t < total; ++t) {
      int64_t visible = mask[b * total + t];
      if (visible != 0 && visible != 1)
        return 1;
      sum += visible ? present[(b * kHeads * total + t) * kDim] : 0;
      if (t >= pastLength)
        writeLogits(logits + (b * seq + t - pastLength) * kVocab,
                    nextId(int64_t(sum), positions[b * seq + t - pastLength] + 1));
    }
  }
  return 0;
}

/// buffers: ids, mask, past, present, logits.
inline int32_t cacheKernel(void *const *buffers, const int64_t *symbols, int64_t, int64_t) {
  return cacheStep<int64_t>(buffers, symbols, nullptr);
}

/// buffers: ids (i32), mask, past, present, logits, position_ids.
inline int32_t cachePositionsKernel(void *const *buffers, const int64_t *symbols, int64_t,
                                    int64_t) {
  return cacheStep<int32_t>(buffers, symbols, static_cast<const int64_t *>(buffers[5]));
}

/// buffers: ids, mask, logits.
inline int32_t fullKernel(void *const *buffers, const int64_t *symbols, int64_t, int64_t) {
  auto *ids = static_cast<const int64_t *>(buffers[0]);
  auto *mask = static_cast<const int64_t *>(buffers[1]);
  auto *logits = static_cast<float *>(buffers[2]);
  int64_t batch = symbols[0], seq = symbols[1];
  for (int64_t b = 0; b < batch; ++b) {
    int64_t sum = 0;
    for (int64_t t = 0; t < seq; ++t) {
      if (mask[b * seq + t] != 1)
        return 1;
      sum += ids[b * seq + t];
      writeLogits(logits + (b * seq + t) * kVocab, nextId(sum, t + 1));
    }
  }
  return 0;
}

/// A toy decoder; `withCache` picks the variant, `withPositions` adds a
/// position_ids input to the cache model and makes its ids i32, `padded`
/// makes that one honour left padding (paddedKernel). Names can be changed
/// before descriptor() to test the role guessing.
struct ToyDecoder {
  explicit ToyDecoder(bool withCache, bool withPositions = false, bool withPadding = false)
      : cache(withCache), positions(withCache && withPositions),
        padded(withCache && withPositions && withPadding) {
    inputNames = {"input_ids", "attention_mask"};
    outputNames = {"logits"};
    if (cache) {
      inputNames.push_back("past_key_0");
      outputNames.push_back("present_key_0");
    }
    if (positions)
      inputNames.push_back("position_ids");
  }

  const onnxc_model_descriptor *descriptor() {
    inputs = {
        {inputNames[0].c_str(), positions ? ONNXC_I32 : ONNXC_I64, 2, idsDims, "[batch, seq]"},
        {inputNames[1].c_str(), ONNXC_I64, 2, cache ? maskCacheDims : idsDims,
         cache ? "[batch, past + seq]" : "[batch, seq]"}};
    outputs = {{outputNames[0].c_str(), ONNXC_F32, 3, logitsDims, "[batch, seq, 16]"}};
    buffers = {{ONNXC_BUFFER_INPUT, 0, positions ? kIds32Bytes : kIdsBytes, nullptr, 0, 0},
               {ONNXC_BUFFER_INPUT, 1, cache ? kMaskBytes : kIdsBytes, nullptr, 0, 0}};
    if (cache) {
      inputs.push_back({inputNames[2].c_str(), ONNXC_F32, 4, pastDims, "[batch, 2, past, 3]"});
      outputs.push_back(
          {outputNames[1].c_str(), ONNXC_F32, 4, presentDims, "[batch, 2, past + seq, 3]"});
      buffers.push_back({ONNXC_BUFFER_INPUT, 2, kPastBytes, nullptr, 0, 0});
      buffers.push_back({ONNXC_BUFFER_OUTPUT, 1, kPresentBytes, nullptr, 0, 0});
      stepBuffers = {0, 1, 2, 3, 4};
    } else {
      stepBuffers = {0, 1, 2};
    }
    buffers.push_back({ONNXC_BUFFER_OUTPUT, 0, kLogitsBytes, nullptr, 0, 0});
    if (positions) {
      inputs.push_back({inputNames[3].c_str(), ONNXC_I64, 2, idsDims, "[batch, seq]"});
      buffers.push_back({ONNXC_BUFFER_INPUT, 3, kIdsBytes, nullptr, 0, 0});
      stepBuffers.push_back(5);
    }
    step = {.name = "toy",
            .kernel = padded      ? paddedKernel
                      : positions ? cachePositionsKernel
                      : cache     ? cacheKernel
                                  : fullKernel,
            .task_count = nullptr,
            .num_buffers = int32_t(stepBuffers.size()),
            .buffers = stepBuffers.data(),
            .failure = "the mask is not all ones",
            .kind = ONNXC_STEP_KERNEL,
            .branch_target = 0};
    model = {}; // unset fields stay 0 or null: no assumptions, cache pairs, precision or version
    model.abi_version = ONNXC_ABI_VERSION;
    model.model_name = "toy";
    model.num_symbols = cache ? 3 : 2;
    model.symbol_names = symbolNames;
    model.symbol_sources = symbolSources;
    model.num_inputs = int32_t(inputs.size());
    model.inputs = inputs.data();
    model.num_outputs = int32_t(outputs.size());
    model.outputs = outputs.data();
    model.num_buffers = int32_t(buffers.size());
    model.buffers = buffers.data();
    model.num_steps = 1;
    model.steps = &step;
    return &model;
  }

  bool cache, positions, padded;
  std::vector<std::string> inputNames, outputNames;
  const char *symbolNames[3] = {"batch", "seq", "past"};
  onnxc_symbol_source symbolSources[3] = {{0, 0}, {0, 1}, {2, 2}};
  onnxc_dim_expr idsDims[2] = {kBatch, kSeq};
  onnxc_dim_expr maskCacheDims[2] = {kBatch, kTotal};
  onnxc_dim_expr pastDims[4] = {kBatch, kHeadsExpr, kPast, kDimExpr};
  onnxc_dim_expr presentDims[4] = {kBatch, kHeadsExpr, kTotal, kDimExpr};
  onnxc_dim_expr logitsDims[3] = {kBatch, kSeq, kVocabExpr};
  std::vector<onnxc_tensor_info> inputs, outputs;
  std::vector<onnxc_buffer> buffers;
  std::vector<int32_t> stepBuffers;
  onnxc_step step{};
  onnxc_model_descriptor model{};
};

} // namespace onnxc::runtime::testing::toy

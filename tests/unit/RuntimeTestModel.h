//===- tests/unit/RuntimeTestModel.h - A hand-built model for runtime tests ===//
//
// What codegen will emit, written by hand: a descriptor whose kernels are
// small C++ functions, so runtime tests need neither LLVM nor an ONNX file.
//
//   x[batch, seq, 4] f32, c[4] f32, mask[batch, seq] i64
//   step 0 add:       a = x + c                   a: [0, 1]
//   step 1 relu:      b = relu(a)                 b: [1, 2]
//   step 2 scale:     t = b * 2                   t: [2, 3]  (may reuse a's bytes)
//   step 3 bias_mask: z = (t + d) * mask          d: constant [4]
//   step 4 rowsum:    s[batch] = sum of z over seq and channels
//
// Tables are public vectors so a test can break one field and rebuild the
// descriptor; descriptor() re-points every pointer at the current tables.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace onnxc::runtime::testing {

inline constexpr int64_t kChannels = 4;
inline const float kBias[kChannels] = {0.1f, -0.2f, 0.3f, 0.0f};  // input c
inline const float kShift[kChannels] = {0.5f, -1.0f, 0.0f, 2.0f}; // constant d

// Dim expressions (model_abi.h encoding); symbol 0 = batch, 1 = seq.
inline const int64_t kBatchExpr[] = {1, 1, 1, 0};
inline const int64_t kSeqExpr[] = {1, 1, 1, 1};
inline const int64_t kChannelsExpr[] = {1, kChannels, 0};
inline const int64_t kRowsF32Bytes[] = {1, kChannels * 4, 2, 0, 1};
inline const int64_t kRowsI64Bytes[] = {1, 8, 2, 0, 1};
inline const int64_t kChannelsF32Bytes[] = {1, kChannels * 4, 0};
inline const int64_t kBatchF32Bytes[] = {1, 4, 1, 0};

inline int64_t rowsOf(const int64_t *symbols) { return symbols[0] * symbols[1]; }
inline int64_t rowTasks(const int64_t *symbols) { return rowsOf(symbols); }
inline int64_t batchTasks(const int64_t *symbols) { return symbols[0]; }

inline int32_t addKernel(void *const *buffers, const int64_t *, int64_t begin, int64_t end) {
  auto *x = static_cast<const float *>(buffers[0]);
  auto *c = static_cast<const float *>(buffers[1]);
  auto *a = static_cast<float *>(buffers[2]);
  for (int64_t row = begin; row < end; ++row)
    for (int64_t ch = 0; ch < kChannels; ++ch)
      a[row * kChannels + ch] = x[row * kChannels + ch] + c[ch];
  return 0;
}

inline int32_t reluKernel(void *const *buffers, const int64_t *, int64_t begin, int64_t end) {
  auto *a = static_cast<const float *>(buffers[0]);
  auto *b = static_cast<float *>(buffers[1]);
  for (int64_t i = begin * kChannels; i < end * kChannels; ++i)
    b[i] = std::max(a[i], 0.0f);
  return 0;
}

inline int32_t scaleKernel(void *const *buffers, const int64_t *, int64_t begin, int64_t end) {
  auto *b = static_cast<const float *>(buffers[0]);
  auto *t = static_cast<float *>(buffers[1]);
  for (int64_t i = begin * kChannels; i < end * kChannels; ++i)
    t[i] = b[i] * 2.0f;
  return 0;
}

inline int32_t biasMaskKernel(void *const *buffers, const int64_t *, int64_t begin, int64_t end) {
  auto *t = static_cast<const float *>(buffers[0]);
  auto *d = static_cast<const float *>(buffers[1]);
  auto *mask = static_cast<const int64_t *>(buffers[2]);
  auto *z = static_cast<float *>(buffers[3]);
  for (int64_t row = begin; row < end; ++row)
    for (int64_t ch = 0; ch < kChannels; ++ch)
      z[row * kChannels + ch] = (t[row * kChannels + ch] + d[ch]) * float(mask[row]);
  return 0;
}

inline int32_t rowSumKernel(void *const *buffers, const int64_t *symbols, int64_t begin,
                            int64_t end) {
  auto *z = static_cast<const float *>(buffers[0]);
  auto *s = static_cast<float *>(buffers[1]);
  int64_t perBatch = symbols[1] * kChannels;
  for (int64_t b = begin; b < end; ++b) {
    float sum = 0;
    for (int64_t i = 0; i < perBatch; ++i)
      sum += z[b * perBatch + i];
    s[b] = sum;
  }
  return 0;
}

struct TestModel {
  enum Buffer { X, C, Mask, Z, S, D, A, B, T };

  TestModel() {
    inputs = {{"x", ONNXC_F32, 3, nullptr, "[batch, seq, 4]"},
              {"c", ONNXC_F32, 1, nullptr, "[4]"},
              {"mask", ONNXC_I64, 2, nullptr, "[batch, seq]"}};
    inputDims = {{kBatchExpr, kSeqExpr, kChannelsExpr}, {kChannelsExpr}, {kBatchExpr, kSeqExpr}};
    outputs = {{"z", ONNXC_F32, 3, nullptr, "[batch, seq, 4]"},
               {"s", ONNXC_F32, 1, nullptr, "[batch]"}};
    outputDims = {{kBatchExpr, kSeqExpr, kChannelsExpr}, {kBatchExpr}};
    buffers = {{ONNXC_BUFFER_INPUT, 0, kRowsF32Bytes, nullptr, 0, 0},
               {ONNXC_BUFFER_INPUT, 1, kChannelsF32Bytes, nullptr, 0, 0},
               {ONNXC_BUFFER_INPUT, 2, kRowsI64Bytes, nullptr, 0, 0},
               {ONNXC_BUFFER_OUTPUT, 0, kRowsF32Bytes, nullptr, 0, 0},
               {ONNXC_BUFFER_OUTPUT, 1, kBatchF32Bytes, nullptr, 0, 0},
               {ONNXC_BUFFER_CONSTANT, 0, kChannelsF32Bytes, kShift, 0, 0},
               {ONNXC_BUFFER_INTERMEDIATE, 0, kRowsF32Bytes, nullptr, 0, 1},
               {ONNXC_BUFFER_INTERMEDIATE, 0, kRowsF32Bytes, nullptr, 1, 2},
               {ONNXC_BUFFER_INTERMEDIATE, 0, kRowsF32Bytes, nullptr, 2, 3}};
    steps = {{"add", addKernel, rowTasks, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0},
             {"relu", reluKernel, rowTasks, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0},
             {"scale", scaleKernel, rowTasks, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0},
             {"bias_mask", biasMaskKernel, rowTasks, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0},
             {"rowsum", rowSumKernel, batchTasks, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0}};
    stepBuffers = {{X, C, A}, {A, B}, {B, T}, {T, D, Mask, Z}, {Z, S}};
  }

  /// The descriptor for the current tables; valid while this object lives
  /// and its vectors are not resized.
  const onnxc_model_descriptor *descriptor() {
    for (size_t i = 0; i < inputs.size(); ++i)
      inputs[i].dims = inputDims[i].data();
    for (size_t i = 0; i < outputs.size(); ++i)
      outputs[i].dims = outputDims[i].data();
    for (size_t i = 0; i < steps.size(); ++i) {
      steps[i].num_buffers = static_cast<int32_t>(stepBuffers[i].size());
      steps[i].buffers = stepBuffers[i].data();
    }
    model = {abiVersion,
             "relu_scale",
             static_cast<int32_t>(symbolNames.size()),
             symbolNames.data(),
             symbolSources.data(),
             static_cast<int32_t>(inputs.size()),
             inputs.data(),
             static_cast<int32_t>(outputs.size()),
             outputs.data(),
             static_cast<int32_t>(buffers.size()),
             buffers.data(),
             static_cast<int32_t>(steps.size()),
             steps.data(),
             static_cast<int32_t>(assumptions.size()),
             assumptions.data(),
             static_cast<int32_t>(cachePairs.size()),
             cachePairs.empty() ? nullptr : cachePairs.data(),
             precision,
             cpuFeatures,
             "test",
             nullptr};
    return &model;
  }

  uint32_t abiVersion = ONNXC_ABI_VERSION;
  const char *precision = "f32";
  const char *cpuFeatures = "";
  std::vector<const char *> symbolNames = {"batch", "seq"};
  std::vector<onnxc_symbol_source> symbolSources = {{0, 0}, {0, 1}};
  std::vector<onnxc_tensor_info> inputs, outputs;
  std::vector<std::vector<onnxc_dim_expr>> inputDims, outputDims;
  std::vector<onnxc_buffer> buffers;
  std::vector<onnxc_step> steps;
  std::vector<std::vector<int32_t>> stepBuffers;
  std::vector<onnxc_assumption> assumptions;
  std::vector<onnxc_cache_pair> cachePairs;
  onnxc_model_descriptor model{};
};

/// Inputs for one shape, with the outputs the model must produce.
struct TestCase {
  int64_t batch, seq;
  std::vector<float> x;
  std::vector<int64_t> mask;
  std::vector<float> z, s;

  TestCase(int64_t batchSize, int64_t seqLen) : batch(batchSize), seq(seqLen) {
    int64_t rows = batch * seq;
    for (int64_t i = 0; i < rows * kChannels; ++i)
      x.push_back(float((i * 37) % 23) / 11.0f - 1.0f);
    for (int64_t row = 0; row < rows; ++row)
      mask.push_back(row % 5 == 4 ? 0 : 1);
    z.resize(rows * kChannels);
    s.assign(batch, 0.0f);
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t ch = 0; ch < kChannels; ++ch) {
        float relu = std::max(x[row * kChannels + ch] + kBias[ch], 0.0f);
        z[row * kChannels + ch] = (relu * 2.0f + kShift[ch]) * float(mask[row]);
      }
    // Same summation order as rowSumKernel, so results compare exactly.
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < seq * kChannels; ++i)
        s[b] += z[b * seq * kChannels + i];
  }

  /// The three input tensors; they point into this object.
  std::vector<onnxc_tensor> inputs() const {
    std::vector<onnxc_tensor> tensors(3);
    tensors[0] = {const_cast<float *>(x.data()), ONNXC_F32, 3, {batch, seq, kChannels}, 0};
    tensors[1] = {const_cast<float *>(kBias), ONNXC_F32, 1, {kChannels}, 0};
    tensors[2] = {const_cast<int64_t *>(mask.data()), ONNXC_I64, 2, {batch, seq}, 0};
    return tensors;
  }
};

} // namespace onnxc::runtime::testing

//===- runtime/generate/Generator.h - The token loop over a compiled decoder -===//
//
// Prefill on the prompt, then one step per token (onnxc_generate.h). With a
// cache the generator owns the cache buffers, preallocated to the capacity.
// A pair the model declares in place (model_abi.h's onnxc_cache_pair) has
// one buffer, bound as both past and present with the session's cache
// capacity set to the generator's: a step writes only the new positions. Any
// other pair has two: a step reads past from one while the session writes
// present straight into the other (caller-owned outputs), then they swap. The mask,
// positions and token buffers are filled once for the capacity, the session's
// arena is reserved for the largest step, and the inputs and outputs are
// tensors the generator keeps: a step allocates nothing that grows with the
// context. Without a cache every step re-runs the whole sequence.
//
// An encoder-decoder generation adds an encoder session: encode() runs it
// once per source, and its outputs (hidden states, cross-attention K/V) stay
// in that session's arena, bound as the decoder's context inputs for every
// step until the next encode; the source mask is ones of the source length.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "AlignedBuffer.h"
#include "GeneratorRoles.h"
#include "Sampler.h"
#include "Session.h"
#include "onnxc/onnxc_generate.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace onnxc::runtime {

class Generator {
public:
  /// Finds the roles and creates the session; null with `error` set when
  /// the model cannot be generated from. May throw std::bad_alloc.
  static std::unique_ptr<Generator> create(const onnxc_model_descriptor *model,
                                           const onnxc_generate_options &options,
                                           std::string &error,
                                           const onnxc_model_descriptor *encoder = nullptr);

  /// See onnxc_generator_encode: runs the encoder on the source ids and
  /// binds its outputs as the decoder's context. false with error() set.
  bool encode(const int64_t *sourceIds, int64_t count);
  /// See onnxc_generator_prefill / _next. false / -1 with error() set.
  bool prefill(const int64_t *promptIds, int64_t count);
  int next(int64_t &token);

  onnxc_generate_mode mode() const {
    return roles_.hasCache() ? ONNXC_GENERATE_KV_CACHE : ONNXC_GENERATE_FULL_SEQUENCE;
  }
  const std::string &description() const { return description_; }
  const std::string &error() const { return error_; }
  /// Sets error() for a call the C API refuses before it gets here (a NULL
  /// pointer, a negative count); returns false.
  bool refuseCall(std::string message) { return fail(std::move(message)); }
  int64_t capacity() const { return capacity_; }
  /// Cache pairs updated in place (one buffer each); the others swap two.
  int32_t pairsInPlace() const;
  /// Positions fed through the model so far (prompt and fed tokens).
  int64_t length() const { return int64_t(tokens_.size()); }
  Session &session() { return *session_; }

private:
  Generator(const onnxc_model_descriptor &model, const onnxc_generate_options &options,
            GeneratorRoles roles, std::unique_ptr<Session> session);

  struct Encoder {
    const onnxc_model_descriptor *model = nullptr;
    EncoderRoles roles;
    std::unique_ptr<Session> session;
    std::vector<onnxc_tensor> inputs, outputs;
    std::vector<int32_t> ids32;             ///< The source ids for an i32 ids input.
    AlignedBuffer maskOnes;                 ///< The encoder's mask: ones.
    std::vector<AlignedBuffer> sourceMasks; ///< Per context input fed the source mask.
    std::vector<onnxc_tensor> context;      ///< Per roles_.context entry: the bound tensor.
    bool encoded = false;
  };
  bool runEncoder(const int64_t *sourceIds, int64_t count);
  bool bindContext(int64_t count);

  bool fail(std::string message);
  /// Makes every buffer hold `capacity` positions (only ever grows).
  bool allocate(int64_t capacity);
  bool allocateBuffers(int64_t capacity);
  /// Points the inputs and outputs at the buffers for a run of `newTokens`
  /// after `past` cached positions, with the ids at `ids`.
  void bindTensors(const int64_t *ids, int64_t newTokens, int64_t past);
  /// Reserves the session's arena for the largest run the capacity allows.
  bool reserveSession(int64_t promptLength);
  /// Runs the model on the last `newTokens` of tokens_ (all of them without a cache).
  bool runModel(int64_t newTokens);
  /// The logits row of the last position of the last run.
  const float *lastLogits(int64_t &vocab) const;

  const onnxc_model_descriptor &model_;
  onnxc_generate_options options_;
  GeneratorRoles roles_;
  std::unique_ptr<Session> session_;
  Sampler sampler_;
  std::string description_;
  std::string error_;

  int64_t capacity_ = 0;
  std::vector<int64_t> tokens_; ///< Prompt plus fed tokens; reserved to the capacity.
  std::vector<int32_t> ids32_;  ///< The ids again for an i32 ids input.
  AlignedBuffer maskOnes_;      ///< capacity ones in the mask's dtype.
  AlignedBuffer positions_;     ///< 0, 1, ..., capacity - 1 in the positions' dtype.
  std::vector<std::array<AlignedBuffer, 2>> cache_; ///< Per pair: the ping-pong halves.
  std::vector<bool> inPlace_;                       ///< Per pair: one buffer (half 0) only.
  size_t cacheBytes_ = 0;                           ///< Bytes of each half.
  int current_ = 0;                                 ///< The half that holds past.
  int64_t cached_ = 0;                              ///< Positions in the cache.
  std::vector<onnxc_tensor> inputs_, outputs_;
  std::vector<int64_t> symbols_;
  std::unique_ptr<Encoder> encoder_; ///< Encoder-decoder generation only.

  bool started_ = false, logitsReady_ = false, ended_ = false;
  int64_t produced_ = 0, lastToken_ = -1;
};

} // namespace onnxc::runtime

//===- runtime/generate/Generator.h - The token loop over a compiled decoder -===//
//
// Prefill on the prompt, then one step per token (onnxc_generate.h). With a
// cache the generator owns the cache buffers, preallocated to the capacity.
// A pair the model declares in place (model_abi.h's onnxc_cache_pair) has
// one buffer, bound as both past and present with the session's cache
// capacity set to the generator's: a step writes only the new positions. Any
// other pair has two: a step reads past from one while the session writes
// present straight into the other (caller-owned outputs), then they swap. A
// fixed-length cache (opset 24's TensorScatter) is laid out at the capacity
// either way, and each run is told where its positions go (write indices). The mask,
// positions and token buffers are filled once for the capacity, the session's
// arena is reserved for the largest step, and the inputs and outputs are
// tensors the generator keeps: a step allocates nothing that grows with the
// context. Without a cache every step re-runs the whole sequence.
//
// A generation has rows (the batch): one prompt, several prompts of
// different lengths (left-padded with mask 0 and position ids counted from
// each row's first real token, as HF does for decoder-only models), or the
// beams of a beam search. Each row has its own ids, sampler and stop, and the
// cache holds every row ([batch, ..., capacity, ...]); beam search reorders
// the rows of the cache buffers in place after each step. Prompts of lengths
// far apart are prefilled in groups, unpadded, and their caches joined into
// the batch's rows (GeneratorPrefill.cpp).
//
// An encoder-decoder generation adds an encoder session: encode() runs it
// once per source, and its outputs (hidden states, cross-attention K/V) stay
// in that session's arena, bound as the decoder's context inputs for every
// step until the next encode; the source mask is ones of the source length.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "AlignedBuffer.h"
#include "BeamSearch.h"
#include "GeneratorRoles.h"
#include "LogitsProcessors.h"
#include "Sampler.h"
#include "Session.h"
#include "onnxc/onnxc_generate.h"

#include <array>
#include <functional>
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
  /// See onnxc_generator_prefill_batch / _next_batch: `rows` prompts.
  bool prefillBatch(const int64_t *const *prompts, const int64_t *counts, int64_t rows);
  int nextBatch(int64_t *tokens, int32_t *produced);
  /// See onnxc_generator_beam_search: the whole search on one prompt.
  bool beamSearch(const int64_t *promptIds, int64_t count);
  const std::vector<BeamHypothesis> &sequences() const { return sequences_; }
  /// The last step's log-probabilities of row `row` (onnxc_generator_logprob).
  bool logprob(int64_t row, float &value);
  int32_t topLogprobs(int64_t row, int64_t *ids, float *logprobs, int32_t room);
  int64_t rows() const { return int64_t(rows_.size()); }
  /// Continuous batching (GeneratorJoin.cpp): rows join a running batch
  /// between steps and leave it, each with its own cache rows. See
  /// onnxc_generator_add_row / _remove_row / _reserve_rows / _joinable.
  bool addRow(const int64_t *prompt, int64_t count, const onnxc_generate_options *rowOptions,
              int64_t &first);
  bool addRows(const int64_t *const *prompts, const int64_t *counts, int64_t count,
               const onnxc_generate_options *const *rowOptions, int64_t *firsts);
  bool removeRow(int64_t row);
  bool reserveRows(int64_t rows);
  /// The most positions, up to `upTo`, a generation of this model can hold.
  int64_t maxPositions(int64_t upTo) const;
  /// Why a row cannot join a running batch of this model, or empty.
  std::string joinProblem() const;

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
  int32_t cachePairs() const { return int32_t(roles_.cache.size()); }
  /// How many pairs are recurrent states (fed back whole, not a KV cache).
  int32_t statePairs() const;
  /// Positions fed through the model so far (the padded prompt and fed tokens).
  int64_t length() const { return length_; }
  Session &session() { return *session_; }

private:
  Generator(const onnxc_model_descriptor &model, const onnxc_generate_options &options,
            GeneratorRoles roles, std::unique_ptr<Session> session);

  /// One row of the batch: its prompt and the ids fed after it (a finished
  /// row is fed the pad id), behind `pad` positions of left padding.
  struct Row {
    explicit Row(const Sampler &sampler) : sampler(sampler) {}
    std::vector<int64_t> tokens; ///< Prompt, then the ids produced (and pads once finished).
    int64_t promptLength = 0;
    int64_t pad = 0;
    int64_t produced = 0;
    int64_t maxNewTokens = 0; ///< The generator's max_new_tokens, or the row's own.
    bool finished = false;
    Sampler sampler;
    float logprob = 0;
    std::vector<int64_t> topIds;
    std::vector<float> topLogprobs;
  };

  /// Called with each row of a run apart, its index there and its last logits.
  using ApartLogits = std::function<void(Row &, size_t, const float *, int64_t)>;

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
  /// Makes every buffer hold `capacity` positions of `batch` rows (only ever grows).
  bool allocate(int64_t capacity, int64_t batch);
  bool allocateBuffers(int64_t capacity, int64_t batch);
  /// Zeroes the past of every pair that is read whole: a state starts at
  /// zero, and a fixed-length cache's unwritten rows, masked out, must hold
  /// no NaN (it would still poison the attention's sum: 0 * NaN).
  void clearFedBackCaches();
  /// Sets the length of a fixed-length cache (its symbol) to `capacity`.
  void bindCacheLength(int64_t capacity);
  /// "cache input 'past_key_0' [...] holds (a fixed length of 96)".
  std::string fixedCacheText() const;
  /// Whether pair k's buffers have the capacity's rows along the sequence
  /// (in place, or a fixed-length cache), not the positions cached.
  bool laidOutAtCapacity(size_t k) const { return inPlace_[k] || roles_.fixedCache(); }
  /// The mask's length in a run that ends at `total` positions: the
  /// capacity for a mask over a fixed-length cache, else `total`.
  int64_t maskWidth(int64_t total) const;
  /// Checks the prompts, sizes the buffers, fills the rows and runs the prompts.
  bool startRows(const int64_t *const *prompts, const int64_t *counts, int64_t rows);
  std::string checkRows(const int64_t *const *prompts, const int64_t *counts, int64_t rows);
  /// Why the caches cannot hold rows apart (a cache that does not lead with the batch), or empty.
  std::string checkBatchLeadingCaches() const;
  /// Joining prompts run together (kJoinRows at most) in the join buffers.
  static constexpr int64_t kJoinRows = 4;
  /// Where a joining row's cache is in the join run's present.
  struct JoinedRow {
    int64_t index, count, runPad, runLength;
  };
  /// A joining row with its prompt and its options; false with error() set.
  bool makeJoiningRow(const int64_t *prompt, int64_t count,
                      const onnxc_generate_options *rowOptions, Row &row);
  /// Joins up to kJoinRows rows between two steps; their first tokens go to `firsts`.
  bool joinGroup(std::vector<Row> &joining, int64_t *firsts);
  /// Runs `apart` as a generation of its own into joinCache_ (the batch's
  /// state set aside and put back), then hands each row's logits to `use`;
  /// `presentHalf` is the join buffers' half that holds their cache.
  bool runApart(std::vector<Row> &apart, size_t &presentHalf, const ApartLogits &use);
  /// Runs the joining prompts into joinCache_ and chooses their first tokens.
  bool runJoiningPrompts(std::vector<Row> &joining, size_t &presentHalf);
  /// A batch's prompts of different lengths run in groups of similar
  /// lengths (GeneratorPrefill.cpp): the groups, longest first, of row
  /// indices, or none when one padded run of them all is the better.
  std::vector<std::vector<int64_t>> prefillGroups(const int64_t *counts, int64_t rows) const;
  /// Runs the groups apart, places their caches in the batch's rows and
  /// keeps each row's last logits for the first next_batch.
  bool prefillApart(const std::vector<std::vector<int64_t>> &groups);
  /// Rewrites the past of every pair: row d becomes old row sources[d] moved
  /// shifts[d] positions along the sequence, with `newCached` positions.
  void relayoutCache(const std::vector<int64_t> &sources, const std::vector<int64_t> &shifts,
                     int64_t newCached);
  /// Drops the padding every row has (they shift left), when there is some.
  void compactRows();
  /// Copies a joining row's cache (joinCache_ half `half`) into row `row`
  /// of the batch at position `offset`, zeroing its padding.
  void placeJoinedRow(int64_t row, const JoinedRow &joined, int64_t offset, size_t half);
  /// Per pair: the rows of one position's block before and after the sequence axis.
  void cacheBlock(size_t pair, int64_t &outer, int64_t &inner);
  /// Writes the ids, mask and positions of a run of `newTokens` after `past`
  /// positions (GeneratorRows.cpp) and points the tensors at them.
  void fillRunInputs(int64_t newTokens, int64_t past);
  void bindTensors(int64_t newTokens, int64_t past);
  /// Reserves the session's arena for the largest run the capacity allows.
  bool reserveSession(int64_t promptLength);
  /// Runs the model on the last `newTokens` positions (all of them without a cache).
  bool runModel(int64_t newTokens);
  /// The logits row of the last position of row `row` of the last run.
  const float *lastLogits(int64_t row, int64_t &vocab) const;
  /// Appends one id to every row (the pad id to finished ones) and runs a step.
  bool step(const std::vector<int64_t> &nextIds);
  /// The processed logits of a row (penalties, min_new_tokens) in scratch_,
  /// or `logits` itself when nothing applies.
  const float *processedLogits(const Row &row, const float *logits, int64_t vocab);
  /// Chooses a row's next id and records its log-probabilities.
  int64_t chooseToken(Row &row, const float *logits, int64_t vocab);
  /// Reorders the rows and their cache rows: row b becomes row sources[b].
  void reorderRows(const std::vector<int32_t> &sources);
  void gatherCacheRows(const std::vector<int32_t> &sources);
  int64_t padId() const;
  bool wantsLogprobs() const { return options_.logprobs != 0 || options_.top_logprobs > 0; }

  const onnxc_model_descriptor &model_;
  onnxc_generate_options options_;
  GeneratorRoles roles_;
  std::unique_ptr<Session> session_;
  Sampler sampler_; ///< Each row's starts as a copy.
  ProcessorParams processors_;
  BeamOptions beam_;
  std::string description_;
  std::string error_;

  int64_t capacity_ = 0, batchCapacity_ = 0;
  std::vector<Row> rows_;
  int64_t length_ = 0;          ///< Positions of the padded rows fed so far.
  std::vector<int64_t> ids_;    ///< A run's ids, [rows, new tokens].
  std::vector<int32_t> ids32_;  ///< The same for an i32 ids input.
  AlignedBuffer mask_;          ///< A run's mask, [rows, maskWidth()] in the mask's dtype.
  AlignedBuffer writeIndices_;  ///< A run's write indices, [rows] (fixed-length caches).
  AlignedBuffer validLengths_;  ///< A run's valid lengths, [rows] (fixed-length caches).
  AlignedBuffer positions_;     ///< A run's position ids, [rows, new tokens].
  std::vector<float> scratch_;  ///< One row of processed logits.
  std::vector<int32_t> seen_;   ///< The penalties' scratch.
  std::vector<int64_t> topIds_; ///< The log-probabilities' scratch.
  std::vector<float> topValues_;
  std::vector<int32_t> pastAxis_; ///< Per pair: the cache's sequence axis.
  std::vector<uint8_t> gathered_; ///< Beam search: cache rows saved while reordering.
  std::vector<BeamHypothesis> sequences_;
  std::vector<std::array<AlignedBuffer, 2>> cache_;     ///< Per pair: the ping-pong halves.
  std::vector<std::array<AlignedBuffer, 2>> joinCache_; ///< Per pair: a joining row's cache.
  std::vector<bool> inPlace_;                           ///< Per pair: one buffer (half 0) only.
  size_t cacheBytes_ = 0;                               ///< Bytes of each half.
  size_t joinBytes_ = 0; ///< Bytes of each joinCache_ half (kJoinRows rows at most).
  int current_ = 0;      ///< The half that holds past.
  int64_t cached_ = 0;   ///< Positions in the cache.
  std::vector<onnxc_tensor> inputs_, outputs_;
  std::vector<int64_t> symbols_;
  std::unique_ptr<Encoder> encoder_; ///< Encoder-decoder generation only.
  /// After a prefill apart: each row's last logits, [rows, promptVocab_],
  /// read in place of the last run's output until the next run.
  std::vector<float> promptLogits_;
  int64_t promptVocab_ = 0;
  bool promptLogitsKept_ = false;

  bool started_ = false, logitsReady_ = false, ended_ = false;
};

} // namespace onnxc::runtime

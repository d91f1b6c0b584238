//===- runtime/generate/Generator.cpp - The token loop over a compiled decoder -===//
#include "Generator.h"

#include "GeneratorLength.h"

#include "DimExpr.h"
#include "DimExprQueries.h"
#include "Dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

namespace onnxc::runtime {

namespace {

/// Bytes of a tensor with `info`'s shape for the bound symbols, or -1 on
/// overflow or a negative dim.
int64_t tensorBytes(const onnxc_model_descriptor &model, const onnxc_tensor_info &info,
                    const int64_t *symbols) {
  int64_t bytes = dtypeSize(info.dtype);
  for (int32_t axis = 0; axis < info.rank; ++axis) {
    std::optional<int64_t> dim = evaluateDimExpr(info.dims[axis], symbols, model.num_symbols);
    if (!dim || *dim < 0 || __builtin_mul_overflow(bytes, *dim, &bytes))
      return -1;
  }
  return bytes;
}

/// Writes `count` elements of `dtype` with the values first, first + step, ...
void fillSequence(void *data, int32_t dtype, int64_t count, int64_t first, int64_t step) {
  for (int64_t i = 0; i < count; ++i) {
    int64_t value = first + i * step;
    switch (dtype) {
    case ONNXC_I64:
      static_cast<int64_t *>(data)[i] = value;
      break;
    case ONNXC_I32:
      static_cast<int32_t *>(data)[i] = int32_t(value);
      break;
    case ONNXC_F32:
      static_cast<float *>(data)[i] = float(value);
      break;
    case ONNXC_F64:
      static_cast<double *>(data)[i] = double(value);
      break;
    case ONNXC_BOOL:
    case ONNXC_U8:
    case ONNXC_I8:
      static_cast<uint8_t *>(data)[i] = uint8_t(value);
      break;
    default:
      // f16/bf16 and other widths: the mask check at create refuses them.
      break;
    }
  }
}

bool isFillableMaskDtype(int32_t dtype) {
  return dtype == ONNXC_I64 || dtype == ONNXC_I32 || dtype == ONNXC_F32 || dtype == ONNXC_F64 ||
         dtype == ONNXC_BOOL || dtype == ONNXC_U8 || dtype == ONNXC_I8;
}

/// Capacities beyond this are a mistake (a negative number cast), not a cache.
constexpr int64_t kMaxCapacity = int64_t(1) << 31;

bool nameContains(const char *name, const char *part) {
  std::string lowered = name ? name : "";
  for (char &c : lowered)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return lowered.find(part) != std::string::npos;
}

/// The name of a model output called logits (any case, any prefix), or
/// null: an encoder has none, so one given as the encoder is a decoder,
/// most likely the two models swapped.
const char *logitsOutputName(const onnxc_model_descriptor &model) {
  for (int32_t o = 0; o < model.num_outputs; ++o)
    if (nameContains(model.outputs[o].name, "logits"))
      return model.outputs[o].name;
  return nullptr;
}

/// Why the decoder of an encoder-decoder pair looks like an encoder: the
/// output taken as its logits (by elimination, not by the mapping) is named
/// as hidden states are. Empty otherwise.
std::string decoderLooksLikeEncoder(const onnxc_model_descriptor &model,
                                    const GeneratorRoles &roles, const char *mapping) {
  const char *name = model.outputs[roles.logits].name;
  if (nameContains(mapping, "logits") || !nameContains(name, "hidden_state"))
    return "";
  return std::string("the decoder's output '") + name +
         "' holds hidden states, not logits: it is an encoder; are the encoder and the decoder "
         "given the right way round? (name the logits with logits=NAME if they are)";
}

std::string checkOptions(const onnxc_generate_options &options) {
  if (options.max_new_tokens < 0)
    return "max_new_tokens is " + std::to_string(options.max_new_tokens) + "; it must be >= 0";
  if (options.capacity < 0 || options.capacity > kMaxCapacity)
    return "capacity is " + std::to_string(options.capacity) +
           "; use 0 (prompt + max_new_tokens) "
           "or a positive number of positions up to 2^31";
  if (options.top_k < 0)
    return "top_k is " + std::to_string(options.top_k) + "; use 0 for no limit";
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f))
    return "top_p is " + std::to_string(options.top_p) + "; it must be in (0, 1]";
  if (std::isnan(options.temperature))
    return "temperature is NaN";
  if (options.eos_token_id < -1)
    return "eos_token_id is " + std::to_string(options.eos_token_id) +
           "; use a token id, or -1 for none";
  if (!(options.min_p >= 0.0f && options.min_p <= 1.0f))
    return "min_p is " + std::to_string(options.min_p) + "; it must be in [0, 1] (0: none)";
  if (options.num_eos_token_ids < 0 || (options.num_eos_token_ids > 0 && !options.eos_token_ids))
    return "eos_token_ids is NULL but num_eos_token_ids is " +
           std::to_string(options.num_eos_token_ids);
  if (options.top_logprobs < 0)
    return "top_logprobs is " + std::to_string(options.top_logprobs) + "; it must be >= 0";
  if (options.pad_token_id < -1)
    return "pad_token_id is " + std::to_string(options.pad_token_id) +
           "; use a token id, or -1 for 0";
  if (options.num_beams > 1 && options.do_sample)
    return "num_beams " + std::to_string(options.num_beams) +
           " with do_sample: beam sampling is not supported; use greedy beam search or sampling";
  return "";
}

ProcessorParams processorParams(const onnxc_generate_options &options) {
  ProcessorParams params;
  params.repetitionPenalty = options.repetition_penalty;
  params.presencePenalty = options.presence_penalty;
  params.frequencyPenalty = options.frequency_penalty;
  params.minNewTokens = options.min_new_tokens;
  if (options.eos_token_id >= 0)
    params.stopIds.push_back(options.eos_token_id);
  for (int32_t i = 0; i < options.num_eos_token_ids; ++i)
    if (!params.isStop(options.eos_token_ids[i]))
      params.stopIds.push_back(options.eos_token_ids[i]);
  return params;
}

BeamOptions beamOptions(const onnxc_generate_options &options) {
  BeamOptions beam;
  beam.numBeams = options.num_beams;
  beam.lengthPenalty = options.length_penalty;
  beam.earlyStopping = options.early_stopping;
  beam.numReturnSequences = options.num_return_sequences;
  return beam;
}

/// Why `ids` cannot be token ids (a negative one would index the embedding
/// table from its end, silently), or empty.
std::string checkTokenIds(const int64_t *ids, int64_t count, const char *what) {
  for (int64_t i = 0; i < count; ++i)
    if (ids[i] < 0)
      return std::string(what) + " id " + std::to_string(ids[i]) + " at position " +
             std::to_string(i) + " is negative; token ids are 0 or more";
  return "";
}

SamplingParams samplingParams(const onnxc_generate_options &options) {
  SamplingParams params;
  params.sample = options.do_sample != 0;
  params.temperature = options.temperature;
  params.topK = options.top_k;
  params.topP = options.top_p;
  params.minP = options.min_p;
  return params;
}

std::string checkMaskDtype(const onnxc_tensor_info &mask, const char *what) {
  if (isFillableMaskDtype(mask.dtype))
    return "";
  return std::string(what) + " input '" + mask.name + "' is " + dtypeName(mask.dtype) +
         "; the generator fills i64, i32, f32, f64, bool, u8 or i8 masks";
}

} // namespace

std::unique_ptr<Generator> Generator::create(const onnxc_model_descriptor *model,
                                             const onnxc_generate_options &options,
                                             std::string &error,
                                             const onnxc_model_descriptor *encoderModel) {
  error = checkOptions(options);
  if (error.empty())
    error = checkProcessorParams(processorParams(options));
  if (error.empty())
    error = checkBeamOptions(beamOptions(options));
  if (!error.empty())
    return nullptr;
  std::unique_ptr<Session> session = Session::create(model, options.num_threads, error);
  if (!session)
    return nullptr;
  auto encoder = encoderModel ? std::make_unique<Encoder>() : nullptr;
  if (encoder) {
    if (const char *logits = logitsOutputName(*encoderModel)) {
      error = std::string("the encoder has a logits output ('") + logits +
              "'): it is a decoder; are the encoder and the decoder given the right way round?";
      return nullptr;
    }
    encoder->model = encoderModel;
    if (!(encoder->session = Session::create(encoderModel, options.num_threads, error)))
      return nullptr;
    if (!(error = findEncoderRoles(*encoderModel, encoder->roles)).empty())
      return nullptr;
    if (encoder->roles.mask >= 0 &&
        !(error = checkMaskDtype(encoderModel->inputs[encoder->roles.mask], "encoder mask"))
             .empty())
      return nullptr;
  }
  GeneratorRoles roles;
  error = findRoles(*model, options.mapping ? options.mapping : "", roles, encoderModel);
  if (error.empty() && encoderModel)
    error = decoderLooksLikeEncoder(*model, roles, options.mapping);
  if (!error.empty())
    return nullptr;

  if (roles.mask >= 0 &&
      !(error = checkMaskDtype(model->inputs[roles.mask], "attention mask")).empty())
    return nullptr;
  for (const ContextInput &context : roles.context)
    if (context.encoderOutput < 0 &&
        !(error = checkMaskDtype(model->inputs[context.input], "source mask")).empty())
      return nullptr;
  std::unique_ptr<Generator> generator(
      new Generator(*model, options, std::move(roles), std::move(session)));
  if (encoder) {
    encoder->inputs.resize(size_t(encoderModel->num_inputs));
    encoder->outputs.resize(size_t(encoderModel->num_outputs));
    encoder->sourceMasks.resize(generator->roles_.context.size());
    encoder->context.resize(generator->roles_.context.size());
    generator->encoder_ = std::move(encoder);
    generator->description_ +=
        "; encoder: ids '" +
        std::string(encoderModel->inputs[generator->encoder_->roles.ids].name) + "'";
  }
  if (options.capacity > 0 && !generator->allocate(options.capacity, 1)) {
    error = generator->error();
    return nullptr;
  }
  return generator;
}

Generator::Generator(const onnxc_model_descriptor &model, const onnxc_generate_options &options,
                     GeneratorRoles roles, std::unique_ptr<Session> session)
    : model_(model), options_(options), roles_(std::move(roles)), session_(std::move(session)),
      sampler_(samplingParams(options), options.seed), processors_(processorParams(options)),
      beam_(beamOptions(options)), cache_(roles_.cache.size()), inputs_(size_t(model.num_inputs)),
      outputs_(size_t(model.num_outputs)), symbols_(size_t(model.num_symbols)) {
  // The mapping string and the stop list belong to the caller; only what
  // was read from them is kept.
  options_.mapping = nullptr;
  options_.eos_token_ids = nullptr;
  options_.num_eos_token_ids = 0;
  for (const CachePair &pair : roles_.cache) {
    bool declared = false;
    for (int32_t p = 0; p < model.num_cache_pairs; ++p)
      declared |=
          model.cache_pairs[p].input == pair.input && model.cache_pairs[p].output == pair.output;
    inPlace_.push_back(declared);
    pastAxis_.push_back(pair.axis);
  }
  description_ = std::string(mode() == ONNXC_GENERATE_KV_CACHE ? "kv-cache: " : "full-sequence: ") +
                 describeRoles(model, roles_);
  if (roles_.hasCache()) {
    int32_t inPlace = pairsInPlace();
    description_ += inPlace == int32_t(inPlace_.size()) ? ", updated in place"
                    : inPlace == 0                      ? ", two buffers per pair"
                                   : ", " + std::to_string(inPlace) + " pairs updated in place, " +
                                         std::to_string(inPlace_.size() - size_t(inPlace)) +
                                         " with two buffers";
  }
}

void Generator::clearFedBackCaches() {
  for (size_t k = 0; k < cache_.size(); ++k)
    if (roles_.cache[k].isState() || roles_.fixedCache())
      std::memset(cache_[k][inPlace_[k] ? 0 : size_t(current_)].data(), 0, cacheBytes_);
}

int32_t Generator::pairsInPlace() const {
  return int32_t(std::count(inPlace_.begin(), inPlace_.end(), true));
}

int32_t Generator::statePairs() const {
  return int32_t(std::count_if(roles_.cache.begin(), roles_.cache.end(),
                               [](const CachePair &pair) { return pair.isState(); }));
}

bool Generator::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

bool Generator::allocate(int64_t capacity, int64_t batch) {
  if (roles_.fixedLength > 0) {
    // The model fixes its caches' length: that is the capacity.
    if (capacity > roles_.fixedLength)
      return fail("a capacity of " + std::to_string(capacity) + " positions is more than " +
                  fixedCacheText());
    capacity = roles_.fixedLength;
  }
  if (capacity <= capacity_ && batch <= batchCapacity_)
    return true;
  capacity = std::max(capacity, capacity_);
  batch = std::max(batch, batchCapacity_);
  if (capacity > kMaxCapacity)
    return fail("a capacity of " + std::to_string(capacity) + " positions is more than 2^31");
  if (batch > kMaxCapacity / capacity)
    return fail("a batch of " + std::to_string(batch) + " rows of " + std::to_string(capacity) +
                " positions is more than 2^31 positions");
  try {
    if (allocateBuffers(capacity, batch))
      return true;
  } catch (const std::bad_alloc &) {
    error_ = "out of memory allocating buffers for " + std::to_string(batch) + " rows of " +
             std::to_string(capacity) + " positions";
  }
  bindCacheLength(capacity_);
  return false;
}

void Generator::bindCacheLength(int64_t capacity) {
  for (size_t s = 0; s < roles_.symbolKinds.size(); ++s)
    if (roles_.symbolKinds[s] == GeneratorRoles::SymbolKind::CacheLength)
      symbols_[s] = capacity;
}

std::string Generator::fixedCacheText() const {
  const onnxc_tensor_info &past = model_.inputs[roles_.cache.front().input];
  return "cache input '" + std::string(past.name) + "' " + past.shape_text +
         " holds (a fixed length of " + std::to_string(roles_.fixedLength) + ")";
}

bool Generator::allocateBuffers(int64_t capacity, int64_t batch) {
  bindCacheLength(capacity);
  size_t elements = size_t(capacity * batch);
  ids_.reserve(elements);
  if (model_.inputs[roles_.ids].dtype == ONNXC_I32)
    ids32_.reserve(elements);
  if (roles_.mask >= 0)
    mask_.reserve(elements * size_t(dtypeSize(model_.inputs[roles_.mask].dtype)));
  if (roles_.positions >= 0)
    positions_.reserve(elements * size_t(dtypeSize(model_.inputs[roles_.positions].dtype)));
  writeIndices_.reserve(size_t(batch) * sizeof(int64_t));
  validLengths_.reserve(size_t(batch) * sizeof(int64_t));
  // Each half holds a full cache: past at the capacity, or a present that
  // reaches it from a prompt or from one new token.
  int64_t most = 0;
  for (const CachePair &pair : roles_.cache) {
    bindGeneratorSymbols(roles_, 1, capacity, symbols_.data(), batch);
    int64_t past = tensorBytes(model_, model_.inputs[pair.input], symbols_.data());
    bindGeneratorSymbols(roles_, 1, capacity - 1, symbols_.data(), batch);
    int64_t step = tensorBytes(model_, model_.outputs[pair.output], symbols_.data());
    bindGeneratorSymbols(roles_, capacity, 0, symbols_.data(), batch);
    int64_t prompt = tensorBytes(model_, model_.outputs[pair.output], symbols_.data());
    if (past < 0 || step < 0 || prompt < 0)
      return fail("cache input '" + std::string(model_.inputs[pair.input].name) +
                  "' overflows at a capacity of " + std::to_string(capacity) + " positions");
    most = std::max({most, past, step, prompt});
  }
  // A pair updated in place is laid out for the session's cache capacity,
  // which is the generator's: its one buffer holds a past at the capacity.
  for (size_t k = 0; k < cache_.size(); ++k)
    for (size_t half = 0; half < (inPlace_[k] ? 1u : 2u); ++half)
      cache_[k][half].reserve(size_t(most));
  // Rows joining a running batch run their prompts into buffers of their
  // own, kJoinRows rows at most (GeneratorJoin.cpp); only a batch of more than
  // one row can be joined.
  joinBytes_ = batch > 1 ? size_t((most + batch - 1) / batch * std::min(batch, kJoinRows)) : 0;
  joinCache_.resize(batch > 1 ? cache_.size() : 0);
  for (size_t k = 0; k < joinCache_.size(); ++k)
    for (size_t half = 0; half < (inPlace_[k] ? 1u : 2u); ++half)
      joinCache_[k][half].reserve(joinBytes_);
  if (pairsInPlace() > 0 && !session_->setCacheCapacity(capacity))
    return fail(session_->error());
  cacheBytes_ = size_t(most);
  capacity_ = capacity;
  batchCapacity_ = batch;
  return true;
}

void Generator::bindTensors(int64_t newTokens, int64_t past) {
  bindGeneratorSymbols(roles_, newTokens, past, symbols_.data(), int64_t(rows_.size()));
  for (int32_t i = 0; i < model_.num_inputs; ++i) {
    const onnxc_tensor_info &info = model_.inputs[i];
    onnxc_tensor &tensor = inputs_[size_t(i)];
    tensor = onnxc_tensor{};
    tensor.dtype = info.dtype;
    tensor.rank = info.rank;
    for (int32_t axis = 0; axis < info.rank; ++axis)
      tensor.dims[axis] =
          evaluateDimExpr(info.dims[axis], symbols_.data(), model_.num_symbols).value_or(-1);
  }
  onnxc_tensor &idsTensor = inputs_[size_t(roles_.ids)];
  if (model_.inputs[roles_.ids].dtype == ONNXC_I32)
    idsTensor.data = ids32_.data();
  else
    idsTensor.data = ids_.data();
  if (roles_.mask >= 0)
    inputs_[size_t(roles_.mask)].data = mask_.data();
  if (roles_.positions >= 0)
    inputs_[size_t(roles_.positions)].data = positions_.data();
  if (roles_.writeIndices >= 0)
    inputs_[size_t(roles_.writeIndices)].data = writeIndices_.data();
  if (roles_.validLengths >= 0)
    inputs_[size_t(roles_.validLengths)].data = validLengths_.data();
  for (size_t k = 0; k < roles_.context.size(); ++k)
    inputs_[size_t(roles_.context[k].input)] = encoder_->context[k];
  for (onnxc_tensor &output : outputs_)
    output = onnxc_tensor{};
  for (size_t k = 0; k < roles_.cache.size(); ++k) {
    // In place: one buffer is both, and the step writes only the new rows.
    size_t pastHalf = inPlace_[k] ? 0 : size_t(current_);
    size_t presentHalf = inPlace_[k] ? 0 : size_t(1 - current_);
    inputs_[size_t(roles_.cache[k].input)].data = cache_[k][pastHalf].data();
    onnxc_tensor &present = outputs_[size_t(roles_.cache[k].output)];
    present.data = cache_[k][presentHalf].data();
    present.size_bytes = cacheBytes_;
  }
}

bool Generator::encode(const int64_t *sourceIds, int64_t count) {
  error_.clear();
  // A new source ends the generation under way: its steps read the old one.
  started_ = false;
  if (!encoder_)
    return fail("this generator has no encoder: encode applies to encoder-decoder generators "
                "(onnxc_generator_create_seq2seq)");
  encoder_->encoded = false;
  if (count <= 0 || !sourceIds)
    return fail("the source is empty; encoding needs at least one token");
  if (std::string problem = checkTokenIds(sourceIds, count, "source"); !problem.empty())
    return fail(problem);
  if (count > kMaxCapacity)
    return fail("a source of " + std::to_string(count) + " tokens is more than 2^31");
  try {
    return runEncoder(sourceIds, count) && bindContext(count);
  } catch (const std::bad_alloc &) {
    return fail("out of memory encoding a source of " + std::to_string(count) + " tokens");
  }
}

bool Generator::runEncoder(const int64_t *sourceIds, int64_t count) {
  Encoder &encoder = *encoder_;
  const onnxc_model_descriptor &model = *encoder.model;
  std::vector<int64_t> symbols(size_t(model.num_symbols));
  for (size_t s = 0; s < symbols.size(); ++s)
    symbols[s] = encoder.roles.symbolIsBatch[s] ? 1 : count;
  for (int32_t i = 0; i < model.num_inputs; ++i) {
    const onnxc_tensor_info &info = model.inputs[i];
    onnxc_tensor &tensor = encoder.inputs[size_t(i)];
    tensor = onnxc_tensor{};
    tensor.dtype = info.dtype;
    tensor.rank = info.rank;
    for (int32_t axis = 0; axis < info.rank; ++axis)
      tensor.dims[axis] =
          evaluateDimExpr(info.dims[axis], symbols.data(), model.num_symbols).value_or(-1);
  }
  onnxc_tensor &ids = encoder.inputs[size_t(encoder.roles.ids)];
  if (ids.dtype == ONNXC_I32) {
    encoder.ids32.assign(sourceIds, sourceIds + count);
    ids.data = encoder.ids32.data();
  } else {
    ids.data = const_cast<int64_t *>(sourceIds);
  }
  if (encoder.roles.mask >= 0) {
    onnxc_tensor &mask = encoder.inputs[size_t(encoder.roles.mask)];
    encoder.maskOnes.reserve(size_t(count * dtypeSize(mask.dtype)));
    fillSequence(encoder.maskOnes.data(), mask.dtype, count, 1, 0);
    mask.data = encoder.maskOnes.data();
  }
  for (onnxc_tensor &output : encoder.outputs)
    output = onnxc_tensor{};
  if (!encoder.session->run(encoder.inputs.data(), int32_t(encoder.inputs.size()),
                            encoder.outputs.data(), int32_t(encoder.outputs.size())))
    return fail("encoder: " + encoder.session->error());
  return true;
}

bool Generator::bindContext(int64_t count) {
  Encoder &encoder = *encoder_;
  // Which context input gave each symbol its value, to name both on a clash.
  std::vector<int32_t> setBy(symbols_.size(), -1);
  for (size_t k = 0; k < roles_.context.size(); ++k) {
    const ContextInput &context = roles_.context[k];
    const onnxc_tensor_info &info = model_.inputs[context.input];
    onnxc_tensor &tensor = encoder.context[k];
    if (context.encoderOutput >= 0) {
      tensor = encoder.outputs[size_t(context.encoderOutput)];
    } else {
      tensor = onnxc_tensor{};
      tensor.dtype = info.dtype;
      tensor.rank = 2;
      tensor.dims[0] = 1;
      tensor.dims[1] = count;
      encoder.sourceMasks[k].reserve(size_t(count * dtypeSize(info.dtype)));
      fillSequence(encoder.sourceMasks[k].data(), info.dtype, count, 1, 0);
      tensor.data = encoder.sourceMasks[k].data();
    }
    for (int32_t axis = 0; axis < info.rank; ++axis) {
      std::optional<int32_t> symbol = singleSymbolOf(info.dims[axis]);
      if (!symbol || roles_.symbolKinds[size_t(*symbol)] != GeneratorRoles::SymbolKind::Context)
        continue;
      int32_t &first = setBy[size_t(*symbol)];
      if (first >= 0 && symbols_[size_t(*symbol)] != tensor.dims[axis])
        return fail("decoder inputs '" + std::string(model_.inputs[first].name) + "' and '" +
                    info.name + "' give symbol '" + model_.symbol_names[*symbol] + "' the sizes " +
                    std::to_string(symbols_[size_t(*symbol)]) + " and " +
                    std::to_string(tensor.dims[axis]) + " from the encoder");
      symbols_[size_t(*symbol)] = tensor.dims[axis];
      first = context.input;
    }
  }
  encoder.encoded = true;
  return true;
}

bool Generator::reserveSession(int64_t promptLength) {
  bool cached = roles_.hasCache();
  bindTensors(promptLength, 0);
  if (!session_->reserve(inputs_.data(), int32_t(inputs_.size()), outputs_.data(),
                         int32_t(outputs_.size())))
    return fail(session_->error());
  bindTensors(cached ? 1 : capacity_, cached ? capacity_ - 1 : 0);
  if (!session_->reserve(inputs_.data(), int32_t(inputs_.size()), outputs_.data(),
                         int32_t(outputs_.size())))
    return fail(session_->error());
  return true;
}

bool Generator::runModel(int64_t newTokens) {
  // Without a cache every run feeds the whole (padded) sequence.
  int64_t past = roles_.hasCache() ? cached_ : 0;
  int64_t run = roles_.hasCache() ? newTokens : length_;
  promptLogitsKept_ = false;
  fillRunInputs(run, past);
  bindTensors(run, past);
  if (!session_->run(inputs_.data(), int32_t(inputs_.size()), outputs_.data(),
                     int32_t(outputs_.size())))
    return fail(session_->error());
  if (!roles_.hasCache())
    return true;
  // The next step reads each present as its past: its dims must be past's.
  bindGeneratorSymbols(roles_, 1, cached_ + newTokens, symbols_.data(), int64_t(rows_.size()));
  for (const CachePair &pair : roles_.cache) {
    const onnxc_tensor_info &pastInfo = model_.inputs[pair.input];
    const onnxc_tensor &present = outputs_[size_t(pair.output)];
    for (int32_t axis = 0; axis < pastInfo.rank; ++axis) {
      int64_t want =
          evaluateDimExpr(pastInfo.dims[axis], symbols_.data(), model_.num_symbols).value_or(-1);
      if (present.dims[axis] != want)
        return fail("output '" + std::string(model_.outputs[pair.output].name) + "' dim " +
                    std::to_string(axis) + " is " + std::to_string(present.dims[axis]) +
                    " but cache input '" + pastInfo.name + "' needs " + std::to_string(want) +
                    " after " + std::to_string(cached_ + newTokens) + " positions");
    }
  }
  current_ = 1 - current_;
  cached_ += newTokens;
  return true;
}

const float *Generator::lastLogits(int64_t row, int64_t &vocab) const {
  if (promptLogitsKept_) {
    vocab = promptVocab_;
    return row >= 0 && row < int64_t(rows_.size()) ? promptLogits_.data() + row * vocab : nullptr;
  }
  const onnxc_tensor &logits = outputs_[size_t(roles_.logits)];
  vocab = logits.dims[logits.rank - 1];
  int64_t positions = logits.rank == 3 ? logits.dims[1] : 1;
  if (vocab <= 0 || positions <= 0 || logits.dims[0] != int64_t(rows_.size()))
    return nullptr;
  return static_cast<const float *>(logits.data) + ((row + 1) * positions - 1) * vocab;
}

bool Generator::prefill(const int64_t *promptIds, int64_t count) {
  return startRows(&promptIds, &count, 1);
}

bool Generator::prefillBatch(const int64_t *const *prompts, const int64_t *counts, int64_t rows) {
  return startRows(prompts, counts, rows);
}

} // namespace onnxc::runtime

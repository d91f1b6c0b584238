//===- python/src/Module.cpp - The onnxc._onnxc extension module -----------===//
//
// Bindings only: argument conversion, the GIL, and numpy arrays in and out.
// The Python layer (python/onnxc/__init__.py) gives the public API its
// shape (keyword feeds, ValueInfo, checks that name the input at fault);
// this module trusts nothing it is given all the same: every array is
// checked against the descriptor's dtype and for C-contiguity before its
// buffer is handed to the runtime.
//
//===----------------------------------------------------------------------===//
#include "python/src/Compile.h"
#include "python/src/Generate.h"
#include "python/src/ModelRunner.h"
#include "python/src/Progress.h"

#include "codegen/ModelJit.h"
#include "driver/ModelFolder.h"
#include "ir/Error.h"
#include "onnxc/model_info.h"
#include "onnxc/onnxc_text_generate.h"
#include "tools/onnxc/ToolMain.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <optional>

namespace nb = nanobind;
using namespace nb::literals;

namespace onnxc::python {

namespace {

using InputArray = nb::ndarray<nb::ro, nb::device::cpu>;
using OutputArray = nb::ndarray<nb::numpy>;

/// Each onnxc dtype and its DLPack spelling (what numpy exports and takes).
/// bfloat16, which numpy has not, travels as its uint16 bit patterns: it is
/// matched on the way in (tensorView) and spelled uint16 on the way out.
struct DtypeSpelling {
  int32_t onnxc;
  nb::dlpack::dtype_code code;
  uint8_t bits;
};
constexpr DtypeSpelling kDtypes[] = {
    {ONNXC_F32, nb::dlpack::dtype_code::Float, 32}, {ONNXC_F64, nb::dlpack::dtype_code::Float, 64},
    {ONNXC_F16, nb::dlpack::dtype_code::Float, 16}, {ONNXC_I8, nb::dlpack::dtype_code::Int, 8},
    {ONNXC_U8, nb::dlpack::dtype_code::UInt, 8},    {ONNXC_I16, nb::dlpack::dtype_code::Int, 16},
    {ONNXC_U16, nb::dlpack::dtype_code::UInt, 16},  {ONNXC_I32, nb::dlpack::dtype_code::Int, 32},
    {ONNXC_U32, nb::dlpack::dtype_code::UInt, 32},  {ONNXC_I64, nb::dlpack::dtype_code::Int, 64},
    {ONNXC_U64, nb::dlpack::dtype_code::UInt, 64},  {ONNXC_BOOL, nb::dlpack::dtype_code::Bool, 8},
    {ONNXC_BF16, nb::dlpack::dtype_code::UInt, 16},
};

/// The onnxc dtype of a DLPack dtype, or nothing for a type onnxc has not.
std::optional<int32_t> onnxcDtype(nb::dlpack::dtype dtype) {
  if (dtype.lanes != 1)
    return std::nullopt;
  for (const DtypeSpelling &spelling : kDtypes)
    if (uint8_t(spelling.code) == dtype.code && spelling.bits == dtype.bits)
      return spelling.onnxc;
  return std::nullopt;
}

/// The DLPack dtype numpy gets for an onnxc output dtype.
nb::dlpack::dtype dlpackDtype(int32_t dtype) {
  for (const DtypeSpelling &spelling : kDtypes)
    if (spelling.onnxc == dtype)
      return {uint8_t(spelling.code), spelling.bits, 1};
  fail("output has unknown dtype code ", dtype);
}

bool isCContiguous(const InputArray &array) {
  int64_t expected = 1;
  for (size_t d = array.ndim(); d-- > 0;) {
    if (array.shape(d) == 0)
      return true;
    if (array.shape(d) != 1 && array.stride(d) != expected)
      return false;
    expected *= int64_t(array.shape(d));
  }
  return true;
}

/// The runtime's view of `array`, pointing at its buffer (no copy).
onnxc_tensor tensorView(const InputArray &array, const onnxc_tensor_info &info) {
  std::optional<int32_t> dtype = onnxcDtype(array.dtype());
  // bfloat16 inputs arrive as their uint16 bit patterns (numpy has no bfloat16).
  if (info.dtype == ONNXC_BF16 && dtype == ONNXC_U16)
    dtype = ONNXC_BF16;
  if (dtype != info.dtype)
    fail("input '", info.name, "': wrong element type (the model takes dtype code ", info.dtype,
         ")");
  if (array.ndim() > ONNXC_MAX_RANK)
    fail("input '", info.name, "' has rank ", array.ndim(), ", more than the runtime's ",
         ONNXC_MAX_RANK);
  if (!isCContiguous(array))
    fail("input '", info.name, "' is not C-contiguous");
  onnxc_tensor tensor{};
  tensor.data = const_cast<void *>(array.data());
  tensor.dtype = *dtype;
  tensor.rank = int32_t(array.ndim());
  for (size_t d = 0; d < array.ndim(); ++d)
    tensor.dims[d] = int64_t(array.shape(d));
  tensor.size_bytes = array.nbytes();
  return tensor;
}

nb::list runModel(ModelRunner &runner, const std::vector<InputArray> &arrays) {
  const onnxc_model_descriptor &model = runner.descriptor();
  if (arrays.size() != size_t(model.num_inputs))
    fail("the model takes ", model.num_inputs, " inputs, got ", arrays.size());
  std::vector<onnxc_tensor> inputs;
  for (size_t i = 0; i < arrays.size(); ++i)
    inputs.push_back(tensorView(arrays[i], model.inputs[i]));
  std::vector<OutputBuffer> outputs;
  {
    // The arrays stay referenced by `arrays` (and the caller) while the
    // model reads them without the GIL.
    nb::gil_scoped_release release;
    outputs = runner.run(inputs);
  }
  nb::list results;
  for (OutputBuffer &output : outputs) {
    std::vector<size_t> shape(output.dims.begin(), output.dims.end());
    uint8_t *data = output.data.release();
    nb::capsule owner(data, [](void *p) noexcept { delete[] static_cast<uint8_t *>(p); });
    results.append(
        OutputArray(data, shape.size(), shape.data(), owner, nullptr, dlpackDtype(output.dtype))
            .cast());
  }
  return results;
}

/// (name, dtype code, shape text, dims) of each tensor; a dim is its value
/// when the expression is a constant, None when it involves a symbol.
nb::list tensorInfos(const onnxc_tensor_info *infos, int32_t count) {
  nb::list list;
  for (int32_t i = 0; i < count; ++i) {
    const onnxc_tensor_info &info = infos[i];
    nb::list dims;
    for (int32_t d = 0; d < info.rank; ++d) {
      int64_t value = 0;
      if (onnxc_dim_is_constant(info.dims[d], &value))
        dims.append(value);
      else
        dims.append(nb::none());
    }
    list.append(
        nb::make_tuple(info.name, info.dtype, info.shape_text ? info.shape_text : "", dims));
  }
  return list;
}

PipelineRequest pipeline(const std::string &path, int optLevel,
                         const std::vector<std::string> &passes, bool generation = false,
                         bool lastLogits = false) {
  return PipelineRequest{path, optLevel, passes, generation, lastLogits};
}

/// onnxc.Error and the ModelRunner class.
void bindModelRunner(nb::module_ &m) {
  nb::exception<onnxc::Error>(m, "Error", PyExc_RuntimeError);
  nb::class_<ModelRunner>(m, "ModelRunner")
      .def_prop_ro("name",
                   [](const ModelRunner &r) { return std::string(r.descriptor().model_name); })
      .def_prop_ro("precision",
                   [](const ModelRunner &r) {
                     const char *precision = r.descriptor().precision;
                     return std::string(precision ? precision : "f32");
                   })
      .def_prop_ro("cpu_features",
                   [](const ModelRunner &r) {
                     const char *features = r.descriptor().cpu_features;
                     return std::string(features ? features : "");
                   })
      .def_prop_ro("library_path", &ModelRunner::libraryPath)
      .def_prop_ro("threads", &ModelRunner::numThreads)
      .def_prop_ro("inputs",
                   [](const ModelRunner &r) {
                     return tensorInfos(r.descriptor().inputs, r.descriptor().num_inputs);
                   })
      .def_prop_ro("outputs",
                   [](const ModelRunner &r) {
                     return tensorInfos(r.descriptor().outputs, r.descriptor().num_outputs);
                   })
      .def("run", &runModel, "inputs"_a);
}

/// compile_jit, compile_library and load: the ways to a ModelRunner.
void bindCompilers(nb::module_ &m) {
  m.def(
      "compile_jit",
      [](const std::string &path, int optLevel, const std::vector<std::string> &passes,
         const std::string &cpu, const std::string &attributes, const std::string &precision,
         int threads, nb::object progress, bool generation, bool lastLogits) {
        PythonProgress watcher(std::move(progress));
        std::unique_ptr<onnxc::JitModel> jit;
        try {
          nb::gil_scoped_release release;
          jit = compileJit(pipeline(path, optLevel, passes, generation, lastLogits),
                           TargetOptions{cpu, attributes, precision}, watcher.callback());
        } catch (const Interrupted &) {
          watcher.raiseInterrupted();
        }
        watcher.raisePending();
        return std::make_unique<ModelRunner>(std::move(jit), threads);
      },
      "path"_a, "opt_level"_a, "passes"_a, "cpu"_a, "attributes"_a, "precision"_a, "threads"_a,
      "progress"_a = nb::none(), "generation"_a = false, "last_logits"_a = false);
  m.def(
      "compile_library",
      [](const std::string &path, int optLevel, const std::vector<std::string> &passes,
         const std::string &cpu, const std::string &attributes, const std::string &precision,
         const std::string &output, const std::string &header, nb::object progress, bool generation,
         bool lastLogits) {
        PythonProgress watcher(std::move(progress));
        try {
          nb::gil_scoped_release release;
          compileLibrary(pipeline(path, optLevel, passes, generation, lastLogits),
                         TargetOptions{cpu, attributes, precision}, output, header,
                         watcher.callback());
        } catch (const Interrupted &) {
          watcher.raiseInterrupted();
        }
        watcher.raisePending();
      },
      "path"_a, "opt_level"_a, "passes"_a, "cpu"_a, "attributes"_a, "precision"_a, "output"_a,
      "header"_a, "progress"_a = nb::none(), "generation"_a = false, "last_logits"_a = false);
  m.def(
      "load",
      [](const std::string &path, int threads, bool checkCpu) {
        nb::gil_scoped_release release;
        auto runner = std::make_unique<ModelRunner>(path, threads);
        // onnxc.load refuses a CPU the library was not compiled for at once
        // (onnxc.compile(output=...) may write one for another machine).
        if (const char *problem = checkCpu ? onnxc_model_check_cpu(&runner->descriptor()) : nullptr)
          fail(path, ": ", problem);
        return runner;
      },
      "path"_a, "threads"_a, "check_cpu"_a = true);
}

/// dump and explain: the IR and the passes' report, as text.
void bindInspection(nb::module_ &m) {
  m.def(
      "dump",
      [](const std::string &path, int optLevel, const std::vector<std::string> &passes) {
        nb::gil_scoped_release release;
        return dumpModel(pipeline(path, optLevel, passes));
      },
      "path"_a, "opt_level"_a, "passes"_a);
  m.def(
      "explain",
      [](const std::string &path, int optLevel, const std::vector<std::string> &passes) {
        nb::gil_scoped_release release;
        return explainModel(pipeline(path, optLevel, passes));
      },
      "path"_a, "opt_level"_a, "passes"_a);
}

/// The search options of Model.generate (validated in _model.py) into `options`;
/// `stops` keeps the stop list the options point at.
void readSearch(const nb::dict &search, onnxc_generate_options &options,
                std::vector<int64_t> &stops) {
  auto number = [&](const char *key, auto fallback) {
    return search.contains(key) ? nb::cast<decltype(fallback)>(search[key]) : fallback;
  };
  options.repetition_penalty = number("repetition_penalty", 1.0f);
  options.presence_penalty = number("presence_penalty", 0.0f);
  options.frequency_penalty = number("frequency_penalty", 0.0f);
  options.min_p = number("min_p", 0.0f);
  options.min_new_tokens = number("min_new_tokens", int64_t(0));
  options.top_logprobs = number("top_logprobs", int32_t(0));
  options.logprobs = number("logprobs", false) || options.top_logprobs > 0 ? 1 : 0;
  options.pad_token_id = number("pad_token_id", int64_t(-1));
  options.num_beams = number("num_beams", int32_t(1));
  options.num_return_sequences = number("num_return_sequences", int32_t(1));
  options.length_penalty = number("length_penalty", 1.0f);
  options.early_stopping = number("early_stopping", int32_t(0));
  if (search.contains("eos_token_ids"))
    stops = nb::cast<std::vector<int64_t>>(search["eos_token_ids"]);
  options.eos_token_ids = stops.data();
  options.num_eos_token_ids = int32_t(stops.size());
}

/// Generation options with the mapping and stop list they point at.
struct OwnedOptions {
  onnxc_generate_options options;
  std::string mapping;
  std::vector<int64_t> stops;
};

std::unique_ptr<OwnedOptions> makeOptions(int64_t maxNewTokens, bool sample, float temperature,
                                          int32_t topK, float topP, uint64_t seed, int64_t eos,
                                          int64_t capacity, const std::string &mapping, int threads,
                                          const nb::dict &search) {
  auto owned = std::make_unique<OwnedOptions>();
  onnxc_generate_options &options = owned->options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = maxNewTokens;
  options.do_sample = sample ? 1 : 0;
  options.temperature = temperature;
  options.top_k = topK;
  options.top_p = topP;
  options.seed = seed;
  options.eos_token_id = eos;
  options.capacity = capacity;
  owned->mapping = mapping;
  options.mapping = owned->mapping.c_str();
  options.num_threads = threads;
  readSearch(search, options, owned->stops);
  return owned;
}

/// The generation loop on a ModelRunner (and its encoder's): one prompt, a
/// batch, or a beam search.
nb::tuple generate(const ModelRunner &runner, const std::vector<std::vector<int64_t>> &prompts,
                   int64_t maxNewTokens, bool sample, float temperature, int32_t topK, float topP,
                   uint64_t seed, int64_t eos, int64_t capacity, const std::string &mapping,
                   int threads, nb::object onToken, const ModelRunner *encoder,
                   const std::vector<int64_t> &source, const nb::dict &search) {
  std::unique_ptr<OwnedOptions> owned = makeOptions(maxNewTokens, sample, temperature, topK, topP,
                                                    seed, eos, capacity, mapping, threads, search);
  const onnxc_generate_options &options = owned->options;
  std::function<void(int64_t)> callback;
  if (!onToken.is_none())
    // The loop runs without the GIL; the callback takes it back per token.
    callback = [&onToken](int64_t token) {
      nb::gil_scoped_acquire acquire;
      onToken(token);
    };
  GenerateResult result;
  {
    nb::gil_scoped_release release;
    result = generateTokens(runner, prompts, options, callback, encoder, source);
  }
  return nb::make_tuple(result.rows, result.mode, result.description, result.logprobs,
                        result.topLogprobs, result.scores);
}

/// A generator for text generation, which runs in libonnxc_text
/// (onnxc_text_generate, called from python/onnxc/_textgen.py through
/// ctypes) on this module's runtime: `address` is the onnxc_generator* and
/// text_generation_api() the address of the functions that drive it.
class TextGenerator {
public:
  TextGenerator(const ModelRunner &runner, std::unique_ptr<OwnedOptions> options)
      : options_(std::move(options)) {
    generator_ = onnxc_generator_create(&runner.descriptor(), &options_->options);
    if (!generator_)
      fail(onnxc_last_error());
    description_ = onnxc_generator_describe(generator_);
    mode_ = onnxc_generator_mode(generator_);
  }
  ~TextGenerator() { onnxc_generator_destroy(generator_); }
  TextGenerator(const TextGenerator &) = delete;
  TextGenerator &operator=(const TextGenerator &) = delete;

  uintptr_t address() const { return reinterpret_cast<uintptr_t>(generator_); }
  const std::string &description() const { return description_; }
  int32_t mode() const { return mode_; }

private:
  std::unique_ptr<OwnedOptions> options_;
  onnxc_generator *generator_ = nullptr;
  std::string description_;
  int32_t mode_ = 0;
};

const onnxc_text_generation_api linkedTextApi = ONNXC_TEXT_GENERATION_API_LINKED;

/// driver/ModelFolder as a dict for python/onnxc/__init__.py.
nb::dict modelFolder(const std::string &path) {
  ModelFolder folder = readModelFolder(path);
  nb::dict out;
  auto optional = [](const auto &value) { return value ? nb::cast(*value) : nb::none(); };
  out["kind"] = folder.kindName();
  out["folder"] = folder.folder;
  out["model"] = folder.modelPath;
  out["tokenizer"] = folder.tokenizerPath.empty() ? nb::none() : nb::cast(folder.tokenizerPath);
  out["merged_decoder"] = folder.mergedDecoder;
  out["mapping"] = folder.mapping();
  out["eos_token_ids"] = folder.eosTokenIds;
  out["bos_token_id"] = optional(folder.bosTokenId);
  out["pad_token_id"] = optional(folder.padTokenId);
  out["add_bos_token"] = optional(folder.addBosToken);
  out["max_length"] = optional(folder.maxLength);
  out["max_new_tokens"] = optional(folder.maxNewTokens);
  out["top_k"] = optional(folder.topK);
  out["top_p"] = optional(folder.topP);
  out["temperature"] = optional(folder.temperature);
  out["repetition_penalty"] = optional(folder.repetitionPenalty);
  out["do_sample"] = optional(folder.doSample);
  return out;
}

void bindTextGeneration(nb::module_ &m) {
  nb::class_<TextGenerator>(m, "TextGenerator")
      .def_prop_ro("address", &TextGenerator::address)
      .def_prop_ro("description", &TextGenerator::description)
      .def_prop_ro("mode", &TextGenerator::mode);
  m.def(
      "text_generator",
      [](const ModelRunner &runner, int64_t maxNewTokens, bool sample, float temperature,
         int32_t topK, float topP, uint64_t seed, int64_t eos, int64_t capacity,
         const std::string &mapping, int threads, const nb::dict &search) {
        return std::make_unique<TextGenerator>(
            runner, makeOptions(maxNewTokens, sample, temperature, topK, topP, seed, eos, capacity,
                                mapping, threads, search));
      },
      // The generator runs the runner's model: the runner lives as long.
      nb::keep_alive<0, 1>(), "runner"_a, "max_new_tokens"_a, "sample"_a, "temperature"_a,
      "top_k"_a, "top_p"_a, "seed"_a, "eos_token_id"_a, "capacity"_a, "mapping"_a, "threads"_a,
      "search"_a);
  m.def("text_generation_api", [] { return reinterpret_cast<uintptr_t>(&linkedTextApi); });
  m.def("model_folder", &modelFolder, "path"_a);
}

/// main(argv) and __version__: the onnxc command line in this process (the
/// console script and `python -m onnxc`: python/onnxc/_cli.py), so the wheel
/// carries one copy of the compiler, not a module and an executable.
void bindTool(nb::module_ &m) {
  m.def(
      "main",
      [](const std::vector<std::string> &argv) {
        // argv[0] is the program's name, as in C's main.
        std::vector<std::string> args(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
        nb::gil_scoped_release release;
        return runTool(args);
      },
      "argv"_a);
  m.attr("__version__") = ONNXC_VERSION;
}

} // namespace

} // namespace onnxc::python

NB_MODULE(_onnxc, m) {
  using namespace onnxc::python;
  m.doc() = "onnxc's compiler and runtime (use the onnxc package, not this module)";
  bindModelRunner(m);
  bindCompilers(m);
  bindInspection(m);
  bindTool(m);
  bindTextGeneration(m);
  m.def("generate", &generate, "runner"_a, "prompts"_a, "max_new_tokens"_a, "sample"_a,
        "temperature"_a, "top_k"_a, "top_p"_a, "seed"_a, "eos_token_id"_a, "capacity"_a,
        "mapping"_a, "threads"_a, "on_token"_a.none(), "encoder"_a.none(), "source"_a, "search"_a);
  // For the tests: the address the binding reads an input from, to check
  // that a contiguous array of the right dtype is not copied on the way in.
  m.def(
      "input_address", [](const InputArray &array) { return uintptr_t(array.data()); }, "array"_a);
}

//===- tests/node/NodeCase.cpp - One ONNX backend node-test case -----------===//

#include "tests/node/NodeCase.h"

#include "frontend/OpImporterRegistry.h"
#include "frontend/OpsetConversion.h"

#include "codegen/ModelCompiler.h"
#include "codegen/artifact/DescriptorEmitter.h"
#include "driver/CompiledSession.h"
#include "driver/InputSpecialization.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorProto.h"
#include "ir/Error.h"
#include "ir/OpKind.h"
#include "ir/eval/Evaluator.h"
#include "tests/node/TensorCompare.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdlib.h>

namespace fs = std::filesystem;

namespace onnxc::nodetest {
namespace {

bool isDefaultDomain(const std::string &domain) { return domain.empty() || domain == "ai.onnx"; }

template <typename Message> void parseProtoFile(const fs::path &path, Message &message) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path.string(), ": cannot open");
  if (!message.ParseFromIstream(&in))
    fail(path.string(), ": not a valid protobuf of the expected kind");
}

/// test_data_set_0, test_data_set_1, ... in numeric order (a plain string
/// sort would put 10 before 2).
std::vector<fs::path> dataSetFolders(const fs::path &caseDir) {
  const std::string prefix = "test_data_set_";
  std::vector<std::pair<long, fs::path>> numbered;
  for (const auto &entry : fs::directory_iterator(caseDir)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind(prefix, 0) != 0)
      continue;
    numbered.emplace_back(std::stol(name.substr(prefix.size())), entry.path());
  }
  std::sort(numbered.begin(), numbered.end());
  std::vector<fs::path> folders;
  for (auto &[index, path] : numbered)
    folders.push_back(path);
  return folders;
}

/// Loads `prefix_0.pb`, `prefix_1.pb`, ... until the first gap.
std::vector<Tensor> loadNumberedTensors(const fs::path &dataSet, const std::string &prefix) {
  std::vector<Tensor> tensors;
  for (size_t k = 0;; ++k) {
    std::string fileName = prefix + "_" + std::to_string(k) + ".pb";
    fs::path path = dataSet / fileName;
    if (!fs::exists(path))
      break;
    onnx::TensorProto proto;
    parseProtoFile(path, proto);
    tensors.push_back(tensorFromProto(proto, dataSet.string(), fileName));
  }
  return tensors;
}

/// ONNX 1.12 wrote bfloat16 test data as uint16 tensors holding the bf16 bit
/// patterns (numpy has no bfloat16). Where the model declares bf16, read
/// those bits as what they are.
void reinterpretBfloat16(std::vector<Tensor> &tensors, const std::vector<int32_t> &declared) {
  for (size_t k = 0; k < tensors.size() && k < declared.size(); ++k) {
    Tensor &tensor = tensors[k];
    if (declared[k] == onnx::TensorProto::BFLOAT16 && tensor.dtype() == DType::U16)
      tensor = Tensor::fromBytes(DType::BF16, tensor.dims(), tensor.rawData(), tensor.byteSize());
  }
}

Backend gBackend = Backend::Reference;

/// A graph compiled to a .so in a private temporary folder, dlopened.
struct LoadedLibrary {
  LoadedLibrary(const Graph &graph, const TargetSelection &target) {
    char pattern[] = "/tmp/onnxc-node-XXXXXX";
    if (!mkdtemp(pattern))
      fail("cannot create a temporary folder");
    folder = pattern;
    std::string path = folder + "/model.so";
    ArtifactRequest request;
    request.outputPath = path;
    compileModelArtifact(graph, target, request);
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      fail("dlopen of the compiled model failed: ", dlerror());
    auto accessor = reinterpret_cast<const onnxc_model_descriptor *(*)()>(
        dlsym(handle, GenericDescriptorAccessor));
    if (!accessor)
      fail("the compiled model exports no descriptor");
    descriptor = accessor();
  }
  ~LoadedLibrary() {
    if (handle)
      dlclose(handle);
    std::error_code ignored;
    fs::remove_all(folder, ignored);
  }
  std::string folder;
  void *handle = nullptr;
  const onnxc_model_descriptor *descriptor = nullptr;
};

/// Outputs of `graph` on `feeds` with the chosen backend. The JIT compiles
/// for the inputs at hand like `onnxc run`: many node tests feed Reshape's
/// shape or Slice's starts as inputs, which the compiled model then takes as
/// constants.
std::vector<Tensor> runGraph(const Graph &imported, const CaseInfo &info,
                             const std::map<std::string, Tensor> &feeds) {
  if (gBackend == Backend::Reference)
    return evaluateGraph(imported, feeds);
  static const TargetSelection target = TargetSelection::select({});
  // compileForInputs may specialize the graph: work on a fresh import.
  std::unique_ptr<Graph> graph = importOnnxFile((fs::path(info.directory) / "model.onnx").string());
  if (gBackend == Backend::Lower) {
    compileForInputs(*graph, feeds, [&](const Graph &g) { lowerModel(g, target); });
    return evaluateGraph(imported, feeds);
  }
  std::unique_ptr<JitModel> jit;
  std::unique_ptr<LoadedLibrary> library;
  compileForInputs(*graph, feeds, [&](const Graph &g) {
    if (gBackend == Backend::SharedLibrary)
      library = std::make_unique<LoadedLibrary>(g, target);
    else
      jit = compileModelJit(g, target);
  });
  const onnxc_model_descriptor *descriptor = library ? library->descriptor : jit->descriptor();
  std::vector<const Tensor *> ordered;
  for (const Value *input : graph->inputs()) {
    auto it = feeds.find(input->name());
    if (it == feeds.end())
      fail("no data for graph input '", input->name(), "'");
    ordered.push_back(&it->second);
  }
  CompiledSession session(descriptor, 1);
  return session.run(ordered);
}

/// Feeds one data set through the graph; nullopt when every output matches.
std::optional<std::string> runDataSet(const Graph &graph, const CaseInfo &info,
                                      const fs::path &dataSet) {
  std::string where = dataSet.filename().string() + ": ";
  std::vector<Tensor> inputTensors = loadNumberedTensors(dataSet, "input");
  std::vector<Tensor> expected = loadNumberedTensors(dataSet, "output");
  reinterpretBfloat16(inputTensors, info.dataInputTypes);
  reinterpretBfloat16(expected, info.outputTypes);
  if (expected.empty())
    return where + "no output_K.pb files to compare with";
  if (inputTensors.size() > info.dataInputs.size())
    return where + std::to_string(inputTensors.size()) + " input files for " +
           std::to_string(info.dataInputs.size()) + " graph inputs";

  // The importer may drop graph inputs nothing reads; only feed the ones the
  // imported graph still has.
  std::set<std::string> graphInputs;
  for (const Value *input : graph.inputs())
    graphInputs.insert(input->name());
  std::map<std::string, Tensor> feeds;
  for (size_t k = 0; k < inputTensors.size(); ++k)
    if (graphInputs.count(info.dataInputs[k]))
      feeds[info.dataInputs[k]] = inputTensors[k];

  std::vector<Tensor> actual = runGraph(graph, info, feeds);
  if (actual.size() != graph.outputs().size())
    return where + "evaluator returned " + std::to_string(actual.size()) + " tensors for " +
           std::to_string(graph.outputs().size()) + " graph outputs";
  if (expected.size() > actual.size())
    return where + std::to_string(expected.size()) + " expected outputs, graph has " +
           std::to_string(actual.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    // output_K.pb belongs to the model's K-th output; the imported graph must
    // keep the model's output names and order.
    if (k < info.outputs.size() && graph.outputs()[k].name != info.outputs[k])
      return where + "graph output " + std::to_string(k) + " is '" + graph.outputs()[k].name +
             "', the model's is '" + info.outputs[k] + "'";
    if (auto difference = compareTensors(actual[k], expected[k]))
      return where + "output " + std::to_string(k) + " '" + graph.outputs()[k].name +
             "': " + *difference;
  }
  return std::nullopt;
}

/// Keeps a failure on one line so the runner's output stays one line per case.
std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  constexpr size_t maxLength = 400;
  if (text.size() > maxLength)
    text = text.substr(0, maxLength) + "...";
  return text;
}

} // namespace

void setCaseBackend(Backend backend) { gBackend = backend; }

/// Ops of `graph` and of its nodes' subgraphs (If branches, Loop bodies)
/// that onnxc does not declare: a case is in scope only when all are.
void collectUndeclaredOps(const onnx::GraphProto &graph, CaseInfo &info) {
  for (const auto &node : graph.node()) {
    for (const auto &attr : node.attribute()) {
      if (attr.has_g())
        collectUndeclaredOps(attr.g(), info);
      for (const auto &body : attr.graphs())
        collectUndeclaredOps(body, info);
    }
    const std::string &op = node.op_type();
    // In scope: an IR op, or an op the importer expands into IR ops
    // (frontend/ops/FunctionOps.cpp), as the node is once an old opset is
    // converted to the importers' oldest.
    std::string converted = opTypeAfterConversion(op, info.opset);
    bool declared = isDefaultDomain(node.domain()) &&
                    (parseOpKind(converted).has_value() ||
                     OpImporterRegistry::instance().lookup(
                         "", converted, std::max(info.opset, kMinOnnxOpset)) != nullptr);
    // An op of another domain the importer expands (ai.onnx.preview FlexAttention).
    if (auto domain = info.domainOpsets.find(node.domain());
        !isDefaultDomain(node.domain()) && domain != info.domainOpsets.end())
      declared = OpImporterRegistry::instance().lookup(node.domain(), op, domain->second);
    std::string spelled = isDefaultDomain(node.domain()) ? op : node.domain() + "::" + op;
    if (!declared && std::find(info.undeclaredOps.begin(), info.undeclaredOps.end(), spelled) ==
                         info.undeclaredOps.end())
      info.undeclaredOps.push_back(spelled);
  }
}

CaseInfo readCaseInfo(const std::string &directory) {
  fs::path dir(directory);
  onnx::ModelProto model;
  parseProtoFile(dir / "model.onnx", model);

  CaseInfo info;
  info.name = dir.filename().string();
  info.directory = directory;
  for (const auto &opset : model.opset_import())
    if (isDefaultDomain(opset.domain()))
      info.opset = opset.version();
    else
      info.domainOpsets[opset.domain()] = opset.version();

  const onnx::GraphProto &graph = model.graph();
  for (const auto &node : graph.node()) {
    const std::string &op = node.op_type();
    if (std::find(info.opTypes.begin(), info.opTypes.end(), op) == info.opTypes.end())
      info.opTypes.push_back(op);
  }
  collectUndeclaredOps(graph, info);

  std::set<std::string> initializers;
  for (const auto &initializer : graph.initializer())
    initializers.insert(initializer.name());
  for (const auto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    info.dataInputs.push_back(input.name());
    info.dataInputTypes.push_back(input.type().tensor_type().elem_type());
  }
  for (const auto &output : graph.output()) {
    info.outputs.push_back(output.name());
    info.outputTypes.push_back(output.type().tensor_type().elem_type());
  }
  return info;
}

std::optional<std::string> runCase(const CaseInfo &info) {
  try {
    fs::path dir(info.directory);
    std::unique_ptr<Graph> graph = importOnnxFile((dir / "model.onnx").string());
    std::vector<fs::path> dataSets = dataSetFolders(dir);
    if (dataSets.empty())
      return std::string("no test_data_set_N folders");
    for (const fs::path &dataSet : dataSets)
      if (auto failure = runDataSet(*graph, info, dataSet))
        return oneLine(*failure);
    return std::nullopt;
  } catch (const Error &error) {
    return oneLine(error.what());
  } catch (const std::exception &error) {
    // Bad input must surface as onnxc::Error; anything else is a bug in
    // the code under test and is labelled so the owner can tell.
    return oneLine(std::string("unexpected non-onnxc exception: ") + error.what());
  } catch (...) {
    return std::string("unexpected exception of unknown type");
  }
}

} // namespace onnxc::nodetest

//===- tools/onnxc/Pipeline.cpp - Loading models and running pass pipelines -===//
#include "tools/onnxc/Commands.h"

#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"
#include "passes/PassRegistry.h"
#include "passes/Pipelines.h"

#include <filesystem>
#include <iostream>

namespace onnxc {

std::unique_ptr<Graph> loadModel(const std::string &path, std::vector<std::string> *externalFiles) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail(path, std::filesystem::is_directory(path, ec) ? ": is a directory, not a model file"
                                                       : ": no such file");
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx") {
    std::unique_ptr<Graph> graph = importOnnxFile(path, externalFiles);
    verifyGraph(*graph);
    return graph;
  }
  if (ext == ".ir") {
    std::unique_ptr<Graph> graph = parseGraphFile(path);
    verifyGraph(*graph);
    inferShapes(*graph);
    return graph;
  }
  if (ext == ".so")
    fail(path, ": a compiled library holds no graph to dump or compile ('onnxc run' and "
               "'onnxc bench' run it); pass the .onnx or .ir it was built from");
  fail(path, ": unknown model file type '", ext, "' (expected .onnx or .ir)");
}

std::string modelArgument(const ParsedArgs &args, const std::string &command) {
  if (args.positionals.size() != 1)
    throw UsageError(std::string(args.positionals.empty() ? "missing MODEL argument"
                                                          : "expected one MODEL argument") +
                     " (see 'onnxc " + command + " --help')");
  return args.positionals[0];
}

std::vector<OptionSpec> pipelineOptions() {
  return {
      {"O", "<0-3>",
       "optimization level: 0 none, 1 cleanup, 2 + transformer fusions, 3 + codegen fusion "
       "(default 3 to compile, bench or JIT-run; 0 for dump and --backend=ref)"},
      {"passes", "a,b,...", "run these passes (after the -O pipeline)", true},
      {"print-ir-after", "NAME", "print the IR after each run of pass NAME (comma list)", true},
      {"print-ir-after-all", "", "print the IR after every pass"},
      {"verify-each", "", "verify and re-infer shapes after every pass"},
      {"stats", "", "print what each pass did, one line per pass (stderr)"},
      {"explain", "", "print why passes left candidates alone (stderr)"},
  };
}

namespace {
int optimizationLevel(const ParsedArgs &args, const std::string &command, int defaultLevel) {
  std::string level = args.get("O", std::to_string(defaultLevel));
  if (level.size() != 1 || level[0] < '0' || level[0] > '3')
    throw UsageError("unknown optimization level '-O" + level + "' (use -O0 to -O3; see 'onnxc " +
                     command + " --help')");
  return level[0] - '0';
}

std::string knownPassNames() {
  std::string known;
  for (const PassInfo &info : registeredPasses())
    known += (known.empty() ? "" : ", ") + info.name;
  return known;
}

std::vector<std::string> passNames(const ParsedArgs &args, const std::string &option,
                                   const std::string &command) {
  std::vector<std::string> names;
  for (const std::string &list : args.getAll(option))
    for (std::string &name : splitPassList(list)) {
      if (!findPass(name))
        throw UsageError("unknown pass '" + name + "' in --" + option + " (known: " + knownPassNames() + ")");
      names.push_back(std::move(name));
    }
  return names;
}
} // namespace

std::unique_ptr<PassManager> buildPipeline(const ParsedArgs &args, const std::string &command,
                                           const PrintOptions &printOptions, int defaultLevel,
                                           std::ostream *irStream) {
  PassManagerOptions options;
  options.printIrAfter = passNames(args, "print-ir-after", command);
  options.printIrAfterAll = args.has("print-ir-after-all");
  options.verifyEach = args.has("verify-each");
  options.explain = args.has("explain");
  options.printOptions = printOptions;
  auto pm = std::make_unique<PassManager>(options, irStream ? irStream : &std::cerr);
  addOptimizationPipeline(*pm, optimizationLevel(args, command, defaultLevel));
  addPassesByName(*pm, passNames(args, "passes", command));
  return pm;
}

void runPipeline(PassManager &pm, Graph &graph, const ParsedArgs &args) {
  pm.run(graph);
  std::cout.flush();
  // With --json the command puts them in its document (JsonOutput.h).
  if (args.has("json"))
    return;
  if (args.has("stats"))
    pm.printStatistics(std::cerr);
  if (args.has("explain"))
    pm.printExplanations(std::cerr);
}

} // namespace onnxc

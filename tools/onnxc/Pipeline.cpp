//===- tools/onnxc/Pipeline.cpp - The pass pipeline options of a command -===//
#include "tools/onnxc/Commands.h"

#include "driver/Compilation.h"
#include "driver/GenaiFolder.h"
#include "ir/Error.h"
#include "passes/PassRegistry.h"
#include "passes/Pipelines.h"
#include "tools/onnxc/ProgressLine.h"

#include <iostream>

namespace onnxc {

std::string modelArgument(const ParsedArgs &args, const std::string &command) {
  if (args.positionals.size() != 1)
    throw UsageError(std::string(args.positionals.empty() ? "missing MODEL argument"
                                                          : "expected one MODEL argument") +
                     " (see 'onnxc " + command + " --help')");
  // An onnxruntime-genai folder stands for its decoder (genai_config.json).
  if (isGenaiFolder(args.positionals[0]))
    return readGenaiFolder(args.positionals[0]).modelPath;
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
  try {
    return parseOptimizationLevel(args.get("O", std::to_string(defaultLevel)));
  } catch (const Error &error) {
    throw UsageError(std::string(error.what()) + " (see 'onnxc " + command + " --help')");
  }
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
        throw UsageError("unknown pass '" + name + "' in --" + option +
                         " (known: " + knownPassNames() + ")");
      names.push_back(std::move(name));
    }
  return names;
}
} // namespace

CompileOptions compileOptions(const ParsedArgs &args, const std::string &command,
                              const PrintOptions &printOptions, int defaultLevel) {
  CompileOptions options;
  // In this order, the first mistake is the one reported.
  options.passManager.printIrAfter = passNames(args, "print-ir-after", command);
  options.optLevel = optimizationLevel(args, command, defaultLevel);
  options.passes = passNames(args, "passes", command);
  options.passManager.printIrAfterAll = args.has("print-ir-after-all");
  options.passManager.verifyEach = args.has("verify-each");
  options.passManager.explain = args.has("explain");
  options.passManager.printOptions = printOptions;
  options.target = targetRequest(args);
  options.progress = ProgressLine::instance().callback();
  return options;
}

std::unique_ptr<PassManager> buildPipeline(const ParsedArgs &args, const std::string &command,
                                           const PrintOptions &printOptions, int defaultLevel,
                                           std::ostream *irStream) {
  return onnxc::buildPipeline(compileOptions(args, command, printOptions, defaultLevel), irStream);
}

void runPipeline(PassManager &pm, Graph &graph, const ParsedArgs &args) {
  pm.run(graph);
  std::cout.flush();
  // With --json the command puts them in its document (JsonOutput.h).
  if (args.has("json"))
    return;
  if (args.has("stats") || args.has("explain"))
    ProgressLine::instance().clear();
  if (args.has("stats"))
    pm.printStatistics(std::cerr);
  if (args.has("explain"))
    pm.printExplanations(std::cerr);
}

} // namespace onnxc

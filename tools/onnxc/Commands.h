//===- tools/onnxc/Commands.h - The subcommands of onnxc --------------------===//
#pragma once

#include "tools/onnxc/CommandLine.h"

#include "codegen/TargetSelection.h"
#include "driver/Compilation.h"
#include "driver/LoadModel.h"
#include "ir/Graph.h"
#include "passes/PassManager.h"
#include "tools/onnxc/RunInputs.h"

#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace onnxc {

struct Command {
  std::string name;
  /// One line for the subcommand list.
  std::string summary;
  /// The usage line after "onnxc ".
  std::string usage;
  std::vector<OptionSpec> options;
  /// Runs the command; returns the exit code. Throws Error / UsageError.
  int (*run)(const ParsedArgs &args);
};

Command inspectCommand();
Command dumpCommand();
Command runCommand();
Command compileCommand();
Command benchCommand();
Command generateCommand();
Command tokenizeCommand();
Command serveCommand();

/// The single MODEL positional of a command (UsageError otherwise); an
/// onnxruntime-genai folder gives its decoder file (driver/GenaiFolder.h).
std::string modelArgument(const ParsedArgs &args, const std::string &command);

/// Options that choose and debug the pass pipeline (dump and run share them).
std::vector<OptionSpec> pipelineOptions();
/// The driver's options from a command's flags (-O, --passes, the IR
/// printing and checking flags, --mcpu, --mattr); throws UsageError for an
/// unknown level or pass name.
CompileOptions compileOptions(const ParsedArgs &args, const std::string &command,
                              const PrintOptions &printOptions, int defaultLevel);
/// Builds the pipeline the options ask for: the -O level first, then
/// --passes. Called before the model loads, so that option mistakes are
/// usage errors however broken the model is. --print-ir-after* goes to
/// `irStream`: stdout for `dump` without -o (where the IR goes), stderr
/// (the default) wherever stdout carries something else or -o takes the IR.
std::unique_ptr<PassManager> buildPipeline(const ParsedArgs &args, const std::string &command,
                                           const PrintOptions &printOptions, int defaultLevel = 0,
                                           std::ostream *irStream = nullptr);
/// The option groups of a command, in order, as one list.
inline std::vector<OptionSpec> joinOptions(std::initializer_list<std::vector<OptionSpec>> groups) {
  std::vector<OptionSpec> all;
  for (const std::vector<OptionSpec> &group : groups)
    all.insert(all.end(), group.begin(), group.end());
  return all;
}

/// --input, --shape, --seed (run and bench) and what they ask for.
std::vector<OptionSpec> inputOptions();
InputRequest inputRequest(const ParsedArgs &args);

/// --mcpu, --mattr (compile, run, bench).
std::vector<OptionSpec> targetOptions();
/// The CPU and features --mcpu and --mattr name (native by default).
TargetRequest targetRequest(const ParsedArgs &args);
/// The target the options ask for (native by default); throws UsageError
/// naming an unknown CPU or feature.
TargetSelection selectTarget(const ParsedArgs &args);
/// Prints the CPU or feature list for --mcpu=help / --mattr=help; returns
/// whether it did (the command then exits 0).
bool printTargetHelp(const ParsedArgs &args);
/// --threads N (0 or absent: one per core).
int threadCount(const ParsedArgs &args);

/// `onnxc inspect model.so`: what the descriptor of a compiled model says
/// (tools/onnxc/InspectLibrary.cpp), as text or one JSON document.
int inspectLibrary(const std::string &path, bool json);

/// The project's version ("0.1.0").
std::string onnxcVersion();
/// `onnxc --version`: the onnxc and LLVM versions and the default target CPU.
void printVersion(std::ostream &out);

/// Runs the pipeline on `graph`; statistics and explanations go to stderr
/// (unless --json, where the command's document carries them).
void runPipeline(PassManager &pm, Graph &graph, const ParsedArgs &args);

} // namespace onnxc

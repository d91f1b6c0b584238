//===- tools/onnxc/DumpCommand.cpp - onnxc dump -----------------------------===//
#include "tools/onnxc/Commands.h"

#include "ir/DotExport.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "tools/onnxc/ModelFiles.h"

#include <fstream>
#include <iostream>

namespace onnxc {

namespace {

int runDump(const ParsedArgs &args) {
  std::string path = modelArgument(args, "dump");
  std::string format = args.get("format", "text");
  if (format != "text" && format != "dot")
    throw UsageError("unknown --format '" + format + "' (use text or dot; see 'onnxc dump --help')");
  PrintOptions printOptions;
  printOptions.printNodeNames = args.has("print-node-names");
  printOptions.printAllConstants = args.has("print-all-constants");

  bool toFile = args.has("o") && args.get("o") != "-";
  // With -o the file takes the final IR only (it must parse back as one
  // graph), so the per-pass dumps go to stderr like the statistics.
  std::unique_ptr<PassManager> pm =
      buildPipeline(args, "dump", printOptions, 0, toFile ? &std::cerr : &std::cout);
  checkModelFile(path, "dump", ModelKinds::Graphs);
  if (toFile)
    checkOutputFile("-o", args.get("o"));
  std::unique_ptr<Graph> graph = loadModel(path);
  runPipeline(*pm, *graph, args);

  std::ofstream file;
  std::ostream *out = &std::cout;
  if (toFile) {
    file.open(args.get("o"), std::ios::trunc);
    if (!file)
      fail(args.get("o"), ": cannot open file for writing");
    out = &file;
  }
  if (format == "dot")
    exportDot(*graph, *out);
  else
    printGraph(*graph, *out, printOptions);
  out->flush();
  if (!*out)
    fail(args.get("o", "<stdout>"), ": write error");
  return 0;
}

std::vector<OptionSpec> dumpOptions() {
  std::vector<OptionSpec> options = pipelineOptions();
  options.push_back({"format", "text|dot", "output the text IR (default) or a Graphviz graph"});
  options.push_back({"print-node-names", "", "append loc(\"onnx node name\") to nodes"});
  options.push_back({"print-all-constants", "", "print every constant in full instead of dense<elided>"});
  options.push_back(
      {"o", "FILE",
       "write the IR to FILE instead of stdout (--print-ir-after* then go to stderr)"});
  return options;
}

} // namespace

Command dumpCommand() {
  return {"dump", "run a pass pipeline and print the IR",
          "dump MODEL.onnx|MODEL.ir [-O0..-O3] [--passes=a,b] [options]", dumpOptions(), runDump};
}

} // namespace onnxc

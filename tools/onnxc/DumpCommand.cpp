//===- tools/onnxc/DumpCommand.cpp - onnxc dump -----------------------------===//
#include "tools/onnxc/Commands.h"

#include "ir/DotExport.h"
#include "ir/Error.h"
#include "ir/Printer.h"

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

  std::unique_ptr<PassManager> pm = buildPipeline(args, "dump", printOptions);
  std::unique_ptr<Graph> graph = loadModel(path);
  runPipeline(*pm, *graph, args);

  std::ofstream file;
  std::ostream *out = &std::cout;
  if (args.has("o") && args.get("o") != "-") {
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
  options.push_back({"o", "FILE", "write the IR to FILE instead of stdout"});
  return options;
}

} // namespace

Command dumpCommand() {
  return {"dump", "run a pass pipeline and print the IR",
          "dump MODEL.onnx|MODEL.ir [-O0..-O3] [--passes=a,b] [options]", dumpOptions(), runDump};
}

} // namespace onnxc

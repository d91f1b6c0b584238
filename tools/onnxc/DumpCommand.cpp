//===- tools/onnxc/DumpCommand.cpp - onnxc dump -----------------------------===//
//
// Runs the pipeline and writes the graph in one of the formats other tools
// read: the text IR, Graphviz (dot text, or svg/png through `dot`), or a
// standard ONNX model (exporter/). With --json, stdout carries one document
// instead: the statistics and explanations asked for, the onnxc-only ops an
// ONNX export kept, and the IR itself when it is not written to a file.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "driver/ArtifactOutputs.h"
#include "driver/LoadModel.h"
#include "exporter/OnnxExporter.h"
#include "ir/Error.h"
#include "ir/text/DotExport.h"
#include "ir/text/Printer.h"
#include "tools/onnxc/GraphvizRender.h"
#include "tools/onnxc/JsonOutput.h"
#include "tools/onnxc/ModelFiles.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

namespace onnxc {

namespace {

const char *const kFormats[] = {"text", "dot", "svg", "png", "onnx"};

std::string checkedFormat(const ParsedArgs &args, bool toFile) {
  std::string format = args.get("format", "text");
  if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats))
    throw UsageError("unknown --format '" + format +
                     "' (use text, dot, svg, png or onnx; see 'onnxc dump --help')");
  bool textual = format == "text" || format == "dot";
  if (!textual && !toFile)
    throw UsageError("--format=" + format + " writes a file: give -o FILE");
  return format;
}

void writeTextFile(const std::string &path, const std::string &text) {
  std::ofstream file(path, std::ios::trunc);
  if (!file)
    fail(path, ": cannot open file for writing");
  file << text;
  file.flush();
  if (!file)
    fail(path, ": write error");
}

/// Writes the ONNX model; returns the op types it had to keep custom.
llvm::json::Array exportOnnx(const Graph &graph, const std::string &path, bool quiet) {
  OnnxExportReport report;
  writeOnnxFile(graph, path, {onnxcVersion()}, &report);
  llvm::json::Array custom;
  std::string list;
  for (const std::string &op : report.customOps) {
    custom.push_back(op);
    list += (list.empty() ? "" : ", ") + op;
  }
  if (!quiet && !list.empty())
    std::cerr << "note: " << path
              << ": kept in the 'onnxc' domain (onnxruntime cannot run them): " << list << "\n";
  return custom;
}

int runDump(const ParsedArgs &args) {
  std::string path = modelArgument(args, "dump");
  bool toFile = args.has("o") && args.get("o") != "-";
  std::string format = checkedFormat(args, toFile);
  bool json = args.has("json");
  PrintOptions printOptions;
  printOptions.printNodeNames = args.has("print-node-names");
  printOptions.printAllConstants = args.has("print-all-constants");

  // With -o the file takes the final IR only (it must parse back as one
  // graph), and with --json stdout takes the document, so the per-pass dumps
  // go to stderr like the statistics.
  std::unique_ptr<PassManager> pm =
      buildPipeline(args, "dump", printOptions, 0, toFile || json ? &std::cerr : &std::cout);
  checkModelFile(path, "dump", ModelKinds::Graphs);
  if (toFile)
    checkOutputFile("-o", args.get("o"));
  std::vector<std::string> externalFiles;
  std::unique_ptr<Graph> graph = loadModel(path, &externalFiles);
  if (toFile)
    checkWriteSparesModel(args.get("o"), "-o '" + args.get("o") + "'", path, externalFiles,
                          "choose another -o");
  runPipeline(*pm, *graph, args);

  llvm::json::Object document{{"model", jsonText(path)}, {"format", format}};
  if (format == "onnx") {
    document["custom_ops"] = exportOnnx(*graph, args.get("o"), json);
  } else {
    std::ostringstream text;
    if (format == "text")
      printGraph(*graph, text, printOptions);
    else
      exportDot(*graph, text);
    if (format == "svg" || format == "png")
      renderWithGraphviz(text.str(), format, args.get("o"));
    else if (toFile)
      writeTextFile(args.get("o"), text.str());
    else if (json)
      document["ir"] = jsonText(text.str());
    else
      std::cout << text.str();
  }
  if (toFile)
    document["output"] = jsonText(args.get("o"));
  if (json) {
    addPipelineReport(document, *pm, args);
    printJson(std::move(document));
    return 0;
  }
  std::cout.flush();
  if (!std::cout)
    fail("<stdout>: write error");
  return 0;
}

std::vector<OptionSpec> dumpOptions() {
  std::vector<OptionSpec> options = pipelineOptions();
  options.push_back({"format", "text|dot|svg|png|onnx",
                     "the text IR (default), Graphviz dot text, a picture drawn by Graphviz's "
                     "'dot' (svg, png; needs -o), or a standard ONNX model (needs -o)"});
  options.push_back({"print-node-names", "", "append loc(\"onnx node name\") to nodes"});
  options.push_back(
      {"print-all-constants", "", "print every constant in full instead of dense<elided>"});
  options.push_back(
      {"o", "FILE",
       "write the IR to FILE instead of stdout (--print-ir-after* then go to stderr)"});
  options.push_back(jsonOption());
  return options;
}

} // namespace

Command dumpCommand() {
  return {"dump", "run a pass pipeline and print the IR, a Graphviz graph or an ONNX model",
          "dump MODEL.onnx|MODEL.ir [-O0..-O3] [--passes=a,b] [--format=text|dot|svg|png|onnx] "
          "[-o FILE] [options]",
          dumpOptions(), runDump};
}

} // namespace onnxc

//===- tools/onnxc/JsonOutput.cpp - --json documents of the subcommands -----===//
#include "tools/onnxc/JsonOutput.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <iostream>

namespace onnxc {

OptionSpec jsonOption() {
  return {"json", "", "print one JSON document on stdout instead of text (docs/OUTPUTS.md)"};
}

llvm::json::Array passStatisticsJson(const PassManager &pm) {
  llvm::json::Array passes;
  for (const std::string &name : pm.passNames()) {
    const PassContext *context = pm.context(name);
    if (!context)
      continue;
    llvm::json::Object counters;
    for (const auto &[counter, value] : context->counters())
      counters[counter] = value;
    llvm::json::Array rejected;
    for (const auto &[reason, count] : context->rejectReasons())
      rejected.push_back(llvm::json::Object{{"reason", jsonText(reason)}, {"count", count}});
    passes.push_back(llvm::json::Object{
        {"pass", name}, {"counters", std::move(counters)}, {"rejected", std::move(rejected)}});
  }
  return passes;
}

llvm::json::Array passExplanationsJson(const PassManager &pm) {
  llvm::json::Array explanations;
  for (const std::string &name : pm.passNames()) {
    const PassContext *context = pm.context(name);
    if (!context)
      continue;
    // Lines carry "pass: " in front for the text output; the field has it.
    std::string prefix = name + ": ";
    for (const std::string &line : context->explanations())
      explanations.push_back(llvm::json::Object{
          {"pass", name},
          {"message", jsonText(line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line)}});
  }
  return explanations;
}

void addPipelineReport(llvm::json::Object &document, const PassManager &pm,
                       const ParsedArgs &args) {
  if (args.has("stats"))
    document["stats"] = passStatisticsJson(pm);
  if (args.has("explain"))
    document["explanations"] = passExplanationsJson(pm);
}

void printJson(llvm::json::Value document) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", document);
  os.flush();
  std::cout << text << "\n";
  std::cout.flush();
}

} // namespace onnxc

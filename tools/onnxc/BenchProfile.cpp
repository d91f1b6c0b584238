//===- tools/onnxc/BenchProfile.cpp - Time by op of `onnxc bench --profile` -===//
#include "tools/onnxc/BenchProfile.h"

#include "tools/onnxc/JsonOutput.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

namespace onnxc {

namespace {

double percentOf(double part, double total) { return total > 0 ? 100 * part / total : 0.0; }

} // namespace

Profile collectProfile(const onnxc_model_descriptor &model, const CompiledSession &session,
                       int runs) {
  Profile profile;
  profile.runs = runs;
  std::map<std::string, Profile::OpTime> byOp;
  for (int32_t s = 0; s < model.num_steps; ++s) {
    double ms = double(session.stepNanoseconds(s)) / 1e6 / runs;
    std::string name = model.steps[s].name ? model.steps[s].name : "?";
    std::string op = name.substr(0, name.find(' '));
    Profile::OpTime &entry = byOp[op];
    entry.op = op;
    entry.ms += ms;
    entry.steps += 1;
    profile.bySteps.emplace_back(ms, name);
    profile.totalMs += ms;
  }
  for (auto &[op, entry] : byOp)
    profile.byOp.push_back(entry);
  std::stable_sort(profile.byOp.begin(), profile.byOp.end(),
                   [](const auto &a, const auto &b) { return a.ms > b.ms; });
  std::stable_sort(profile.bySteps.begin(), profile.bySteps.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });
  return profile;
}

void printProfile(const Profile &profile) {
  char line[256];
  std::snprintf(line, sizeof line, "profile (%d runs, %.3f ms per run in steps):\n", profile.runs,
                profile.totalMs);
  std::cout << line;
  for (const Profile::OpTime &op : profile.byOp) {
    std::snprintf(line, sizeof line, "  %-28s %5d steps %9.3f ms %5.1f%%\n", op.op.c_str(),
                  op.steps, op.ms, percentOf(op.ms, profile.totalMs));
    std::cout << line;
  }
  std::cout << "slowest steps:\n";
  for (size_t i = 0; i < profile.bySteps.size() && i < 10; ++i) {
    std::snprintf(line, sizeof line, "  %9.3f ms  %s\n", profile.bySteps[i].first,
                  profile.bySteps[i].second.c_str());
    std::cout << line;
  }
}

llvm::json::Object profileJson(const Profile &profile) {
  llvm::json::Array ops, steps;
  for (const Profile::OpTime &op : profile.byOp)
    ops.push_back(llvm::json::Object{{"op", jsonText(op.op)},
                                     {"steps", op.steps},
                                     {"ms", op.ms},
                                     {"percent", percentOf(op.ms, profile.totalMs)}});
  for (const auto &[ms, name] : profile.bySteps)
    steps.push_back(llvm::json::Object{{"name", jsonText(name)}, {"ms", ms}});
  return llvm::json::Object{{"runs", profile.runs},
                            {"total_ms", profile.totalMs},
                            {"ops", std::move(ops)},
                            {"steps", std::move(steps)}};
}

} // namespace onnxc

//===- tests/node/NodeTestRunner.cpp - ONNX backend node tests on onnxc ----===//
//
// onnxc_node_tests ROOT... [--exclusions FILE]... [--filter SUBSTRING]... [--skip PREFIX]...
//                  [--timeout SECONDS] [--backend ref|jit|so|lower] [--min-opset N] [--max-opset N]
//                  [--one-per-signature] [--no-fork] [--verbose]
//
// Runs every in-scope ONNX node-test case under each ROOT through the
// importer and a backend: the reference evaluator (default), the JIT
// (lowering + ORC + runtime), a compiled shared library, or `lower` (every
// case lowered to LLVM IR, the evaluator's outputs compared: the compiler's
// own code without running kernels, for the sanitizer builds). A case is in scope when all of its
// nodes are ai.onnx ops declared in ir/Ops.def or expanded by the importer into such ops. Cases
// whose opset is outside the importer's window (7 to 28; 7 to 12 are converted to 13 on import, and
// --min-opset raises the lower end) and cases listed in the exclusions file
// are skipped with their reason; --skip leaves the cases whose name starts with PREFIX to another
// set that runs them (counted as skipped). --one-per-signature runs only the first case of each
// distinct signature (op types, input and output element types): the shared-library run's own code
// is the artifact around the kernels (the descriptor, the linked .so, the loader), which the JIT
// run does not take, while the kernels themselves are the JIT run's. Prints one line per failure,
// the excluded cases, failures grouped by op, and closes with "node tests: N passed, N failed, N
// skipped". Exits 1 when any case that was run failed.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelLoader.h"
#include "ir/Error.h"
#include "tests/node/CaseIsolation.h"
#include "tests/node/NodeCase.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace onnxc;
using namespace onnxc::nodetest;

namespace {

/// The ai.onnx opsets the importer accepts (frontend/ModelLoader.cpp refuses
/// the rest with "opset N of ai.onnx is not supported"). Cases outside the
/// window are skipped automatically, so the exclusions file stays a list of
/// individual, specific reasons.
constexpr int64_t kMinOpset = kOldestOnnxOpset;
constexpr int64_t kMaxOpset = kMaxOnnxOpset;

struct Options {
  std::vector<std::string> roots;
  std::vector<std::string> exclusionsFiles;
  /// Case names to run: those containing any of these (all when empty).
  std::vector<std::string> filters;
  /// Case names another set runs: those starting with any of these are skipped.
  std::vector<std::string> skips;
  int timeoutSeconds = 120;
  bool fork = true;
  bool verbose = false;
  Backend backend = Backend::Reference;
  /// Cases below this opset are skipped: the shared-library runs leave the
  /// converted old opsets to the reference and JIT runs (the conversion is
  /// the frontend's alone, and those cases cost link time).
  int64_t minOpset = kMinOpset;
  /// Cases above this opset are skipped: a package's data may hold cases of opsets a newer
  /// package's set covers with its own exclusions (node/onnx-1.23).
  int64_t maxOpset = kMaxOpset;
  /// Only the first in-scope case of each signature (signatureOf) is run.
  bool onePerSignature = false;
};

[[noreturn]] void usage(const std::string &problem) {
  std::cerr << "error: " << problem << "\n"
            << "usage: onnxc_node_tests ROOT... [--exclusions FILE]... [--filter SUBSTRING]... "
               "[--skip PREFIX]... "
               "[--timeout SECONDS] [--backend ref|jit|so|lower] [--min-opset N] [--max-opset N] "
               "[--one-per-signature] [--no-fork] "
               "[--verbose]\n";
  std::exit(2);
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--exclusions")
      options.exclusionsFiles.push_back(value());
    else if (arg == "--filter")
      options.filters.push_back(value());
    else if (arg == "--skip")
      options.skips.push_back(value());
    else if (arg == "--timeout")
      options.timeoutSeconds = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--backend") {
      std::string name = value();
      if (name == "ref")
        options.backend = Backend::Reference;
      else if (name == "jit")
        options.backend = Backend::Jit;
      else if (name == "so")
        options.backend = Backend::SharedLibrary;
      else if (name == "lower")
        options.backend = Backend::Lower;
      else
        usage("unknown --backend '" + name + "' (use ref, jit, so or lower)");
    } else if (arg == "--min-opset")
      options.minOpset = std::max<int64_t>(kMinOpset, std::atoll(value().c_str()));
    else if (arg == "--max-opset")
      options.maxOpset = std::min<int64_t>(kMaxOpset, std::atoll(value().c_str()));
    else if (arg == "--one-per-signature")
      options.onePerSignature = true;
    else if (arg == "--no-fork")
      options.fork = false;
    else if (arg == "--verbose" || arg == "-v")
      options.verbose = true;
    else if (arg.rfind("--", 0) == 0)
      usage("unknown option " + arg);
    else
      options.roots.push_back(arg);
  }
  if (options.roots.empty())
    usage("no node-test folder given");
  return options;
}

/// Exclusions: "case_name  reason" per line, '#' comments. A name ending in
/// '*' matches every case starting with the rest (for families of cases that
/// share one reason, like the string casts).
class Exclusions {
public:
  void load(const std::string &path) {
    std::ifstream in(path);
    if (!in)
      fail(path, ": cannot open exclusions file");
    std::string line;
    for (int lineNumber = 1; std::getline(in, line); ++lineNumber) {
      line = line.substr(0, line.find('#'));
      std::istringstream fields(line);
      std::string name, reason;
      if (!(fields >> name))
        continue;
      std::getline(fields >> std::ws, reason);
      while (!reason.empty() && std::isspace((unsigned char)reason.back()))
        reason.pop_back();
      if (reason.empty())
        fail(path, ":", lineNumber, ": exclusion of '", name, "' gives no reason");
      entries_.emplace_back(name, reason);
    }
  }

  /// The reason `caseName` is excluded, or null.
  const std::string *reasonFor(const std::string &caseName) const {
    for (const auto &[pattern, reason] : entries_) {
      bool prefix = !pattern.empty() && pattern.back() == '*';
      if (prefix ? caseName.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0
                 : caseName == pattern)
        return &reason;
    }
    return nullptr;
  }

private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

/// Case folders (those holding model.onnx) of one root, sorted by name.
std::vector<fs::path> caseFolders(const std::string &root) {
  std::vector<fs::path> folders;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(root, ec))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx"))
      folders.push_back(entry.path());
  if (ec)
    fail(root, ": cannot list node-test folder (", ec.message(), ")");
  std::sort(folders.begin(), folders.end());
  return folders;
}

std::string joined(const std::vector<std::string> &items) {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : ", ") + item;
  return text;
}

struct Tally {
  int passed = 0, failed = 0, crashed = 0, excluded = 0, outOfScope = 0;
  /// --one-per-signature: the signatures run, and the cases left out for sharing one.
  std::set<std::string> signaturesRun;
  int sameSignature = 0;
  /// --skip: cases another set runs.
  int leftToAnotherSet = 0;
  std::vector<std::pair<std::string, std::string>> excludedCases; // name, reason
  std::map<std::string, int> failuresByOp;
};

/// The op types (sorted) and the declared input and output element types of a case.
std::string signatureOf(const CaseInfo &info) {
  std::vector<std::string> ops = info.opTypes;
  std::sort(ops.begin(), ops.end());
  std::ostringstream signature;
  signature << joined(ops) << " |";
  for (int32_t type : info.dataInputTypes)
    signature << " " << type;
  signature << " ->";
  for (int32_t type : info.outputTypes)
    signature << " " << type;
  return signature.str();
}

void recordFailure(Tally &tally, const CaseInfo &info, const CaseOutcome &outcome) {
  ++tally.failed;
  if (outcome.kind != CaseOutcome::Kind::Failed)
    ++tally.crashed;
  const char *label = outcome.kind == CaseOutcome::Kind::Failed     ? "FAIL"
                      : outcome.kind == CaseOutcome::Kind::TimedOut ? "TIMEOUT"
                                                                    : "CRASH";
  std::cout << label << " " << info.name << " [" << joined(info.opTypes) << "]: " << outcome.message
            << std::endl;
  for (const std::string &op : info.opTypes)
    ++tally.failuresByOp[op];
}

/// Why an in-scope case is not run (empty when it is run).
std::string skipReason(const CaseInfo &info, const Options &options, const Exclusions &exclusions) {
  if (info.opset > kMaxOpset)
    return "opset " + std::to_string(info.opset) + " > " + std::to_string(kMaxOpset);
  if (info.opset < kMinOpset)
    return "opset " + std::to_string(info.opset) + " < " + std::to_string(kMinOpset) +
           ": onnxc imports opsets " + std::to_string(kMinOpset) + " to " +
           std::to_string(kMaxOpset);
  if (info.opset > options.maxOpset)
    return "opset " + std::to_string(info.opset) + " > --max-opset " +
           std::to_string(options.maxOpset);
  if (info.opset < options.minOpset)
    return "opset " + std::to_string(info.opset) + " < --min-opset " +
           std::to_string(options.minOpset);
  if (const std::string *listed = exclusions.reasonFor(info.name))
    return *listed;
  return "";
}

/// Decides the fate of one case folder and runs it when it is in scope.
void processCase(const fs::path &folder, const Options &options, const Exclusions &exclusions,
                 Tally &tally) {
  CaseInfo info;
  try {
    info = readCaseInfo(folder.string());
  } catch (const Error &error) {
    info.name = folder.filename().string();
    recordFailure(tally, info, {CaseOutcome::Kind::Failed, error.what()});
    return;
  }
  if (!info.inScope()) {
    ++tally.outOfScope;
    if (options.verbose)
      std::cout << "OUT  " << info.name << " (" << joined(info.undeclaredOps) << ")\n";
    return;
  }
  std::string reason = skipReason(info, options, exclusions);
  if (!reason.empty()) {
    ++tally.excluded;
    tally.excludedCases.emplace_back(info.name, reason);
    return;
  }
  if (options.onePerSignature && !tally.signaturesRun.insert(signatureOf(info)).second) {
    ++tally.sameSignature;
    return;
  }
  CaseOutcome outcome =
      options.fork ? runCaseIsolated(info, options.timeoutSeconds) : runCaseInProcess(info);
  if (outcome.kind != CaseOutcome::Kind::Passed) {
    recordFailure(tally, info, outcome);
    return;
  }
  ++tally.passed;
  if (options.verbose)
    std::cout << "PASS " << info.name << std::endl;
}

void printReport(const Tally &tally) {
  std::cout << "\nexcluded (" << tally.excludedCases.size() << "):\n";
  for (const auto &[name, reason] : tally.excludedCases)
    std::cout << "  " << name << ": " << reason << "\n";

  if (!tally.failuresByOp.empty()) {
    std::vector<std::pair<std::string, int>> byOp(tally.failuresByOp.begin(),
                                                  tally.failuresByOp.end());
    std::stable_sort(byOp.begin(), byOp.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
    std::cout << "failing cases by op:";
    for (size_t i = 0; i < byOp.size(); ++i)
      std::cout << (i ? ", " : " ") << byOp[i].first << " " << byOp[i].second;
    std::cout << "\n";
  }
  if (tally.crashed)
    std::cout << "crashed or timed out: " << tally.crashed << " (counted as failed)\n";
  std::cout << "out of scope: " << tally.outOfScope << "\n";
  if (tally.sameSignature)
    std::cout << "left out for a signature already run (--one-per-signature): "
              << tally.sameSignature << "\n";
  if (tally.leftToAnotherSet)
    std::cout << "left to another set (--skip): " << tally.leftToAnotherSet << "\n";
  std::cout << "node tests: " << tally.passed << " passed, " << tally.failed << " failed, "
            << tally.excluded + tally.outOfScope + tally.sameSignature + tally.leftToAnotherSet
            << " skipped" << std::endl;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  setCaseBackend(options.backend);
  try {
    Exclusions exclusions;
    for (const std::string &file : options.exclusionsFiles)
      exclusions.load(file);
    Tally tally;
    for (const std::string &root : options.roots)
      for (const fs::path &folder : caseFolders(root)) {
        std::string name = folder.filename().string();
        if (!options.filters.empty() &&
            std::none_of(options.filters.begin(), options.filters.end(),
                         [&](const std::string &f) { return name.find(f) != std::string::npos; }))
          continue;
        if (std::any_of(options.skips.begin(), options.skips.end(),
                        [&](const std::string &prefix) { return name.starts_with(prefix); })) {
          ++tally.leftToAnotherSet;
          continue;
        }
        processCase(folder, options, exclusions, tally);
      }
    printReport(tally);
    return tally.failed ? 1 : 0;
  } catch (const Error &error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  }
}

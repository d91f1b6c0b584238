//===- tools/onnxc/ToolMain.cpp - The onnxc command line as a function ------===//
//
// Dispatches to a subcommand and is the one place that turns errors into
// messages: onnxc::Error -> "error: <message>" and exit 1, usage mistakes ->
// one line and exit 2. Nothing escapes as a crash or a stack trace. A
// function, not main(), so that the Python module runs the same command line
// (`onnxc` installed from the wheel, `python -m onnxc`: python/src/Module.cpp).
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/ToolMain.h"

#include "tools/onnxc/Commands.h"

#include "ir/Error.h"
#include "ir/MemoryBudget.h"
#include "passes/PassRegistry.h"
#include "tools/onnxc/ProgressLine.h"

#include <algorithm>
#include <iostream>
#include <new>

using namespace onnxc;

namespace {

const std::vector<Command> &commands() {
  static const std::vector<Command> table = {inspectCommand(),  dumpCommand(),  runCommand(),
                                             compileCommand(),  benchCommand(), generateCommand(),
                                             tokenizeCommand(), serveCommand()};
  return table;
}

/// The commands that compile a model, and so may take long.
bool compilesModels(const Command &command) {
  return command.name == "compile" || command.name == "bench" || command.name == "generate" ||
         command.name == "run" || command.name == "serve";
}

/// Options every subcommand takes, after its own.
std::vector<OptionSpec> withCommonOptions(const Command &command) {
  std::vector<OptionSpec> all = command.options;
  if (compilesModels(command))
    for (const OptionSpec &option : progressOptions())
      all.push_back(option);
  all.push_back({"memory-limit", "BYTES",
                 "the most memory tensors and compiled runs may take, e.g. 8G (default: "
                 "$ONNXC_MEMORY_LIMIT, else physical memory)"});
  return all;
}

/// Sets the budget of ir/MemoryBudget.h, which compiled sessions also take.
void applyCommonOptions(const ParsedArgs &args) {
  if (!args.has("memory-limit"))
    return;
  std::string text = args.get("memory-limit", "");
  std::optional<int64_t> bytes = parseByteSize(text);
  if (!bytes || *bytes <= 0)
    throw UsageError("--memory-limit needs a positive size such as 512M or 8G, got '" + text + "'");
  setMemoryLimit(*bytes);
}

void printToolHelp() {
  std::cout << "onnxc: an ONNX compiler and executor for transformer models\n\n"
               "USAGE: onnxc SUBCOMMAND [options]\n\nSUBCOMMANDS:\n";
  for (const Command &c : commands())
    std::cout << "  " << c.name << std::string(10 - c.name.size(), ' ') << c.summary << "\n";
  std::cout << "\nType 'onnxc SUBCOMMAND --help' for the options of a subcommand. After the\n"
               "subcommand, an argument @FILE stands for the arguments written in FILE.\n\n"
               "OPTIONS:\n  --help     show this help\n"
               "  --version  print the onnxc and LLVM versions and the default target CPU\n\n"
               "PASSES (for --passes= and --print-ir-after=):\n"
            << passListing();
}

void printCommandHelp(const Command &c) {
  std::cout << "onnxc " << c.name << ": " << c.summary << "\n\nUSAGE: onnxc " << c.usage << "\n";
  std::cout << "\n" << describeOptions(withCommonOptions(c));
  if (c.name == "dump" || c.name == "run")
    std::cout << "\nPASSES:\n" << passListing();
}

/// Error messages are one line however they were built.
std::string oneLine(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  return message;
}

int dispatch(const std::vector<std::string> &args) {
  if (args.empty())
    throw UsageError("missing subcommand (see 'onnxc --help')");
  const std::string &name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    if (args.size() > 1)
      return dispatch({args[1], "--help"});
    printToolHelp();
    return 0;
  }
  if (name == "--version" || name == "version") {
    if (args.size() > 1)
      throw UsageError("'onnxc " + name + "' takes no arguments");
    printVersion(std::cout);
    return 0;
  }
  auto it = std::find_if(commands().begin(), commands().end(),
                         [&](const Command &c) { return c.name == name; });
  if (it == commands().end()) {
    std::vector<std::string> names;
    for (const Command &c : commands())
      names.push_back(c.name);
    throw UsageError("unknown subcommand '" + name + "'" + didYouMean(name, names) +
                     " (see 'onnxc --help')");
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
      std::find(rest.begin(), rest.end(), "-h") != rest.end()) {
    printCommandHelp(*it);
    return 0;
  }
  ParsedArgs parsed = parseArguments(rest, withCommonOptions(*it), it->name);
  applyCommonOptions(parsed);
  if (compilesModels(*it))
    ProgressLine::instance().configure(parsed);
  return it->run(parsed);
}

/// The command line with every error turned into its one line and exit status.
int runCaught(const std::vector<std::string> &args) {
  try {
    return dispatch(args);
  } catch (const UsageError &e) {
    std::cout.flush();
    ProgressLine::instance().clear();
    std::cerr << "error: " << oneLine(e.what()) << "\n";
    return 2;
  } catch (const Error &e) {
    std::cout.flush();
    ProgressLine::instance().clear();
    std::cerr << "error: " << oneLine(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc &) {
    std::cout.flush();
    ProgressLine::instance().clear();
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception &e) {
    std::cout.flush();
    ProgressLine::instance().clear();
    std::cerr << "error: internal error: " << oneLine(e.what()) << "\n";
    return 1;
  } catch (...) {
    ProgressLine::instance().clear();
    std::cerr << "error: internal error: unknown exception\n";
    return 1;
  }
}

} // namespace

int onnxc::runTool(const std::vector<std::string> &args) {
  int status = runCaught(args);
  // In a Python process the streams outlive this call: what the command
  // printed must be out before Python prints anything after it.
  std::cout.flush();
  std::cerr.flush();
  return status;
}

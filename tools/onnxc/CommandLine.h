//===- tools/onnxc/CommandLine.h - Subcommand option parsing ----------------===//
//
// Each subcommand declares its options as a table of OptionSpec; the table
// is both what LLVM's cl parses against (one private cl::SubCommand per
// parse, holding only these options, so the options libLLVM registers for
// every tool are not accepted) and the source of the subcommand's --help.
// Accepted forms: `--name`, `--name=value`, `--name value`, `-x value`,
// `-xvalue` (so `-O2` and `-o FILE`), `--` to end options, and `@FILE` to
// read more arguments from FILE (cl's response files). cl's diagnostics
// become onnxc's one-line usage errors with exit code 2.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace onnxc {

/// A command-line mistake: printed as one line, exit code 2.
class UsageError : public std::runtime_error {
public:
  explicit UsageError(const std::string &message) : std::runtime_error(message) {}
};

struct OptionSpec {
  /// "stats" for --stats, "o" for -o: one character means a single dash.
  std::string name;
  /// Placeholder of the value in --help ("FILE"); empty for a flag.
  std::string valueName;
  std::string help;
  bool repeatable = false;

  bool takesValue() const { return !valueName.empty(); }
  std::string spelling() const { return (name.size() == 1 ? "-" : "--") + name; }
};

class ParsedArgs {
public:
  std::vector<std::string> positionals;

  bool has(const std::string &name) const { return values_.count(name) != 0; }
  /// The last value given for an option, or `fallback`.
  std::string get(const std::string &name, const std::string &fallback = "") const;
  /// Every value given for a repeatable option, in order.
  std::vector<std::string> getAll(const std::string &name) const;

private:
  friend ParsedArgs parseArguments(const std::vector<std::string> &,
                                   const std::vector<OptionSpec> &, const std::string &);
  std::map<std::string, std::vector<std::string>> values_;
};

/// Parses `args` (after the subcommand name) against `specs`. Throws
/// UsageError naming `command` on an unknown option, a missing value, a
/// value given to a flag, or a non-repeatable option given twice.
ParsedArgs parseArguments(const std::vector<std::string> &args,
                          const std::vector<OptionSpec> &specs, const std::string &command);

/// "; did you mean 'X'?" for the name in `known` closest to `given` (a few
/// edits away at most), or "" when none is close.
std::string didYouMean(const std::string &given, const std::vector<std::string> &known);

/// The OPTIONS section of a --help text.
std::string describeOptions(const std::vector<OptionSpec> &specs);

} // namespace onnxc

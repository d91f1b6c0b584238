//===- tools/onnxc/CommandLine.cpp - Subcommand option parsing --------------===//
#include "tools/onnxc/CommandLine.h"

#include "tools/onnxc/ResponseFiles.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <memory>

namespace onnxc {

std::string ParsedArgs::get(const std::string &name, const std::string &fallback) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> ParsedArgs::getAll(const std::string &name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

namespace {

namespace cl = llvm::cl;

/// A subcommand that exists for one parse. Options registered in it are the
/// only ones cl accepts while it is active, so the hundreds of options
/// libLLVM registers for every tool stay out of onnxc's command lines.
class ScopedSubCommand : public cl::SubCommand {
public:
  using cl::SubCommand::SubCommand;
  ~ScopedSubCommand() { unregisterSubCommand(); }
};

/// The cl options made from one command's specs. They leave cl's registry
/// before the subcommand they belong to does.
class RegisteredOptions {
public:
  RegisteredOptions(const std::vector<OptionSpec> &specs, cl::SubCommand &sub) {
    for (const OptionSpec &spec : specs) {
      // Every occurrence is kept, even of a non-repeatable option or a flag,
      // and checked after the parse: cl would report a flag's value on
      // stderr itself rather than in the stream it is given.
      auto list =
          std::make_unique<cl::list<std::string>>(llvm::StringRef(spec.name), cl::desc(spec.help),
                                                  cl::value_desc(spec.valueName), cl::sub(sub));
      if (!spec.takesValue())
        list->setValueExpectedFlag(cl::ValueOptional);
      // One-character options take attached values: -O2, -omodel.so.
      else if (spec.name.size() == 1)
        list->setFormattingFlag(cl::Prefix);
      options_.push_back({&spec, std::move(list)});
    }
    positionals_ = std::make_unique<cl::list<std::string>>(cl::Positional, cl::desc("arguments"),
                                                           cl::sub(sub));
  }

  ~RegisteredOptions() {
    positionals_->removeArgument();
    for (auto &[spec, option] : options_)
      option->removeArgument();
  }

  bool owns(const cl::Option *option) const {
    return option == positionals_.get() ||
           std::any_of(options_.begin(), options_.end(),
                       [&](const auto &entry) { return entry.second.get() == option; });
  }

  std::vector<std::string> positionals() const {
    return {positionals_->begin(), positionals_->end()};
  }

  /// The values given to each option given, by spec, in order.
  std::vector<std::pair<const OptionSpec *, std::vector<std::string>>> values() const {
    std::vector<std::pair<const OptionSpec *, std::vector<std::string>>> values;
    for (const auto &[spec, option] : options_)
      if (option->getNumOccurrences() != 0)
        values.push_back({spec, {option->begin(), option->end()}});
    return values;
  }

private:
  std::vector<std::pair<const OptionSpec *, std::unique_ptr<cl::list<std::string>>>> options_;
  std::unique_ptr<cl::list<std::string>> positionals_;
};

/// Hides the options registered at the top level (every cl::opt of libLLVM)
/// while it lives: cl looks an argument up there when the active subcommand
/// does not have it.
class HiddenTopLevelOptions {
public:
  HiddenTopLevelOptions() { hidden_.swap(cl::getRegisteredOptions(cl::SubCommand::getTopLevel())); }
  ~HiddenTopLevelOptions() {
    hidden_.swap(cl::getRegisteredOptions(cl::SubCommand::getTopLevel()));
  }
  HiddenTopLevelOptions(const HiddenTopLevelOptions &) = delete;
  HiddenTopLevelOptions &operator=(const HiddenTopLevelOptions &) = delete;

private:
  llvm::StringMap<cl::Option *> hidden_;
};

/// Whether `known` is close enough to what was typed to suggest it (values
/// after '=' and leading dashes aside).
bool isNearMiss(llvm::StringRef given, llvm::StringRef known) {
  given = given.split('=').first.ltrim('-');
  known = known.split('=').first.ltrim('-');
  return known.edit_distance(given, /*AllowReplacements=*/true) <=
         std::max<size_t>(1, given.size() / 3);
}

/// cl's diagnostic of an unknown argument ("onnxc: Unknown command line
/// argument '--stat'.  Try: ...", then "onnxc: Did you mean '--stats'?"), or
/// of a response file it could not read, as onnxc's one line. (cl reports
/// an option's bad value on stderr rather than here; parseArguments checks
/// values itself.)
std::string describeParseError(llvm::StringRef text, const std::string &command) {
  llvm::SmallVector<llvm::StringRef, 4> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef &line : lines)
    line.consume_front("onnxc: ");
  if (lines.empty())
    return "cannot parse the arguments of '" + command + "'";
  llvm::StringRef first = lines[0];
  if (!first.consume_front("Unknown command line argument '"))
    return first.str();
  llvm::StringRef given = first.split("'.").first;
  std::string message = "unknown option '" + given.str() + "' for '" + command + "'";
  llvm::StringRef suggestion;
  if (lines.size() > 1 && lines[1].consume_front("Did you mean '"))
    suggestion = lines[1].rsplit("'?").first;
  // cl names the nearest option however far it is.
  if (!suggestion.empty() && isNearMiss(given, suggestion))
    message += "; did you mean '" + suggestion.str() + "'?";
  return message;
}

[[noreturn]] void usage(const std::string &command, const std::string &problem) {
  throw UsageError(problem + " (see 'onnxc " + command + " --help')");
}

} // namespace

std::string didYouMean(const std::string &given, const std::vector<std::string> &known) {
  const std::string *best = nullptr;
  unsigned bestDistance = 0;
  for (const std::string &name : known) {
    unsigned distance = llvm::StringRef(name).edit_distance(given, /*AllowReplacements=*/true);
    if (isNearMiss(given, name) && (!best || distance < bestDistance)) {
      best = &name;
      bestDistance = distance;
    }
  }
  return best ? "; did you mean '" + *best + "'?" : "";
}

ParsedArgs parseArguments(const std::vector<std::string> &args,
                          const std::vector<OptionSpec> &specs, const std::string &command) {
  // Options cl puts in every subcommand (its --help-list, --version,
  // --print-options...) are created on first use; create them now so that
  // they can be taken out of this command's set below.
  (void)cl::getRegisteredOptions();
  ScopedSubCommand sub(command);
  RegisteredOptions options(specs, sub);
  llvm::StringMap<cl::Option *> &registered = cl::getRegisteredOptions(sub);
  std::vector<std::string> foreign;
  for (const auto &entry : registered)
    if (!options.owns(entry.second))
      foreign.push_back(entry.first().str());
  for (const std::string &name : foreign)
    registered.erase(name);

  // cl reports an option missing its value on stderr, not in the stream it
  // is given; an argument after the last one gives such an option a value
  // that names the mistake instead.
  static const std::string missingValue = "\x01onnxc: no value\x01";
  std::vector<const char *> argv = {"onnxc", command.c_str()};
  // Expanded here, within bounds: what cl sees has no @FILE left to open.
  std::vector<std::string> expanded = expandResponseFiles(args);
  for (const std::string &arg : expanded)
    argv.push_back(arg.c_str());
  argv.push_back(missingValue.c_str());
  std::string diagnostics;
  llvm::raw_string_ostream errors(diagnostics);
  {
    HiddenTopLevelOptions hidden;
    if (!cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "", &errors,
                                     /*EnvVar=*/nullptr, /*LongOptionsUseDoubleDash=*/true))
      usage(command, describeParseError(errors.str(), command));
  }

  ParsedArgs parsed;
  parsed.positionals = options.positionals();
  if (!parsed.positionals.empty() && parsed.positionals.back() == missingValue)
    parsed.positionals.pop_back();
  for (auto &[spec, given] : options.values()) {
    for (const std::string &value : given) {
      if (value == missingValue)
        usage(command, "option '" + spec->spelling() + "' needs a value (" + spec->valueName + ")");
      if (!spec->takesValue() && !value.empty())
        usage(command, "option '" + spec->spelling() + "' takes no value");
    }
    const std::string &first = given.empty() ? missingValue : given[0];
    bool differ = std::any_of(given.begin(), given.end(),
                              [&first](const std::string &v) { return v != first; });
    if (!spec->repeatable && (differ || (!spec->takesValue() && given.size() > 1)))
      usage(command, "option '" + spec->spelling() + "' given more than once");
    parsed.values_[spec->name] = std::move(given);
  }
  return parsed;
}

std::string describeOptions(const std::vector<OptionSpec> &specs) {
  std::vector<std::string> lefts;
  size_t width = 0;
  for (const OptionSpec &spec : specs) {
    std::string left = spec.spelling();
    if (spec.takesValue()) {
      // "-O<0-3>", "-o FILE", "--input NAME=FILE.npy", "--seed=N".
      bool attached = spec.name.size() == 1 ? spec.valueName[0] == '<'
                                            : spec.valueName.find('=') == std::string::npos;
      left += (attached ? (spec.name.size() == 1 ? "" : "=") : " ") + spec.valueName;
    }
    width = std::max(width, left.size());
    lefts.push_back(left);
  }
  std::string out = "OPTIONS:\n";
  for (size_t i = 0; i < specs.size(); ++i)
    out += "  " + lefts[i] + std::string(width - lefts[i].size() + 2, ' ') + specs[i].help +
           (specs[i].repeatable ? " (repeatable)" : "") + "\n";
  return out;
}

} // namespace onnxc

//===- tools/onnxc/CommandLine.cpp - Subcommand option parsing --------------===//
#include "tools/onnxc/CommandLine.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <optional>

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

const OptionSpec *findSpec(const std::vector<OptionSpec> &specs, const std::string &name) {
  auto it =
      std::find_if(specs.begin(), specs.end(), [&](const OptionSpec &s) { return s.name == name; });
  return it == specs.end() ? nullptr : &*it;
}

[[noreturn]] void usage(const std::string &command, const std::string &problem) {
  throw UsageError(problem + " (see 'onnxc " + command + " --help')");
}

} // namespace

std::string didYouMean(const std::string &given, const std::vector<std::string> &known) {
  const std::string *best = nullptr;
  unsigned bestDistance = 0;
  for (const std::string &name : known) {
    unsigned distance = llvm::StringRef(name).edit_distance(given, true, 3);
    if (distance <= std::max<size_t>(1, given.size() / 3) && (!best || distance < bestDistance)) {
      best = &name;
      bestDistance = distance;
    }
  }
  return best ? "; did you mean '" + *best + "'?" : "";
}

ParsedArgs parseArguments(const std::vector<std::string> &args,
                          const std::vector<OptionSpec> &specs, const std::string &command) {
  ParsedArgs parsed;
  bool optionsEnded = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (optionsEnded || arg.size() < 2 || arg[0] != '-') {
      parsed.positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    std::string name;
    std::optional<std::string> value;
    if (arg[1] == '-') {
      size_t eq = arg.find('=');
      name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq != std::string::npos)
        value = arg.substr(eq + 1);
    } else {
      name = arg.substr(1, 1);
      if (arg.size() > 2)
        value = arg.substr(arg[2] == '=' ? 3 : 2);
    }
    const OptionSpec *spec = findSpec(specs, name);
    // `-stats` style single-dash long options are a common slip; name them.
    if (!spec || (name.size() == 1) != (arg[1] != '-')) {
      std::vector<std::string> spellings;
      for (const OptionSpec &s : specs)
        spellings.push_back(s.spelling());
      std::string given = arg.substr(0, arg.find('='));
      usage(command, "unknown option '" + arg + "' for '" + command + "'" +
                         didYouMean(given[1] == '-' ? given : "-" + given, spellings));
    }
    if (!spec->takesValue() && value)
      usage(command, "option '" + spec->spelling() + "' takes no value");
    if (spec->takesValue() && !value) {
      if (i + 1 == args.size())
        usage(command, "option '" + spec->spelling() + "' needs a value (" + spec->valueName + ")");
      value = args[++i];
    }
    std::vector<std::string> &slot = parsed.values_[spec->name];
    if (!slot.empty() && !spec->repeatable && (!value || slot.back() != *value))
      usage(command, "option '" + spec->spelling() + "' given more than once");
    slot.push_back(value.value_or(""));
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

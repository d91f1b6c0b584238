//===- tests/unit/tools/CommandLineTest.cpp - The driver's option parser ----------===//
//
// parseArguments on LLVM's cl: the accepted spellings, the one-line usage
// errors, and that neither libLLVM's own options nor a previous parse leak
// into a subcommand's command line.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/CommandLine.h"
#include "tools/onnxc/ResponseFiles.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace onnxc;

namespace {

const std::vector<OptionSpec> &specs() {
  static const std::vector<OptionSpec> table = {
      {"O", "<0-3>", "optimization level"},
      {"o", "FILE", "output file"},
      {"stats", "", "print statistics"},
      {"passes", "a,b,...", "passes to run", true},
      {"input", "NAME=FILE.npy", "an input", true},
      {"seed", "N", "a seed"},
  };
  return table;
}

ParsedArgs parse(std::vector<std::string> args, const std::string &command = "dump") {
  return parseArguments(args, specs(), command);
}

/// The UsageError message a parse throws, or "" when it succeeds.
std::string usageError(std::vector<std::string> args, const std::string &command = "dump") {
  try {
    parse(std::move(args), command);
  } catch (const UsageError &e) {
    return e.what();
  }
  return "";
}

TEST(CommandLine, AcceptsEverySpellingOfAValue) {
  ParsedArgs parsed = parse({"-O2", "model.onnx", "-o", "out.ir", "--seed=7", "--passes", "dce",
                             "--passes=cse", "--stats"});
  EXPECT_EQ(parsed.get("O"), "2");
  EXPECT_EQ(parsed.get("o"), "out.ir");
  EXPECT_EQ(parsed.get("seed"), "7");
  EXPECT_EQ(parsed.getAll("passes"), (std::vector<std::string>{"dce", "cse"}));
  EXPECT_TRUE(parsed.has("stats"));
  EXPECT_FALSE(parsed.has("input"));
  EXPECT_EQ(parsed.positionals, std::vector<std::string>{"model.onnx"});

  EXPECT_EQ(parse({"-oout.so"}).get("o"), "out.so");
  EXPECT_EQ(parse({"-o=out.so"}).get("o"), "out.so");
  EXPECT_EQ(parse({"-O", "3"}).get("O"), "3");
  // A value may start with a dash or be empty.
  EXPECT_EQ(parse({"--seed", "-1"}).get("seed"), "-1");
  EXPECT_TRUE(parse({"--seed="}).has("seed"));
}

TEST(CommandLine, DoubleDashEndsOptions) {
  ParsedArgs parsed = parse({"--stats", "--", "-model.onnx", "--seed=1"});
  EXPECT_EQ(parsed.positionals, (std::vector<std::string>{"-model.onnx", "--seed=1"}));
  EXPECT_FALSE(parsed.has("seed"));
  // "-" alone is a positional (stdin by convention).
  EXPECT_EQ(parse({"-"}).positionals, std::vector<std::string>{"-"});
}

TEST(CommandLine, UnknownOptionsNameTheCommandAndANearOne) {
  EXPECT_EQ(usageError({"--passs=dce"}),
            "unknown option '--passs=dce' for 'dump'; did you mean '--passes=dce'? (see 'onnxc "
            "dump --help')");
  // Long options take two dashes.
  EXPECT_EQ(usageError({"-stats"}, "run"),
            "unknown option '-stats' for 'run'; did you mean '--stats'? (see 'onnxc run --help')");
  // No suggestion when nothing is close, however long the name.
  EXPECT_EQ(usageError({"--frobnicate"}),
            "unknown option '--frobnicate' for 'dump' (see 'onnxc dump --help')");
  EXPECT_EQ(usageError({"--a-rather-long-option-name=1"}),
            "unknown option '--a-rather-long-option-name=1' for 'dump' (see 'onnxc dump --help')");
  EXPECT_EQ(didYouMean("complie", {"compile", "dump"}), "; did you mean 'compile'?");
  EXPECT_EQ(didYouMean("x86-asm-syntax", {"compile", "dump"}), "");
}

TEST(CommandLine, ValuesAreCheckedAgainstTheSpec) {
  EXPECT_EQ(usageError({"model.onnx", "-o"}),
            "option '-o' needs a value (FILE) (see 'onnxc dump --help')");
  EXPECT_EQ(usageError({"--seed"}), "option '--seed' needs a value (N) (see 'onnxc dump --help')");
  EXPECT_EQ(usageError({"--stats=yes"}),
            "option '--stats' takes no value (see 'onnxc dump --help')");
}

TEST(CommandLine, OnlyRepeatableOptionsTakeSeveralValues) {
  EXPECT_EQ(usageError({"--seed=1", "--seed=2"}),
            "option '--seed' given more than once (see 'onnxc dump --help')");
  EXPECT_EQ(usageError({"--stats", "--stats"}),
            "option '--stats' given more than once (see 'onnxc dump --help')");
  // The same value twice is harmless.
  EXPECT_EQ(parse({"--seed=1", "--seed", "1"}).get("seed"), "1");
  EXPECT_EQ(parse({"--input", "a=x.npy", "--input=b=y.npy"}).getAll("input"),
            (std::vector<std::string>{"a=x.npy", "b=y.npy"}));
}

TEST(CommandLine, LibLlvmOptionsAreNotOnnxcOptions) {
  // Registered by libLLVM for every tool: at the top level (a codegen
  // option) and in every subcommand (cl's own help and version printers).
  for (const char *option :
       {"--x86-asm-syntax=intel", "--debug-pass=Structure", "--help-list", "--help-hidden",
        "--version", "--print-options", "--print-all-options"})
    EXPECT_NE(usageError({"model.onnx", option}).find("unknown option '" + std::string(option)),
              std::string::npos)
        << option;
}

TEST(CommandLine, ParsesAreIndependent) {
  // Options of one parse do not survive into the next, even of another
  // command whose table has the same names.
  EXPECT_TRUE(parse({"--stats"}).has("stats"));
  EXPECT_FALSE(parse({"model.onnx"}).has("stats"));
  EXPECT_FALSE(parse({"model.onnx"}, "run").has("stats"));
  std::vector<OptionSpec> other = {{"threads", "N", "threads"}};
  EXPECT_EQ(parseArguments({"--threads=2"}, other, "bench").get("threads"), "2");
  EXPECT_THROW(parseArguments({"--stats"}, other, "bench"), UsageError);
  EXPECT_TRUE(parse({"--stats"}).has("stats"));
}

TEST(CommandLine, ResponseFilesAddArguments) {
  std::filesystem::path file = std::filesystem::temp_directory_path() /
                               ("onnxc-cl-test-" + std::to_string(::getpid()) + ".rsp");
  std::ofstream(file) << "--seed=5 \"model with spaces.onnx\"\n--passes dce\n";
  ParsedArgs parsed = parse({"@" + file.string(), "--passes=cse"});
  std::filesystem::remove(file);
  // A missing file is an error naming it, not a model named "@...".
  EXPECT_THROW(parse({"@" + file.string()}), UsageError);
  EXPECT_EQ(parsed.get("seed"), "5");
  EXPECT_EQ(parsed.positionals, std::vector<std::string>{"model with spaces.onnx"});
  EXPECT_EQ(parsed.getAll("passes"), (std::vector<std::string>{"dce", "cse"}));
}

TEST(CommandLine, ResponseFilesAreBounded) {
  std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("onnxc-rsp-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  auto messageOf = [](const std::vector<std::string> &args) -> std::string {
    try {
      parse(args);
    } catch (const UsageError &error) {
      return error.what();
    }
    return "";
  };
  // A device or a folder is not read at all; a pipe would block forever.
  EXPECT_NE(messageOf({"@/dev/zero"}).find("not a regular file"), std::string::npos);
  EXPECT_NE(messageOf({"@" + folder.string()}).find("not a regular file"), std::string::npos);
  EXPECT_NE(messageOf({"@/nonexistent"}).find("no such file"), std::string::npos);
  // A file naming itself nests without end.
  std::filesystem::path self = folder / "self.rsp";
  std::ofstream(self) << "@" << self.string() << " @" << self.string() << "\n";
  EXPECT_NE(messageOf({"@" + self.string()}).find("nest deeper"), std::string::npos);
  std::filesystem::path big = folder / "big.rsp";
  std::ofstream(big) << std::string(size_t(kMaxResponseFileBytes) + 1, 'x');
  EXPECT_NE(messageOf({"@" + big.string()}).find("larger than"), std::string::npos);
  std::filesystem::remove_all(folder);
}

} // namespace

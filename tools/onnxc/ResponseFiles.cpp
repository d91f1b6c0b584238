//===- tools/onnxc/ResponseFiles.cpp - @FILE arguments, read within bounds --===//
#include "tools/onnxc/ResponseFiles.h"

#include "ir/PrintableText.h"
#include "tools/onnxc/CommandLine.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/StringSaver.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace onnxc {

namespace {

[[noreturn]] void refuse(const std::string &file, const std::string &problem) {
  throw UsageError("response file '@" + printableText(file) + "': " + problem);
}

/// The contents of the response file `file`, read only when it is a
/// regular file of bounded size (checked on the open descriptor, so a name
/// swapped in between cannot point it at a device).
std::string readResponseFile(const std::string &file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    refuse(file, errno == ENOENT ? "no such file" : std::strerror(errno));
  struct stat info {};
  std::string problem;
  if (::fstat(fd, &info) != 0)
    problem = std::strerror(errno);
  else if (!S_ISREG(info.st_mode))
    problem = "not a regular file";
  else if (info.st_size > kMaxResponseFileBytes)
    problem = "larger than " + std::to_string(kMaxResponseFileBytes) + " bytes";
  std::string text;
  if (problem.empty()) {
    text.resize(size_t(info.st_size));
    ssize_t got = ::read(fd, text.data(), text.size());
    if (got < 0)
      problem = std::strerror(errno);
    else
      text.resize(size_t(got));
  }
  ::close(fd);
  if (!problem.empty())
    refuse(file, problem);
  return text;
}

/// Expands `args` into `out`; `bytesLeft` bounds what all the files read
/// together may hold (a file naming itself twice would otherwise double at
/// each level).
void expandInto(const std::vector<std::string> &args, int depth, long long &bytesLeft,
                std::vector<std::string> &out) {
  for (const std::string &arg : args) {
    if (arg.size() < 2 || arg[0] != '@') {
      out.push_back(arg);
      continue;
    }
    std::string file = arg.substr(1);
    if (depth >= kMaxResponseFileDepth)
      refuse(file, "response files nest deeper than " + std::to_string(kMaxResponseFileDepth));
    std::string text = readResponseFile(file);
    bytesLeft -= (long long)text.size();
    if (bytesLeft < 0)
      refuse(file, "the response files hold more than " +
                       std::to_string(kMaxResponseFileBytes * kMaxResponseFileDepth) +
                       " bytes together");
    llvm::BumpPtrAllocator allocator;
    llvm::StringSaver saver(allocator);
    llvm::SmallVector<const char *, 16> tokens;
    llvm::cl::TokenizeGNUCommandLine(text, saver, tokens);
    std::vector<std::string> nested;
    for (const char *token : tokens)
      if (token) // the tokenizer marks line ends with null
        nested.emplace_back(token);
    expandInto(nested, depth + 1, bytesLeft, out);
  }
}

} // namespace

std::vector<std::string> expandResponseFiles(const std::vector<std::string> &args) {
  std::vector<std::string> out;
  long long bytesLeft = kMaxResponseFileBytes * kMaxResponseFileDepth;
  expandInto(args, 0, bytesLeft, out);
  return out;
}

} // namespace onnxc

//===- tools/onnxc/ResponseFiles.h - @FILE arguments, read within bounds ----===//
//
// `onnxc run @args.txt` reads more arguments from args.txt, as compilers do.
// LLVM's own expansion reads whatever the name opens: @/dev/zero until
// memory runs out, @fifo forever. onnxc expands them itself first, reading
// only regular files of bounded size, nested to a bounded depth, so that
// what reaches LLVM's parser has no @FILE left to open.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace onnxc {

/// The largest response file read, and how deep they may nest.
constexpr long long kMaxResponseFileBytes = 1 << 20;
constexpr int kMaxResponseFileDepth = 8;

/// `args` with every @FILE replaced by the arguments in FILE (GNU quoting),
/// recursively. Throws UsageError naming the file when it does not exist,
/// is not a regular file, is larger than kMaxResponseFileBytes, nests
/// deeper than kMaxResponseFileDepth, or the files read hold more than
/// kMaxResponseFileBytes * kMaxResponseFileDepth bytes together.
std::vector<std::string> expandResponseFiles(const std::vector<std::string> &args);

} // namespace onnxc

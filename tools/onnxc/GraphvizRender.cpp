//===- tools/onnxc/GraphvizRender.cpp - Running Graphviz's dot --------------===//
//
// Graphviz is an optional run-time tool, not a build dependency: the DOT text
// goes to a temporary file and `dot -T<format>` turns it into the picture.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/GraphvizRender.h"

#include "ir/Error.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

namespace onnxc {

void renderWithGraphviz(const std::string &dotText, const std::string &format,
                        const std::string &outputPath) {
  llvm::ErrorOr<std::string> dot = llvm::sys::findProgramByName("dot");
  if (!dot)
    fail("--format=", format,
         " needs Graphviz, and its 'dot' program is not on PATH (install "
         "graphviz, or write --format=dot and render it elsewhere)");
  int fd = -1;
  llvm::SmallString<128> dotPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("onnxc-graph", "dot", fd, dotPath))
    fail("cannot create a temporary file for dot: ", ec.message());
  {
    llvm::raw_fd_ostream file(fd, /*shouldClose=*/true);
    file << dotText;
  }
  std::string message;
  std::string formatFlag = "-T" + format;
  llvm::StringRef argv[] = {*dot, formatFlag, "-o", outputPath, dotPath.str()};
  int status = llvm::sys::ExecuteAndWait(*dot, argv, std::nullopt, {}, 0, 0, &message);
  llvm::sys::fs::remove(dotPath);
  if (status != 0)
    fail(outputPath, ": Graphviz 'dot -T", format, "' failed (",
         message.empty() ? "exit status " + std::to_string(status) : message, ")");
}

} // namespace onnxc

//===- tests/fuzz/RandomGraph.h - Small valid graphs from fuzz bytes -------===//
//
// The differential harness needs graphs the compiler must accept, not
// random bytes the importer refuses: this builds one as text IR from fuzz
// bytes, op by op, keeping track of every value's dtype and dims so that
// each op it adds is well typed. Ops: elementwise (unary, binary with
// broadcasting, comparisons, Where, Cast), movement (Transpose, Reshape,
// Slice, Concat, Gather, Unsqueeze, Squeeze, Flatten, Expand, Tile),
// reductions, Softmax / LogSoftmax / LayerNormalization / CumSum, MatMul.
// Dims are small constants (some of them 9 or 17, past a vector width) or
// the symbols n and m, which each run binds to 0 ... 5.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "FuzzSupport.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace onnxc::fuzz {

/// What the generator makes: the graph as text, and how to run it.
struct RandomCase {
  std::string irText;
  /// Symbol values for each run of the compiled model (one or two runs).
  std::vector<std::map<std::string, int64_t>> bindings;
  /// Seeds the input contents; `specialValues` mixes in 0, -0, inf, NaN,
  /// huge and subnormal floats.
  uint32_t dataSeed = 0;
  bool specialValues = false;
  /// Runtime threads of the compiled session (1 or 2).
  int threads = 1;
};

/// Builds a case from the fuzz bytes (any bytes give a valid graph).
RandomCase generateRandomCase(ByteReader &reader);

/// A case as a file that does not depend on the generator, for
/// regressions/jit-differential/: header lines, then the graph.
///   # onnxc-fuzz-case
///   # run: n=3 m=0        (one line per binding)
///   # seed: 1234
///   # specials: 1
///   # threads: 2
///   graph @fuzz(...) ...
std::string caseFileText(const RandomCase &testCase);
/// Reads such a file: false if `text` does not start with the first line.
/// Malformed header lines set `error` (and return true).
bool parseCaseFile(std::string_view text, RandomCase &testCase, std::string &error);

} // namespace onnxc::fuzz

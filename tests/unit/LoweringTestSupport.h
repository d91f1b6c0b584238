//===- tests/unit/LoweringTestSupport.h - Run graphs through codegen --------===//
//
// The lowering tests compile a small graph (text IR or built in C++) with
// the real pipeline: lowering, descriptor, -O3, ORC JIT, runtime session;
// and compare the outputs with the reference evaluator's on the same inputs.
//
//   auto g = parseGraph(R"(graph g(x: f32[n, 8]) -> (y) { y = Relu(x) })");
//   expectCompiledMatchesReference(*g, {{"x", randomTensor({3, 8}, 1)}});
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelPlan.h"
#include "codegen/TargetSelection.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace onnxc::lowertest {

/// Builds the text of a test graph: typed inputs, constants, one node per
/// line, typed outputs.
class GraphText {
public:
  GraphText &input(const std::string &name, const std::string &type) {
    inputs_ += (inputs_.empty() ? "%" : ", %") + name + ": " + type;
    return *this;
  }
  GraphText &constant(const std::string &line) {
    constants_ += "  const " + line + "\n";
    return *this;
  }
  GraphText &node(const std::string &line) {
    body_ += "  " + line + "\n";
    return *this;
  }
  /// Declares the value `name` (defined by some node line) as an output.
  GraphText &output(const std::string &name, const std::string &type) {
    outputs_ += (outputs_.empty() ? "%" : ", %") + name + ": " + type;
    returns_ += (returns_.empty() ? "%" : ", %") + name;
    return *this;
  }
  /// A node `%name = expr` whose result is an output of `type`.
  GraphText &output(const std::string &name, const std::string &type, const std::string &expr) {
    node("%" + name + " = " + expr);
    return output(name, type);
  }
  std::string str() const {
    return "graph @g(" + inputs_ + ") -> (" + outputs_ + ") {\n" + constants_ + body_ +
           "  return " + returns_ + "\n}\n";
  }

private:
  std::string inputs_, outputs_, constants_, body_, returns_;
};

/// While alive, runCompiled and expectCompiledMatchesReference compile for
/// `request` instead of the host (e.g. {"native", "-avx512f"} for the
/// 256-bit kernels on an AVX-512 host). Not nestable; one thread.
class ScopedTarget {
public:
  explicit ScopedTarget(const TargetRequest &request);
  ~ScopedTarget();
  ScopedTarget(const ScopedTarget &) = delete;
  ScopedTarget &operator=(const ScopedTarget &) = delete;
  const TargetSelection &target() const { return target_; }

private:
  TargetSelection target_;
};

/// The target runCompiled compiles for now (the host's, or a ScopedTarget's).
const TargetSelection &compileTarget();

/// Parses text IR, verifies it and infers shapes (like `onnxc` loads an .ir).
std::unique_ptr<Graph> parseGraph(const std::string &text);

/// The plan lowering produces for `graph` (for counting steps and buffers).
ModelPlan lowerOnly(const Graph &graph);

/// Compiles `graph` for the host and runs it on `inputs` (by input name)
/// with `threads` runtime threads; returns the outputs in graph order.
std::vector<Tensor> runCompiled(const Graph &graph, const std::map<std::string, Tensor> &inputs,
                                int threads = 1);

/// Runs the reference evaluator on the same inputs.
std::vector<Tensor> runReference(const Graph &graph, const std::map<std::string, Tensor> &inputs);

/// Compiles and evaluates, then expects every output to have the reference's
/// dtype and dims, and values within |a - r| <= atol + rtol * |r| (floats;
/// NaNs must match NaNs) or equal (integers, bool). `threads` as above.
void expectCompiledMatchesReference(const Graph &graph, const std::map<std::string, Tensor> &inputs,
                                    double rtol = 1e-4, double atol = 1e-6, int threads = 1);

/// A tensor of `dtype` with deterministic pseudo-random contents: floats in
/// [-1, 1) (well, [lo, hi) if given), integers in [lo, hi), bools 0/1.
Tensor randomOf(DType dtype, std::vector<int64_t> dims, unsigned seed, double lo = -1.0,
                double hi = 1.0);

} // namespace onnxc::lowertest

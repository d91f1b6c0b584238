//===- tests/fuzz/JitDifferentialFuzzer.cpp - Compiled path vs the evaluator ===//
//
// Input: bytes that RandomGraph.h turns into a small, well-typed graph
// (text IR) plus one or two bindings of its symbols and a seed for the
// input contents; or a case file (caseFileText: the same as text, which
// is what a finding prints and what regressions/ holds, so a regression
// stays one when the generator changes). The graph goes the way `onnxc run model.ir` takes it: the
// -O3 pipeline, lowering, the ORC JIT (specializing small inputs when shapes
// follow input contents), a runtime session; and, separately, straight
// through the reference evaluator. Nothing is cached between inputs.
//
// A finding: a crash; outputs of another dtype or shape; a float element
// further from the evaluator's than |a - r| <= 1e-5 + 1e-4 |r| + 4 s (the
// 1e-4 fp32 tolerance of onnxc's model tests, docs/KERNEL_ACCURACY.md,
// plus s, how far the evaluator's own result moves when every float input
// is perturbed by up to 2^-20 relative, four times, so ill-conditioned elements — cancellation,
// the slope of exp — get the slack that rounding differences need); NaN
// where the evaluator has none or the reverse; integers or bools that
// differ; compiled outputs for inputs the evaluator refuses, or a compiled
// model refusing inputs the evaluator runs. The compiler refusing a graph
// is not one (set ONNXC_FUZZ_VERBOSE=1 to see those refusals).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"
#include "RandomGraph.h"

#include "codegen/TargetSelection.h"
#include "driver/CompiledSession.h"
#include "driver/InputSpecialization.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"

#include <cassert>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

using namespace onnxc;
using onnxc::fuzz::RandomCase;

namespace {

constexpr double kRelativeTolerance = 1e-4;
constexpr double kAbsoluteTolerance = 1e-5;
constexpr double kSensitivityFactor = 4.0;
constexpr double kPerturbationStep = 1.0 / (1 << 23);
constexpr unsigned kPerturbationTrials = 4;

void note(const RandomCase &testCase, const std::string &what) {
  if (fuzz::verbose())
    fuzz::note(what + "\n" + testCase.irText);
}

std::unique_ptr<Graph> loadGraph(const std::string &text) {
  std::unique_ptr<Graph> graph = parseGraph(text, "fuzz.ir");
  verifyGraph(*graph);
  inferShapes(*graph);
  return graph;
}

float specialFloat(std::mt19937 &rng) {
  static const float values[] = {0.0f,
                                 -0.0f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 1e30f,
                                 -1e30f,
                                 1e-40f};
  return values[rng() % std::size(values)];
}

/// Whether every binding gives every input dim a value.
bool bindsEveryInputDim(const Graph &graph, const RandomCase &testCase) {
  for (const auto &binding : testCase.bindings)
    for (const Value *input : graph.inputs())
      for (size_t axis = 0; axis < input->shape().rank(); ++axis)
        if (!input->shape()[axis].evaluate(binding))
          return false;
  return true;
}

/// Inputs for one binding: floats are multiples of 1/64 in [-2, 2] (with
/// special values mixed in when asked), integers in [-8, 8], bools 0/1.
std::map<std::string, Tensor> makeInputs(const Graph &graph, const RandomCase &testCase,
                                         size_t run) {
  std::map<std::string, Tensor> inputs;
  std::mt19937 rng(testCase.dataSeed * 31u + unsigned(run));
  for (const Value *input : graph.inputs()) {
    std::vector<int64_t> dims;
    for (size_t axis = 0; axis < input->shape().rank(); ++axis) {
      std::optional<int64_t> d = input->shape()[axis].evaluate(testCase.bindings[run]);
      assert(d && "bindsEveryInputDim checked it");
      dims.push_back(*d);
    }
    Tensor tensor(input->dtype(), dims);
    for (int64_t i = 0; i < tensor.numElements(); ++i) {
      if (input->dtype() == DType::F32) {
        float v = testCase.specialValues && rng() % 16 == 0 ? specialFloat(rng)
                                                            : float(int(rng() % 257) - 128) / 64;
        tensor.data<float>()[i] = v;
      } else if (input->dtype() == DType::Bool) {
        tensor.setElementFromDouble(i, double(rng() & 1));
      } else {
        tensor.setElementFromDouble(i, double(int(rng() % 17) - 8));
      }
    }
    inputs.emplace(input->name(), tensor);
  }
  return inputs;
}

/// The inputs with every float scaled by 1 + e, e = k 2^-23 for a random k
/// in ±{1, ..., 8} (so |e| <= 2^-20). Independent sizes, not just signs:
/// x and -x scaled alike cancel exactly again, and a sum that cancels
/// (1e30 - 1e30 + 1.9) would look insensitive when it is not.
std::map<std::string, Tensor> perturbed(const std::map<std::string, Tensor> &inputs,
                                        unsigned seed) {
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> out;
  for (const auto &[name, tensor] : inputs) {
    if (tensor.dtype() != DType::F32) {
      out.emplace(name, tensor);
      continue;
    }
    Tensor copy = tensor.clone();
    for (int64_t i = 0; i < copy.numElements(); ++i)
      copy.data<float>()[i] *=
          float(1 + (rng() & 1 ? 1 : -1) * double(1 + rng() % 8) * kPerturbationStep);
    out.emplace(name, copy);
  }
  return out;
}

struct Reference {
  std::vector<Tensor> outputs;
  /// Per output, per element: how far the result moved under perturbation
  /// (empty for non-float outputs).
  std::vector<std::vector<double>> sensitivity;
  std::string error; // the evaluator's refusal, if it refused
};

Reference runReference(const Graph &graph, const std::map<std::string, Tensor> &inputs) {
  Reference ref;
  try {
    ref.outputs = evaluateGraph(graph, inputs);
  } catch (const Error &e) {
    ref.error = e.what();
    return ref;
  }
  ref.sensitivity.resize(ref.outputs.size());
  for (size_t o = 0; o < ref.outputs.size(); ++o)
    if (isFloat(ref.outputs[o].dtype()))
      ref.sensitivity[o].assign(size_t(ref.outputs[o].numElements()), 0.0);
  for (unsigned trial = 0; trial < kPerturbationTrials; ++trial) {
    std::vector<Tensor> moved;
    try {
      moved = evaluateGraph(graph, perturbed(inputs, 1000 + trial));
    } catch (const Error &) {
      continue;
    }
    for (size_t o = 0; o < ref.outputs.size(); ++o) {
      if (ref.sensitivity[o].empty() || moved[o].dims() != ref.outputs[o].dims())
        continue;
      for (int64_t i = 0; i < moved[o].numElements(); ++i) {
        double delta = std::fabs(moved[o].elementAsDouble(i) - ref.outputs[o].elementAsDouble(i));
        double &s = ref.sensitivity[o][size_t(i)];
        // NaN (inf - inf) marks an element whose value the perturbation can
        // change without bound: it is not compared.
        s = std::isnan(delta) || std::isnan(s) ? std::numeric_limits<double>::quiet_NaN()
                                               : std::max(s, delta);
      }
    }
  }
  return ref;
}

std::string describeInputs(const std::map<std::string, Tensor> &inputs) {
  std::ostringstream os;
  for (const auto &[name, tensor] : inputs) {
    os << name << " = " << tensor.typeString() << " {";
    for (int64_t i = 0; i < tensor.numElements() && i < 64; ++i)
      os << (i ? ", " : "") << tensor.elementAsDouble(i);
    os << (tensor.numElements() > 64 ? ", ...}\n" : "}\n");
  }
  return os.str();
}

/// The first disagreement between compiled and reference outputs, or "".
std::string compareOutputs(const Graph &graph, const Reference &ref,
                           const std::vector<Tensor> &compiled) {
  if (compiled.size() != ref.outputs.size())
    return "the compiled model returned " + std::to_string(compiled.size()) +
           " outputs, the graph has " + std::to_string(ref.outputs.size());
  for (size_t o = 0; o < compiled.size(); ++o) {
    const Tensor &a = compiled[o], &r = ref.outputs[o];
    std::string what = "output '" + graph.outputs()[o].name + "'";
    if (a.dtype() != r.dtype() || a.dims() != r.dims())
      return what + ": compiled " + a.typeString() + ", reference " + r.typeString();
    for (int64_t i = 0; i < r.numElements(); ++i) {
      std::string where = what + "[" + std::to_string(i) + "]";
      if (!isFloat(r.dtype())) {
        if (a.elementAsInt64(i) != r.elementAsInt64(i))
          return where + ": compiled " + std::to_string(a.elementAsInt64(i)) + ", reference " +
                 std::to_string(r.elementAsInt64(i));
        continue;
      }
      double x = a.elementAsDouble(i), y = r.elementAsDouble(i);
      double s = ref.sensitivity[o][size_t(i)];
      if (std::isnan(s) || std::isinf(s))
        continue;
      bool ok;
      if (std::isnan(y) || std::isnan(x))
        ok = std::isnan(y) && std::isnan(x);
      else if (std::isinf(y) || std::isinf(x))
        ok = x == y;
      else
        ok = std::fabs(x - y) <=
             kAbsoluteTolerance + kRelativeTolerance * std::fabs(y) + kSensitivityFactor * s;
      if (!ok) {
        std::ostringstream os;
        os.precision(9);
        os << where << ": compiled " << x << ", reference " << y << " (sensitivity " << s << ")";
        return os.str();
      }
    }
  }
  return "";
}

const TargetSelection &hostTarget() {
  static const TargetSelection target = TargetSelection::select({});
  return target;
}

/// A freshly optimized and compiled model for the inputs of one run.
struct Compiled {
  std::unique_ptr<Graph> graph;
  InputSpecificJit jit;
};

std::optional<Compiled> compile(const RandomCase &testCase,
                                const std::map<std::string, Tensor> &inputs) {
  Compiled compiled;
  try {
    compiled.graph = loadGraph(testCase.irText);
    std::ostringstream sink;
    PassManager pm(PassManagerOptions(), &sink);
    addOptimizationPipeline(pm, 3);
    pm.run(*compiled.graph);
    compiled.jit = compileForInputs(*compiled.graph, inputs, hostTarget());
  } catch (const Error &e) {
    note(testCase, std::string("compile refused: ") + e.what());
    return std::nullopt;
  }
  return compiled;
}

/// The compiled model's outputs, or its refusal of the inputs.
struct CompiledRun {
  std::vector<Tensor> outputs;
  std::string error;
};

CompiledRun runCompiled(const RandomCase &testCase, const Compiled &compiled,
                        const std::map<std::string, Tensor> &inputs) {
  std::vector<const Tensor *> ordered;
  for (const Value *input : compiled.graph->inputs())
    ordered.push_back(&inputs.at(input->name()));
  CompiledRun run;
  try {
    CompiledSession session(compiled.jit.model->descriptor(), testCase.threads);
    run.outputs = session.run(ordered);
  } catch (const Error &e) {
    run.error = e.what();
  }
  return run;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitMemory();
  hostTarget();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  RandomCase testCase;
  std::string caseError;
  if (!fuzz::parseCaseFile({reinterpret_cast<const char *>(data), size}, testCase, caseError)) {
    fuzz::ByteReader reader(data, size);
    testCase = fuzz::generateRandomCase(reader);
  } else if (!caseError.empty()) {
    // libFuzzer mutates case files too; a committed one must be right.
    if (fuzz::replaying())
      fuzz::finding(caseError);
    fuzz::note(caseError);
    return 0;
  } else if (testCase.threads < 1 || testCase.threads > 4) {
    return 0;
  }
  std::unique_ptr<Graph> reference;
  try {
    reference = loadGraph(testCase.irText);
    // The compiled path never runs a node whose result nobody uses; the
    // evaluator would, and could refuse it.
    PassManager dce;
    dce.addPass("dce");
    dce.run(*reference);
  } catch (const Error &e) {
    // The generator means to make valid graphs; one it got wrong says
    // nothing about the compiler.
    note(testCase, std::string("generated graph refused: ") + e.what());
    return 0;
  }

  if (!bindsEveryInputDim(*reference, testCase)) {
    // The generator binds every symbol it uses; a mutated case file may not.
    if (fuzz::replaying())
      fuzz::finding("a run of the case file leaves an input dim unbound");
    return 0;
  }

  std::optional<Compiled> compiled;
  for (size_t run = 0; run < testCase.bindings.size(); ++run) {
    std::map<std::string, Tensor> inputs = makeInputs(*reference, testCase, run);
    Reference ref = runReference(*reference, inputs);
    // One compiled model serves every binding, unless it was specialized
    // for the values of the first run's inputs.
    if (!compiled || !compiled->jit.specialized.empty())
      compiled = compile(testCase, inputs);
    if (!compiled)
      return 0;
    CompiledRun outputs = runCompiled(testCase, *compiled, inputs);
    std::string context = "--- case file (for regressions/jit-differential/)\n" +
                          fuzz::caseFileText(testCase) + "--- inputs of run " +
                          std::to_string(run) + "\n" + describeInputs(inputs);
    if (!ref.error.empty()) {
      if (outputs.error.empty())
        fuzz::finding("the compiled model returned outputs for inputs the evaluator refuses (" +
                          ref.error + ")",
                      context);
      continue;
    }
    // The compiler may refuse a graph it cannot lower, but a model it
    // compiled must run on inputs of the shapes it declares.
    if (!outputs.error.empty())
      fuzz::finding("the compiled model refuses inputs the evaluator runs: " + outputs.error,
                    context);
    std::string mismatch = compareOutputs(*reference, ref, outputs.outputs);
    if (!mismatch.empty())
      fuzz::finding("compiled and reference outputs differ: " + mismatch, context);
  }
  return 0;
}

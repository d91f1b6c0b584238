//===- tests/unit/LoweringTestSupport.cpp - Run graphs through codegen ------===//

#include "LoweringTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "codegen/lower/Lowering.h"
#include "driver/CompiledSession.h"
#include "ir/Verifier.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"
#include "ir/text/Printer.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <random>

namespace onnxc::lowertest {

namespace {

const TargetSelection &hostTarget() {
  static const TargetSelection target = TargetSelection::select({});
  return target;
}

const TargetSelection *scopedTarget = nullptr;

std::vector<const Tensor *> orderedInputs(const Graph &graph,
                                          const std::map<std::string, Tensor> &inputs) {
  std::vector<const Tensor *> ordered;
  for (const Value *input : graph.inputs()) {
    auto it = inputs.find(input->name());
    if (it == inputs.end())
      ADD_FAILURE() << "no value given for input '" << input->name() << "'";
    ordered.push_back(it == inputs.end() ? nullptr : &it->second);
  }
  return ordered;
}

} // namespace

ScopedTarget::ScopedTarget(const TargetRequest &request)
    : target_(TargetSelection::select(request)) {
  EXPECT_EQ(scopedTarget, nullptr) << "ScopedTarget does not nest";
  scopedTarget = &target_;
}

ScopedTarget::~ScopedTarget() { scopedTarget = nullptr; }

const TargetSelection &compileTarget() { return scopedTarget ? *scopedTarget : hostTarget(); }

std::unique_ptr<Graph> parseGraph(const std::string &text) {
  std::unique_ptr<Graph> graph = onnxc::parseGraph(text, "<test>");
  verifyGraph(*graph);
  inferShapes(*graph);
  return graph;
}

ModelPlan lowerOnly(const Graph &graph) {
  llvm::LLVMContext context;
  llvm::Module module("lowered", context);
  hostTarget().configureModule(module);
  return lowerGraph(graph, module);
}

namespace {

/// The JIT model of `graph` for the current target, compiled once for a run
/// of calls on the same graph: tests check one graph at several input shapes
/// (often alternating targets), and LLVM's compile is nearly all of their
/// time. The key is the graph's whole text (every constant in full) and the
/// target, so any change to either compiles afresh. The last few models are
/// kept, under a lock: tests may run from threads.
std::shared_ptr<const JitModel> compiledFor(const Graph &graph) {
  using Entry = std::pair<std::string, std::shared_ptr<const JitModel>>;
  constexpr size_t kept = 4;
  static std::mutex lock;
  static auto *recent = new std::deque<Entry>(); // outlives LLVM's statics
  PrintOptions everything;
  everything.printAllConstants = true;
  const TargetSelection &target = compileTarget();
  std::string key =
      target.cpu() + " " + target.features() + "\n" + printGraphToString(graph, everything);
  std::lock_guard<std::mutex> guard(lock);
  for (const Entry &entry : *recent)
    if (entry.first == key)
      return entry.second;
  if (recent->size() == kept)
    recent->pop_back();
  recent->emplace_front(std::move(key), compileModelJit(graph, target));
  return recent->front().second;
}

} // namespace

std::vector<Tensor> runCompiled(const Graph &graph, const std::map<std::string, Tensor> &inputs,
                                int threads) {
  std::shared_ptr<const JitModel> model = compiledFor(graph);
  CompiledSession session(model->descriptor(), threads);
  return session.run(orderedInputs(graph, inputs));
}

std::vector<Tensor> runReference(const Graph &graph, const std::map<std::string, Tensor> &inputs) {
  return evaluateGraph(graph, inputs);
}

void expectCompiledMatchesReference(const Graph &graph, const std::map<std::string, Tensor> &inputs,
                                    double rtol, double atol, int threads) {
  std::vector<Tensor> expected = runReference(graph, inputs);
  std::vector<Tensor> actual = runCompiled(graph, inputs, threads);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    const Tensor &e = expected[o], &a = actual[o];
    std::string what = "output " + graph.outputs()[o].name;
    ASSERT_EQ(dtypeName(a.dtype()), dtypeName(e.dtype())) << what;
    ASSERT_EQ(a.dims(), e.dims()) << what;
    int reported = 0;
    for (int64_t i = 0; i < e.numElements() && reported < 5; ++i) {
      if (isFloat(e.dtype())) {
        double x = a.elementAsDouble(i), r = e.elementAsDouble(i);
        bool ok = (std::isnan(r) && std::isnan(x)) || x == r ||
                  std::fabs(x - r) <= atol + rtol * std::fabs(r);
        if (!ok) {
          ADD_FAILURE() << what << "[" << i << "]: compiled " << x << ", reference " << r;
          ++reported;
        }
      } else if (a.elementAsInt64(i) != e.elementAsInt64(i)) {
        ADD_FAILURE() << what << "[" << i << "]: compiled " << a.elementAsInt64(i) << ", reference "
                      << e.elementAsInt64(i);
        ++reported;
      }
    }
  }
}

Tensor randomOf(DType dtype, std::vector<int64_t> dims, unsigned seed, double lo, double hi) {
  Tensor t(dtype, std::move(dims));
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (isFloat(dtype)) {
      t.setElementFromDouble(i, std::uniform_real_distribution<double>(lo, hi)(rng));
    } else if (dtype == DType::Bool) {
      t.setElementFromDouble(i, double(rng() & 1));
    } else {
      double low = std::ceil(lo), high = std::floor(hi);
      if (high <= low) {
        low = 0;
        high = 10;
      }
      t.setElementFromDouble(
          i, double(std::uniform_int_distribution<int64_t>(int64_t(low), int64_t(high) - 1)(rng)));
    }
  }
  return t;
}

} // namespace onnxc::lowertest

//===- passes/PassManager.cpp - Running a list of passes ------------------===//
#include "passes/PassManager.h"

#include "ir/Error.h"
#include "ir/Subgraph.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"
#include "passes/PassRegistry.h"

#include <algorithm>
#include <cassert>
#include <iostream>

namespace onnxc {

PassManager::PassManager(PassManagerOptions options, std::ostream *irStream)
    : options_(std::move(options)), irStream_(irStream ? irStream : &std::cout) {
  for (const std::string &name : options_.printIrAfter)
    if (!findPass(name))
      createPass(name); // throws, listing the known passes
}

PassManager::~PassManager() = default;

void PassManager::addPass(std::unique_ptr<Pass> pass) {
  Step step;
  step.passes.push_back(std::move(pass));
  steps_.push_back(std::move(step));
}

void PassManager::addPass(std::string_view name) { addPass(createPass(name)); }

void PassManager::addFixedPointGroup(std::vector<std::unique_ptr<Pass>> passes,
                                     unsigned maxRounds) {
  assert(maxRounds > 0 && "a group must run at least once");
  Step step;
  step.passes = std::move(passes);
  step.maxRounds = maxRounds;
  steps_.push_back(std::move(step));
}

int64_t PassManager::passCount() const {
  int64_t count = 0;
  for (const Step &step : steps_)
    count += int64_t(step.passes.size());
  return count;
}

bool PassManager::run(Graph &graph) {
  bool changed = false;
  // A fixed-point group's later rounds are steps the total did not foresee:
  // it grows by them, so that done never passes total.
  int64_t done = 0, total = passCount();
  for (Step &step : steps_) {
    for (unsigned round = 0; round < step.maxRounds; ++round) {
      if (round > 0)
        total += int64_t(step.passes.size());
      bool roundChanged = false;
      for (auto &pass : step.passes) {
        reportProgress(options_.progress,
                       {CompileStage::Passes, std::string(pass->name()), done++, total});
        roundChanged |= runPass(*pass, graph);
      }
      changed |= roundChanged;
      if (!roundChanged)
        break;
    }
  }
  return changed;
}

namespace {

bool runOnBranches(Pass &pass, Graph &graph, PassContext &context);

/// Whether `graph` or one of its subgraphs has a Loop or Scan.
bool hasLoop(const Graph &graph) {
  for (const Node *node : graph.nodeList()) {
    if (node->kind() == OpKind::Loop || node->kind() == OpKind::Scan)
      return true;
    for (const auto &[name, subgraph] : node->subgraphs())
      if (hasLoop(*subgraph))
        return true;
  }
  return false;
}

/// Runs `pass` on the body of every Loop and Scan in `graph`, nested ones
/// included, so that a compiled loop runs a body folded and fused like the
/// graph around it. The body's inputs keep the types the loop's shape rule
/// gave them (the carried values' fixed point); a body that does not infer
/// again is left as it is.
bool runOnBodies(Pass &pass, Graph &graph, PassContext &context) {
  bool changed = false;
  for (Node *node : graph.nodeList()) {
    if (node->kind() != OpKind::Loop && node->kind() != OpKind::Scan)
      continue;
    Graph &body = *node->subgraph("body");
    try {
      inferShapes(body);
      changed |= pass.run(body, context);
      changed |= runOnBranches(pass, body, context);
    } catch (const SizeError &) {
      throw;
    } catch (const Error &) {
      // Left as it is: the reference evaluator reports a body that cannot
      // run, naming its node.
    }
  }
  return changed;
}

/// Runs `pass` on the branches of every If in `graph` whose condition is not
/// a constant (those are inlined instead), nested Ifs included, so that a
/// run-time If reaches codegen with its branches folded and fused like the
/// graph around it. A branch is first re-typed from the If's operands and
/// inferred; one that does not infer (the ill-typed branch of an exporter's
/// function expansion, or a branch written for other input shapes, which
/// cannot run) is left as it is. Loop and Scan bodies: runOnBodies.
bool runOnBranches(Pass &pass, Graph &graph, PassContext &context) {
  bool changed = runOnBodies(pass, graph, context);
  for (Node *node : graph.nodesOfKind(OpKind::If)) {
    if (node->operand(0)->isConstant())
      continue;
    for (const char *region : {"then_branch", "else_branch"}) {
      Graph &branch = *node->subgraph(region);
      try {
        for (size_t i = 0; i < branch.inputs().size(); ++i)
          branch.inputs()[i]->setType(node->operand(i + 1)->type());
        inferShapes(branch);
      } catch (const SizeError &) {
        throw;
      } catch (const Error &) {
        continue;
      }
      // A branch whose types turn out inconsistent once folding makes them
      // precise cannot run at these shapes either: what the pass changed
      // up to there keeps its meaning, and the branch stays as it is.
      try {
        changed |= pass.run(branch, context);
        changed |= runOnBranches(pass, branch, context);
      } catch (const SizeError &) {
        throw;
      } catch (const Error &) {
        // Left as it is; the If's shape rule types the results from the
        // other branch.
      }
    }
  }
  return changed;
}

} // namespace

bool PassManager::runPass(Pass &pass, Graph &graph) {
  PassContext &context = contextFor(pass);
  bool changed;
  try {
    changed = pass.run(graph, context);
    bool subgraphsChanged = runOnBranches(pass, graph, context);
    // The If results take their branches' new types; a loop body inferred
    // on its own above has lost what its loop's rule knows of the captures'
    // contents, which inferring the graph gives back.
    if (subgraphsChanged || hasLoop(graph))
      inferShapes(graph);
    changed |= subgraphsChanged;
  } catch (const Error &e) {
    fail("pass '", pass.name(), "': ", e.what());
  }
  if (options_.verifyEach) {
    try {
      verifyGraph(graph);
      inferShapes(graph);
    } catch (const Error &e) {
      fail("verification after pass '", pass.name(), "' failed: ", e.what());
    }
  }
  if (shouldPrintAfter(pass.name())) {
    *irStream_ << "// ----- IR after " << pass.name() << " -----\n";
    printGraph(graph, *irStream_, options_.printOptions);
    irStream_->flush();
  }
  return changed;
}

PassContext &PassManager::contextFor(const Pass &pass) {
  for (PassContext &context : contexts_)
    if (context.passName() == pass.name())
      return context;
  contexts_.emplace_back(std::string(pass.name()), options_.explain);
  return contexts_.back();
}

bool PassManager::shouldPrintAfter(std::string_view passName) const {
  return options_.printIrAfterAll ||
         std::find(options_.printIrAfter.begin(), options_.printIrAfter.end(), passName) !=
             options_.printIrAfter.end();
}

std::vector<std::string> PassManager::passNames() const {
  std::vector<std::string> names;
  for (const Step &step : steps_)
    for (const auto &pass : step.passes)
      if (std::find(names.begin(), names.end(), pass->name()) == names.end())
        names.emplace_back(pass->name());
  return names;
}

const PassContext *PassManager::context(std::string_view passName) const {
  for (const PassContext &context : contexts_)
    if (context.passName() == passName)
      return &context;
  return nullptr;
}

void PassManager::printStatistics(std::ostream &os) const {
  for (const std::string &name : passNames())
    if (const PassContext *c = context(name))
      os << c->statisticsLine() << "\n";
}

void PassManager::printExplanations(std::ostream &os) const {
  for (const std::string &name : passNames())
    if (const PassContext *c = context(name))
      for (const std::string &line : c->explanations())
        os << line << "\n";
}

} // namespace onnxc

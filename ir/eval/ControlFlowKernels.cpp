//===- ir/eval/ControlFlowKernels.cpp - If, Loop and Scan -----------------===//
//
// Each runs its subgraph with the reference evaluator itself (evaluateGraph),
// binding subgraph input i to operand i (ir/Subgraph.h), so the captured
// outer values arrive as ordinary inputs. Loop and Scan run the body once
// per iteration and stack the per-iteration scan outputs.
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/MemoryBudget.h"
#include "ir/Subgraph.h"
#include "ir/eval/Evaluator.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <map>

namespace onnxc {
namespace {

/// The one element of a condition tensor, as ONNX reads it.
bool conditionOf(const Node &node, const Tensor &cond, const char *what) {
  if (cond.numElements() != 1)
    fail(node.describe(), ": the ", what, " must have one element, got ", cond.typeString());
  return cond.elementAsDouble(0) != 0;
}

/// Runs `body` with input i bound to inputs[i] (all present).
std::vector<Tensor> runBody(const Node &node, const Graph &body,
                            const std::vector<const Tensor *> &inputs) {
  std::map<std::string, Tensor> bound;
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    assert(inputs[i] && "every body input is bound");
    bound.emplace(body.inputs()[i]->name(), *inputs[i]);
  }
  try {
    return evaluateGraph(body, bound);
  } catch (const SizeError &) {
    throw;
  } catch (const Error &e) {
    fail(node.describe(), ": ", body.name(), ": ", e.what());
  }
}

void ifKernel(const Node &node, const std::vector<const Tensor *> &operands,
              std::vector<Tensor> &results) {
  bool taken = conditionOf(node, *operands[0], "condition");
  const Graph *branch = node.subgraph(taken ? "then_branch" : "else_branch");
  std::vector<const Tensor *> inputs(operands.begin() + 1, operands.end());
  std::vector<Tensor> outputs = runBody(node, *branch, inputs);
  for (size_t i = 0; i < results.size(); ++i)
    results[i] = std::move(outputs[i]);
}

// --- slicing and stacking along an axis --------------------------------------

struct AxisSplit {
  int64_t outer = 1, length = 1, innerBytes = 1;
};

AxisSplit splitAt(const std::vector<int64_t> &dims, size_t axis, DType dtype) {
  AxisSplit split;
  for (size_t i = 0; i < axis; ++i)
    split.outer *= dims[i];
  split.length = dims[axis];
  split.innerBytes = int64_t(dtypeSize(dtype));
  for (size_t i = axis + 1; i < dims.size(); ++i)
    split.innerBytes *= dims[i];
  return split;
}

/// `tensor` at `index` of `axis`, that axis dropped.
Tensor sliceAt(const Tensor &tensor, size_t axis, int64_t index) {
  std::vector<int64_t> dims = tensor.dims();
  AxisSplit split = splitAt(dims, axis, tensor.dtype());
  dims.erase(dims.begin() + std::ptrdiff_t(axis));
  Tensor out(tensor.dtype(), dims);
  const auto *from = static_cast<const uint8_t *>(tensor.rawData());
  auto *to = static_cast<uint8_t *>(out.rawData());
  for (int64_t o = 0; o < split.outer; ++o)
    std::memcpy(to + o * split.innerBytes, from + (o * split.length + index) * split.innerBytes,
                size_t(split.innerBytes));
  return out;
}

/// The slices stacked along a new `axis` (every slice of one type).
Tensor stackAt(const Node &node, const std::vector<Tensor> &slices, size_t axis) {
  const Tensor &first = slices.front();
  for (const Tensor &slice : slices)
    if (slice.dtype() != first.dtype() || slice.dims() != first.dims())
      fail(node.describe(), ": scan output iterations differ in type: ", first.typeString(),
           " and ", slice.typeString());
  std::vector<int64_t> dims = first.dims();
  if (axis > dims.size())
    fail(node.describe(), ": scan output axis ", axis, " is out of range for rank ",
         dims.size() + 1);
  dims.insert(dims.begin() + std::ptrdiff_t(axis), int64_t(slices.size()));
  Tensor out(first.dtype(), dims);
  AxisSplit split = splitAt(dims, axis, first.dtype());
  auto *to = static_cast<uint8_t *>(out.rawData());
  for (size_t s = 0; s < slices.size(); ++s) {
    const auto *from = static_cast<const uint8_t *>(slices[s].rawData());
    for (int64_t o = 0; o < split.outer; ++o)
      std::memcpy(to + (o * split.length + int64_t(s)) * split.innerBytes,
                  from + o * split.innerBytes, size_t(split.innerBytes));
  }
  return out;
}

/// A scan output of no iterations: 0 along its stacking `axis` when the
/// inferred type knows the rest of the shape.
Tensor emptyScanOutput(const Node &node, size_t result, size_t axis) {
  const Value &value = *node.result(result);
  std::vector<int64_t> dims;
  bool known = value.shape().isRanked() && value.dtype() != DType::Unknown;
  for (size_t i = 0; known && i < value.shape().rank(); ++i) {
    std::optional<int64_t> d = value.shape()[i].constant();
    known = d.has_value() || i == axis;
    dims.push_back(i == axis ? 0 : d.value_or(0));
  }
  if (!known)
    fail(node.describe(), ": the loop ran no iteration and the shape of scan output '%",
         value.name(), "' is not known (", value.type().str(), ")");
  return Tensor(value.dtype(), dims);
}

// --- Loop ------------------------------------------------------------------------

/// When nothing but the trip count ends the loop (the body passes its
/// condition through or returns a true constant), its scan outputs will
/// hold `maxTrips` rows like the first: refuses at once a total above the
/// memory limit, as the compiled code does, instead of iterating until it
/// is reached (M = 2^62 rows of one byte would take years).
void checkScanOutputBudget(const Node &node, const Graph &body, int64_t maxTrips,
                           const std::vector<Tensor> &firstOutputs, size_t firstScan) {
  const Value *condition = body.outputs()[0].value;
  bool staysTrue = condition == body.inputs()[1] ||
                   (condition->isConstant() && condition->constantValue().hasData() &&
                    condition->constantValue().numElements() == 1 &&
                    condition->constantValue().elementAsDouble(0) != 0);
  if (!staysTrue)
    return;
  int64_t rowBytes = 0;
  for (size_t i = firstScan; i < firstOutputs.size(); ++i)
    if (__builtin_add_overflow(rowBytes, int64_t(firstOutputs[i].byteSize()), &rowBytes))
      rowBytes = INT64_MAX;
  int64_t total = 0;
  if (__builtin_mul_overflow(rowBytes, maxTrips, &total))
    total = INT64_MAX;
  withSizeContext(node.describe(), [&] { checkTensorBytesAvailable(total); });
}

void loopKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  const Graph &body = *node.subgraph("body");
  size_t carried = loopCarriedCount(node), captures = numCaptures(node);
  size_t scans = node.numResults() - carried;
  const Tensor *tripCount = operands.size() > 0 ? operands[0] : nullptr;
  const Tensor *condition = operands.size() > 1 ? operands[1] : nullptr;
  std::optional<int64_t> maxTrips;
  if (tripCount) {
    if (tripCount->numElements() != 1)
      fail(node.describe(), ": the trip count must have one element, got ",
           tripCount->typeString());
    maxTrips = tripCount->elementAsInt64(0);
  }
  bool keepGoing = condition ? conditionOf(node, *condition, "condition") : true;

  std::vector<Tensor> state;
  for (size_t i = 0; i < carried; ++i)
    state.push_back(*operands[2 + i]);
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t iteration = 0; keepGoing && (!maxTrips || iteration < *maxTrips); ++iteration) {
    Tensor iterationTensor = Tensor::scalar<int64_t>(iteration);
    Tensor conditionTensor = Tensor::boolScalar(true);
    std::vector<const Tensor *> inputs{&iterationTensor, &conditionTensor};
    for (const Tensor &value : state)
      inputs.push_back(&value);
    for (size_t c = 0; c < captures; ++c)
      inputs.push_back(operands[2 + carried + c]);
    std::vector<Tensor> outputs = runBody(node, body, inputs);
    if (iteration == 0 && scans > 0 && maxTrips)
      checkScanOutputBudget(node, body, *maxTrips, outputs, 1 + carried);
    keepGoing = conditionOf(node, outputs[0], "body's condition output");
    for (size_t i = 0; i < carried; ++i)
      state[i] = std::move(outputs[1 + i]);
    for (size_t s = 0; s < scans; ++s)
      scanned[s].push_back(std::move(outputs[1 + carried + s]));
  }
  for (size_t i = 0; i < carried; ++i)
    results[i] = std::move(state[i]);
  for (size_t s = 0; s < scans; ++s)
    results[carried + s] =
        scanned[s].empty() ? emptyScanOutput(node, carried + s, 0) : stackAt(node, scanned[s], 0);
}

// --- Scan ------------------------------------------------------------------------

/// Attribute `name` entry i, normalized against `rank` (ONNX default 0).
int64_t axisEntry(const Node &node, const char *name, size_t i, int64_t rank) {
  std::vector<int64_t> axes = node.getInts(name);
  if (axes.empty())
    return 0;
  if (i >= axes.size())
    fail(node.describe(), ": attribute '", name, "' has ", axes.size(), " entries, expected more");
  int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
  if (axis < 0 || axis >= rank)
    fail(node.describe(), ": ", name, " entry ", axes[i], " is out of range for rank ", rank);
  return axis;
}

bool reversed(const Node &node, const char *name, size_t i) {
  std::vector<int64_t> directions = node.getInts(name);
  return i < directions.size() && directions[i] != 0;
}

void scanKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  const Graph &body = *node.subgraph("body");
  size_t states = scanStateCount(node), inputs = scanInputCount(node);
  size_t captures = numCaptures(node), scans = node.numResults() - states;
  int64_t length = -1;
  std::vector<int64_t> inputAxes;
  for (size_t j = 0; j < inputs; ++j) {
    const Tensor &x = *operands[states + j];
    int64_t axis = axisEntry(node, "scan_input_axes", j, int64_t(x.rank()));
    inputAxes.push_back(axis);
    if (length >= 0 && x.dims()[size_t(axis)] != length)
      fail(node.describe(), ": scan inputs differ in length: ", length, " and ",
           x.dims()[size_t(axis)]);
    length = x.dims()[size_t(axis)];
  }
  std::vector<Tensor> state;
  for (size_t i = 0; i < states; ++i)
    state.push_back(*operands[i]);
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> slices;
    for (size_t j = 0; j < inputs; ++j) {
      int64_t index = reversed(node, "scan_input_directions", j) ? length - 1 - t : t;
      slices.push_back(sliceAt(*operands[states + j], size_t(inputAxes[j]), index));
    }
    std::vector<const Tensor *> bodyInputs;
    for (const Tensor &value : state)
      bodyInputs.push_back(&value);
    for (const Tensor &slice : slices)
      bodyInputs.push_back(&slice);
    for (size_t c = 0; c < captures; ++c)
      bodyInputs.push_back(operands[states + inputs + c]);
    std::vector<Tensor> outputs = runBody(node, body, bodyInputs);
    for (size_t i = 0; i < states; ++i)
      state[i] = std::move(outputs[i]);
    for (size_t s = 0; s < scans; ++s)
      scanned[s].push_back(std::move(outputs[states + s]));
  }
  for (size_t i = 0; i < states; ++i)
    results[i] = std::move(state[i]);
  for (size_t s = 0; s < scans; ++s) {
    const Value &result = *node.result(states + s);
    if (scanned[s].empty() && result.shape().isRanked()) {
      int64_t axis = axisEntry(node, "scan_output_axes", s, int64_t(result.shape().rank()));
      results[states + s] = emptyScanOutput(node, states + s, size_t(axis));
      continue;
    }
    if (scanned[s].empty())
      fail(node.describe(), ": the scan ran no iteration and the rank of scan output '%",
           result.name(), "' is not known");
    if (reversed(node, "scan_output_directions", s))
      std::reverse(scanned[s].begin(), scanned[s].end());
    int64_t rank = int64_t(scanned[s].front().rank()) + 1;
    int64_t axis = axisEntry(node, "scan_output_axes", s, rank);
    results[states + s] = stackAt(node, scanned[s], size_t(axis));
  }
}

} // namespace

void registerControlFlowKernels(KernelTable &table) {
  table.add(OpKind::If, ifKernel);
  table.add(OpKind::Loop, loopKernel);
  table.add(OpKind::Scan, scanKernel);
}

} // namespace onnxc

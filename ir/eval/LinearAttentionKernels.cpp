//===- ir/eval/LinearAttentionKernels.cpp - LinearAttention (opset 27) ------===//
//
// LinearAttention computed as ONNX's reference states it: for each batch
// row b and KV head j, a state S [dk, dv] in f32 (the past, or zeros), and
// for t = 0, 1, ... in order
//
//   gated rules:  S = exp(g_t) * S          (g per head, or per row d of S)
//   delta rules:  u = beta_t * (v_t - S^T k_t)    else u = v_t
//                 S = S + k_t u^T
//   o_t[h] = scale * q_t[h]^T S   for the query heads h of KV head j
//                                 (h / (Hq / Hkv) == j)
//
// S is rounded to f32 after every update, as the spec's state is f32; the
// two dot products over dk (S^T k and q^T S) are summed in double in order
// d = 0, 1, ... and rounded once. The output is rounded to the query's type,
// the present state to the past's (the query's without a past).
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/LinearAttentionAttributes.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <cmath>

namespace onnxc {
namespace {

std::vector<float> readFloats(const Node &node, const Tensor &t, const char *what) {
  if (!t.hasData())
    fail(node.describe(), ": linear attention ", what, " has no data (elided constant)");
  if (!isLinearAttentionType(t.dtype()))
    fail(node.describe(), ": linear attention ", what,
         " must be float32, float16 or bfloat16, got ", t.typeString());
  std::vector<float> out(size_t(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    out[size_t(i)] = float(t.elementAsDouble(i));
  return out;
}

/// The dims of one LinearAttention call, checked against every operand.
struct LinearDims {
  int64_t batch = 0, steps = 0, keySize = 0, valueSize = 0;
  int64_t decayStride = 0; // decay elements per (b, t): Hkv (per head) or Hkv*dk
  int64_t betaStride = 0;  // beta elements per (b, t): Hkv or 1
};

void requireRank3(const Node &node, const Tensor &t, const char *what) {
  if (t.rank() != 3)
    fail(node.describe(), ": linear attention ", what, " must be 3-D (B, T, H*D), got ",
         t.typeString());
}

LinearDims linearDims(const Node &node, const LinearAttentionAttributes &a,
                      const std::vector<const Tensor *> &operands) {
  const Tensor &q = *operands[kLinearQuery], &k = *operands[kLinearKey],
               &v = *operands[kLinearValue];
  requireRank3(node, q, "query");
  requireRank3(node, k, "key");
  requireRank3(node, v, "value");
  LinearDims d;
  d.batch = q.dims()[0], d.steps = q.dims()[1];
  if (q.dims()[2] % a.qHeads != 0 || v.dims()[2] % a.kvHeads != 0)
    fail(node.describe(), ": linear attention hidden sizes ", q.typeString(), " and ",
         v.typeString(), " are not divisible by the head counts");
  d.keySize = q.dims()[2] / a.qHeads, d.valueSize = v.dims()[2] / a.kvHeads;
  bool agree = k.dims()[2] == a.kvHeads * d.keySize;
  for (const Tensor *t : {&k, &v})
    agree = agree && t->dims()[0] == d.batch && t->dims()[1] == d.steps;
  if (!agree)
    fail(node.describe(), ": linear attention shapes do not agree: query ", q.typeString(),
         ", key ", k.typeString(), ", value ", v.typeString());
  auto perStep = [&](size_t index, const char *what, int64_t first, int64_t second) {
    const Tensor *t = operands.size() > index ? operands[index] : nullptr;
    if (!t)
      return int64_t(0);
    requireRank3(node, *t, what);
    int64_t last = t->dims()[2];
    if (t->dims()[0] != d.batch || t->dims()[1] != d.steps || (last != first && last != second))
      fail(node.describe(), ": linear attention ", what, " of shape ", t->typeString(),
           " must be [", d.batch, ", ", d.steps, ", ", first, " or ", second, "]");
    return last;
  };
  d.decayStride = perStep(kLinearDecay, "decay", a.kvHeads, a.kvHeads * d.keySize);
  d.betaStride = perStep(kLinearBeta, "beta", a.kvHeads, 1);
  if (const Tensor *past =
          operands.size() > kLinearPastState ? operands[kLinearPastState] : nullptr;
      past && past->dims() != std::vector<int64_t>{d.batch, a.kvHeads, d.keySize, d.valueSize})
    fail(node.describe(), ": linear attention past_state of shape ", past->typeString(),
         " must be [", d.batch, ", ", a.kvHeads, ", ", d.keySize, ", ", d.valueSize, "]");
  return d;
}

/// The input rows of one (b, t), read as pointers into the operands.
struct StepRows {
  const float *q, *k, *v, *g, *beta;
};

/// One step of the recurrence for KV head `j`; writes the group's outputs.
void step(const LinearAttentionAttributes &a, const LinearDims &d, int64_t j, const StepRows &row,
          float scale, float *state, std::vector<float> &update, float *out) {
  const int64_t dk = d.keySize, dv = d.valueSize;
  const float *k = row.k + j * dk, *v = row.v + j * dv;
  if (a.gated) {
    bool perKey = d.decayStride != a.kvHeads;
    for (int64_t r = 0; r < dk; ++r) {
      float factor = float(std::exp(double(row.g[perKey ? j * dk + r : j])));
      for (int64_t m = 0; m < dv; ++m)
        state[r * dv + m] *= factor;
    }
  }
  for (int64_t m = 0; m < dv; ++m) {
    if (!a.delta) {
      update[size_t(m)] = v[m];
      continue;
    }
    double retrieved = 0;
    for (int64_t r = 0; r < dk; ++r)
      retrieved += double(state[r * dv + m]) * k[r];
    float rate = row.beta[d.betaStride == 1 ? 0 : j];
    update[size_t(m)] = rate * (v[m] - float(retrieved));
  }
  for (int64_t r = 0; r < dk; ++r)
    for (int64_t m = 0; m < dv; ++m)
      state[r * dv + m] += k[r] * update[size_t(m)];
  for (int64_t h = j * a.groupSize(); h < (j + 1) * a.groupSize(); ++h) {
    const float *q = row.q + h * dk;
    for (int64_t m = 0; m < dv; ++m) {
      double sum = 0;
      for (int64_t r = 0; r < dk; ++r)
        sum += double(q[r]) * state[r * dv + m];
      out[h * dv + m] = scale * float(sum);
    }
  }
}

void linearAttentionKernel(const Node &node, const std::vector<const Tensor *> &operands,
                           std::vector<Tensor> &results) {
  LinearAttentionAttributes a = linearAttentionAttributes(node);
  for (size_t i = 0; i < 3; ++i)
    requireOperand(node, operands, i);
  LinearDims d = linearDims(node, a, operands);
  auto read = [&](size_t index, const char *what) {
    const Tensor *t = operands.size() > index ? operands[index] : nullptr;
    return t ? readFloats(node, *t, what) : std::vector<float>();
  };
  std::vector<float> q = read(kLinearQuery, "query"), k = read(kLinearKey, "key"),
                     v = read(kLinearValue, "value"), g = read(kLinearDecay, "decay"),
                     beta = read(kLinearBeta, "beta"), state = read(kLinearPastState, "past_state");
  const int64_t dk = d.keySize, dv = d.valueSize, qHeads = a.qHeads, kvHeads = a.kvHeads;
  const int64_t stateSize = dk * dv;
  if (state.empty())
    state.assign(size_t(d.batch * kvHeads * stateSize), 0.0f);
  std::vector<float> out(size_t(d.batch * d.steps * qHeads * dv));
  std::vector<float> update(static_cast<size_t>(dv));
  const float scale = a.scaleFor(dk);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t j = 0; j < kvHeads; ++j)
      for (int64_t t = 0; t < d.steps; ++t) {
        int64_t bt = b * d.steps + t;
        StepRows row{q.data() + bt * qHeads * dk, k.data() + bt * kvHeads * dk,
                     v.data() + bt * kvHeads * dv, g.data() + bt * d.decayStride,
                     beta.data() + bt * d.betaStride};
        step(a, d, j, row, scale, state.data() + (b * kvHeads + j) * stateSize, update,
             out.data() + bt * qHeads * dv);
      }
  DType outType = operands[kLinearQuery]->dtype();
  const Tensor *past = operands.size() > kLinearPastState ? operands[kLinearPastState] : nullptr;
  Tensor output(outType, {d.batch, d.steps, qHeads * dv});
  for (size_t i = 0; i < out.size(); ++i)
    output.setElementFromDouble(int64_t(i), out[i]);
  results[0] = std::move(output);
  if (results.size() > 1) {
    Tensor present(past ? past->dtype() : outType, {d.batch, kvHeads, dk, dv});
    for (size_t i = 0; i < state.size(); ++i)
      present.setElementFromDouble(int64_t(i), state[i]);
    results[1] = std::move(present);
  }
}

} // namespace

void registerLinearAttentionKernels(KernelTable &table) {
  table.add(OpKind::LinearAttention, linearAttentionKernel);
}

} // namespace onnxc

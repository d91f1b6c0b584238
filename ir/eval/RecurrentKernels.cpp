//===- ir/eval/RecurrentKernels.cpp - LSTM, GRU and RNN reference kernels -===//
//
// The ONNX recurrent ops (opset 14 form: with `layout`), one batch row at a
// time, in double. Each direction runs over its own sequence length: steps
// past a row's length produce zeros in Y, and Y_h / Y_c hold the state after
// the row's last valid step (for the reverse direction, after step 0).
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"
#include "ir/OpAttributes.h"

#include <algorithm>
#include <cmath>

namespace onnxc {
namespace {

enum class CellKind { LSTM, GRU, RNN };

int gateCount(CellKind kind) { return kind == CellKind::LSTM ? 4 : kind == CellKind::GRU ? 3 : 1; }
int activationCount(CellKind kind) {
  return kind == CellKind::LSTM ? 3 : kind == CellKind::GRU ? 2 : 1;
}

// --- activations -------------------------------------------------------------

double activate(const RecurrentActivation &activation, double x) {
  const double alpha = activation.alpha, beta = activation.beta;
  switch (activation.kind) {
  case RecurrentActivationKind::Relu:
    return std::max(x, 0.0);
  case RecurrentActivationKind::Tanh:
    return std::tanh(x);
  case RecurrentActivationKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case RecurrentActivationKind::Affine:
    return alpha * x + beta;
  case RecurrentActivationKind::LeakyRelu:
    return x >= 0 ? x : alpha * x;
  case RecurrentActivationKind::ThresholdedRelu:
    return x > alpha ? x : 0.0;
  case RecurrentActivationKind::ScaledTanh:
    return alpha * std::tanh(beta * x);
  case RecurrentActivationKind::HardSigmoid:
    return std::clamp(alpha * x + beta, 0.0, 1.0);
  case RecurrentActivationKind::Elu:
    return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
  case RecurrentActivationKind::Softsign:
    return x / (1.0 + std::abs(x));
  case RecurrentActivationKind::Softplus:
    return std::log1p(std::exp(x));
  }
  return x;
}

/// The activations of every direction, `activationCount(kind)` per direction.
std::vector<RecurrentActivation> readActivations(const Node &node, CellKind kind, int64_t dirs) {
  std::vector<std::string> defaults = {"Tanh"};
  if (kind == CellKind::LSTM)
    defaults = {"Sigmoid", "Tanh", "Tanh"};
  else if (kind == CellKind::GRU)
    defaults = {"Sigmoid", "Tanh"};
  return recurrentActivations(node, size_t(activationCount(kind)), dirs, defaults);
}

// --- problem setup -----------------------------------------------------------

/// Everything a run needs, as doubles, with layout-aware indexing.
struct Recurrence {
  CellKind kind;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batchMajor = false; // layout = 1
  bool reverseOnly = false;
  double clip = 0; // 0: no clipping
  bool inputForget = false, linearBeforeReset = false;
  std::vector<RecurrentActivation> activations;
  std::vector<double> x, w, r, b, h0, c0, p;
  std::vector<int64_t> lengths;

  int64_t xIndex(int64_t t, int64_t n, int64_t k) const {
    return (batchMajor ? n * seq + t : t * batch + n) * input + k;
  }
  int64_t stateIndex(int64_t d, int64_t n, int64_t j) const {
    return (batchMajor ? n * dirs + d : d * batch + n) * hidden + j;
  }
  int64_t yIndex(int64_t t, int64_t d, int64_t n, int64_t j) const {
    return (batchMajor ? (n * seq + t) * dirs + d : (t * dirs + d) * batch + n) * hidden + j;
  }
};

std::vector<double> loadOptional(const Node &node, const Tensor *t, const char *what,
                                 const std::vector<int64_t> &dims) {
  if (!t) {
    int64_t count = 1;
    for (int64_t d : dims)
      count *= d;
    return std::vector<double>(size_t(count), 0.0);
  }
  if (!t->hasData() || t->dims() != dims) {
    std::string expected;
    for (size_t i = 0; i < dims.size(); ++i)
      expected += (i ? ", " : "") + std::to_string(dims[i]);
    fail(node.describe(), ": operand ", what, " has shape ", t->typeString(), ", expected [",
         expected, "]");
  }
  std::vector<double> out(size_t(t->numElements()));
  for (int64_t i = 0; i < t->numElements(); ++i)
    out[size_t(i)] = t->elementAsDouble(i);
  return out;
}

const Tensor *operandAt(const std::vector<const Tensor *> &operands, size_t i) {
  return i < operands.size() ? operands[i] : nullptr;
}

std::vector<int64_t> readLengths(const Node &node, const Tensor *lens, const Recurrence &rec) {
  std::vector<int64_t> lengths(size_t(rec.batch), rec.seq);
  if (!lens)
    return lengths;
  if (!lens->hasData() || !isInteger(lens->dtype()) || lens->rank() != 1 ||
      lens->dims()[0] != rec.batch)
    fail(node.describe(), ": sequence_lens must be an integer [", rec.batch, "], got ",
         lens->typeString());
  for (int64_t n = 0; n < rec.batch; ++n) {
    lengths[size_t(n)] = lens->elementAsInt64(n);
    if (lengths[size_t(n)] < 0 || lengths[size_t(n)] > rec.seq)
      fail(node.describe(), ": sequence length ", lengths[size_t(n)], " is outside [0, ", rec.seq,
           "]");
  }
  return lengths;
}

Recurrence readRecurrence(const Node &node, CellKind kind,
                          const std::vector<const Tensor *> &operands) {
  const Tensor *x = operandAt(operands, 0), *w = operandAt(operands, 1),
               *r = operandAt(operands, 2);
  if (!x || !w || !r || !x->hasData() || !w->hasData() || !r->hasData())
    fail(node.describe(), ": operands X, W and R are required and must have data");
  if (!isFloat(x->dtype()) || x->rank() != 3 || w->rank() != 3 || r->rank() != 3)
    fail(node.describe(), ": X, W, R must be 3-D floating tensors, got ", x->typeString(), ", ",
         w->typeString(), ", ", r->typeString());
  Recurrence rec;
  rec.kind = kind;
  rec.batchMajor = node.getInt("layout", 0) != 0;
  const std::vector<int64_t> &xd = x->dims();
  rec.seq = rec.batchMajor ? xd[1] : xd[0];
  rec.batch = rec.batchMajor ? xd[0] : xd[1];
  rec.input = xd[2];
  std::string direction = node.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    fail(node.describe(), ": unknown direction '", direction, "'");
  rec.dirs = direction == "bidirectional" ? 2 : 1;
  rec.reverseOnly = direction == "reverse";
  int64_t gates = gateCount(kind);
  rec.hidden = node.getInt("hidden_size", r->dims()[2]);
  if (rec.hidden <= 0 ||
      w->dims() != std::vector<int64_t>{rec.dirs, gates * rec.hidden, rec.input} ||
      r->dims() != std::vector<int64_t>{rec.dirs, gates * rec.hidden, rec.hidden})
    fail(node.describe(), ": W ", w->typeString(), " and R ", r->typeString(), " do not fit ",
         rec.dirs, " direction(s), hidden size ", rec.hidden, " and input ", x->typeString());
  rec.x = loadOptional(node, x, "X", x->dims());
  rec.w = loadOptional(node, w, "W", w->dims());
  rec.r = loadOptional(node, r, "R", r->dims());
  rec.b = loadOptional(node, operandAt(operands, 3), "B", {rec.dirs, 2 * gates * rec.hidden});
  rec.lengths = readLengths(node, operandAt(operands, 4), rec);
  std::vector<int64_t> stateDims = rec.batchMajor
                                       ? std::vector<int64_t>{rec.batch, rec.dirs, rec.hidden}
                                       : std::vector<int64_t>{rec.dirs, rec.batch, rec.hidden};
  rec.h0 = loadOptional(node, operandAt(operands, 5), "initial_h", stateDims);
  if (kind == CellKind::LSTM) {
    rec.c0 = loadOptional(node, operandAt(operands, 6), "initial_c", stateDims);
    rec.p = loadOptional(node, operandAt(operands, 7), "P", {rec.dirs, 3 * rec.hidden});
    rec.inputForget = node.getInt("input_forget", 0) != 0;
  }
  rec.linearBeforeReset = node.getInt("linear_before_reset", 0) != 0;
  rec.clip = node.getFloat("clip", 0.0f);
  if (rec.clip < 0)
    fail(node.describe(), ": clip must be positive, got ", rec.clip);
  rec.activations = readActivations(node, kind, rec.dirs);
  return rec;
}

// --- cells -------------------------------------------------------------------

/// out[g*hidden + j] = bias + sum_k vec[k] * weights[(g*hidden + j), k], for
/// all gates, with `weights` the rows of direction d.
std::vector<double> gateProducts(const Recurrence &rec, const std::vector<double> &weights,
                                 const std::vector<double> &vec, int64_t width, int64_t d,
                                 int64_t biasOffset) {
  int64_t rows = gateCount(rec.kind) * rec.hidden;
  std::vector<double> out(static_cast<size_t>(rows));
  const double *wd = weights.data() + d * rows * width;
  const double *bias = rec.b.data() + d * 2 * rows + biasOffset;
  for (int64_t row = 0; row < rows; ++row) {
    double sum = bias[row];
    for (int64_t k = 0; k < width; ++k)
      sum += vec[size_t(k)] * wd[row * width + k];
    out[size_t(row)] = sum;
  }
  return out;
}

/// Clips a gate pre-activation to [-clip, clip] when clipping is on.
double clipped(const Recurrence &rec, double v) {
  return rec.clip > 0 ? std::clamp(v, -rec.clip, rec.clip) : v;
}

/// One time step of one batch row in direction d: updates h (and c).
void step(const Recurrence &rec, int64_t d, const std::vector<double> &xt, std::vector<double> &h,
          std::vector<double> &c) {
  size_t hs = size_t(rec.hidden);
  size_t rows = size_t(gateCount(rec.kind)) * hs;
  std::vector<double> xw = gateProducts(rec, rec.w, xt, rec.input, d, 0);
  std::vector<double> hr = gateProducts(rec, rec.r, h, rec.hidden, d, int64_t(rows));
  const RecurrentActivation *act = rec.activations.data() + d * activationCount(rec.kind);
  std::vector<double> next(hs);
  if (rec.kind == CellKind::RNN) {
    for (size_t j = 0; j < hs; ++j)
      next[j] = activate(act[0], clipped(rec, xw[j] + hr[j]));
  } else if (rec.kind == CellKind::GRU) {
    // Gate order z, r, h.
    std::vector<double> z(hs), reset(hs), resetH(hs);
    for (size_t j = 0; j < hs; ++j) {
      z[j] = activate(act[0], clipped(rec, xw[j] + hr[j]));
      reset[j] = activate(act[0], clipped(rec, xw[hs + j] + hr[hs + j]));
      resetH[j] = reset[j] * h[j];
    }
    // Without linear_before_reset the candidate sees (r ⊙ h) Rhᵀ + Rbh.
    std::vector<double> resetProducts;
    if (!rec.linearBeforeReset)
      resetProducts = gateProducts(rec, rec.r, resetH, rec.hidden, d, int64_t(rows));
    for (size_t j = 0; j < hs; ++j) {
      double recurrent =
          rec.linearBeforeReset ? reset[j] * hr[2 * hs + j] : resetProducts[2 * hs + j];
      double candidate = activate(act[1], clipped(rec, xw[2 * hs + j] + recurrent));
      next[j] = (1 - z[j]) * candidate + z[j] * h[j];
    }
  } else {
    // Gate order i, o, f, c; peepholes p_i, p_o, p_f.
    const double *peep = rec.p.data() + size_t(d) * 3 * hs;
    for (size_t j = 0; j < hs; ++j) {
      double in = activate(act[0], clipped(rec, xw[j] + hr[j] + peep[j] * c[j]));
      double forget = rec.inputForget
                          ? 1 - in
                          : activate(act[0], clipped(rec, xw[2 * hs + j] + hr[2 * hs + j] +
                                                              peep[2 * hs + j] * c[j]));
      double cell = activate(act[1], clipped(rec, xw[3 * hs + j] + hr[3 * hs + j]));
      c[j] = forget * c[j] + in * cell;
      double out = activate(act[0], clipped(rec, xw[hs + j] + hr[hs + j] + peep[hs + j] * c[j]));
      next[j] = out * activate(act[2], c[j]);
    }
  }
  h = std::move(next);
}

void recurrentKernel(CellKind kind, const Node &node, const std::vector<const Tensor *> &operands,
                     std::vector<Tensor> &results) {
  Recurrence rec = readRecurrence(node, kind, operands);
  int64_t hs = rec.hidden;
  std::vector<double> y(size_t(rec.seq * rec.dirs * rec.batch * hs), 0.0);
  std::vector<double> yh(size_t(rec.dirs * rec.batch * hs)), yc(yh.size());
  for (int64_t d = 0; d < rec.dirs; ++d) {
    bool reverse = rec.reverseOnly || d == 1;
    for (int64_t n = 0; n < rec.batch; ++n) {
      std::vector<double> h(static_cast<size_t>(hs)), c(h.size(), 0.0);
      std::vector<double> xt(static_cast<size_t>(rec.input));
      for (int64_t j = 0; j < hs; ++j) {
        h[size_t(j)] = rec.h0[size_t(rec.stateIndex(d, n, j))];
        if (kind == CellKind::LSTM)
          c[size_t(j)] = rec.c0[size_t(rec.stateIndex(d, n, j))];
      }
      int64_t length = rec.lengths[size_t(n)];
      for (int64_t i = 0; i < length; ++i) {
        int64_t t = reverse ? length - 1 - i : i;
        for (int64_t k = 0; k < rec.input; ++k)
          xt[size_t(k)] = rec.x[size_t(rec.xIndex(t, n, k))];
        step(rec, d, xt, h, c);
        for (int64_t j = 0; j < hs; ++j)
          y[size_t(rec.yIndex(t, d, n, j))] = h[size_t(j)];
      }
      for (int64_t j = 0; j < hs; ++j) {
        yh[size_t(rec.stateIndex(d, n, j))] = h[size_t(j)];
        yc[size_t(rec.stateIndex(d, n, j))] = c[size_t(j)];
      }
    }
  }
  DType dtype = operands[0]->dtype();
  auto make = [&](std::vector<int64_t> dims, const std::vector<double> &values) {
    Tensor t(dtype, std::move(dims));
    for (size_t i = 0; i < values.size(); ++i)
      t.setElementFromDouble(int64_t(i), values[i]);
    return t;
  };
  std::vector<int64_t> stateDims = rec.batchMajor ? std::vector<int64_t>{rec.batch, rec.dirs, hs}
                                                  : std::vector<int64_t>{rec.dirs, rec.batch, hs};
  std::vector<int64_t> yDims = rec.batchMajor
                                   ? std::vector<int64_t>{rec.batch, rec.seq, rec.dirs, hs}
                                   : std::vector<int64_t>{rec.seq, rec.dirs, rec.batch, hs};
  results[0] = make(yDims, y);
  if (results.size() > 1)
    results[1] = make(stateDims, yh);
  if (results.size() > 2 && kind == CellKind::LSTM)
    results[2] = make(stateDims, yc);
}

void lstmKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  recurrentKernel(CellKind::LSTM, node, operands, results);
}
void gruKernel(const Node &node, const std::vector<const Tensor *> &operands,
               std::vector<Tensor> &results) {
  recurrentKernel(CellKind::GRU, node, operands, results);
}
void rnnKernel(const Node &node, const std::vector<const Tensor *> &operands,
               std::vector<Tensor> &results) {
  recurrentKernel(CellKind::RNN, node, operands, results);
}

} // namespace

void registerRecurrentKernels(KernelTable &table) {
  table.add(OpKind::LSTM, lstmKernel);
  table.add(OpKind::GRU, gruKernel);
  table.add(OpKind::RNN, rnnKernel);
}

} // namespace onnxc

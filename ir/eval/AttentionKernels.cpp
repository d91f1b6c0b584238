//===- ir/eval/AttentionKernels.cpp - Attention and RotaryEmbedding -------===//
//
// The ONNX opset-23 Attention and RotaryEmbedding ops, computed the plain way
// in double: scores = scale * Q Kᵀ, (+ mask, + causal), softcap, softmax, · V.
// onnxc's softcap_first = 1 caps the scaled score before the masks are applied
// (onnxruntime's GroupQueryAttention: a hidden key stays hidden), where ONNX
// caps the masked score (a hidden key then scores -softcap).
//
// Where the spec leaves a corner open, these follow the ONNX reference
// implementation (onnx.reference), which generates the node tests: a mask
// shorter than the total key length is padded with "masked", the causal
// diagonal is offset by the past length, and a row with every key masked
// gives NaN as numpy's softmax does, or zeros (Y and the mode-3
// probabilities) with onnxc's masked_rows_zero = 1, which the ONNX importer
// sets: onnx 1.23's erratum to opsets 23-25. With softcap_first the
// qk_matmul_output modes follow the computation's order as that erratum
// does: 1 is the capped score, 2 the capped score plus the masks.
//
// onnxc's mask_fill attribute (set by fuse-attention for exported masks that
// fill a finite value, such as torch.finfo(f32).min) changes what "hidden"
// means: a key hidden by a bool mask, by is_causal, by window or by being
// past a short mask's extent takes the score mask_fill (replacing it, as the
// exported Where does) and a float mask is then added to it, as the exported
// Where-then-Add does. A row hiding every key then gives a uniform softmax
// instead of NaN. Scores are computed in double, but an f32 op's biased
// score is rounded to f32, as the unfused graph's Add rounds it: that is
// what makes a large additive mask hide a row uniformly (see roundedLike).
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

namespace onnxc {
namespace {

const Tensor *optionalTensor(const Node &node, const std::vector<const Tensor *> &operands,
                             size_t index, const char *what) {
  const Tensor *t = index < operands.size() ? operands[index] : nullptr;
  if (t && !t->hasData())
    fail(node.describe(), ": operand ", what, " has no data (elided constant)");
  return t;
}

const Tensor &requiredTensor(const Node &node, const std::vector<const Tensor *> &operands,
                             size_t index, const char *what) {
  const Tensor *t = optionalTensor(node, operands, index, what);
  if (!t)
    fail(node.describe(), ": missing operand ", what);
  return *t;
}

std::vector<double> loadDoubles(const Tensor &t) {
  std::vector<double> out(size_t(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    out[size_t(i)] = t.elementAsDouble(i);
  return out;
}

Tensor makeTensor(DType dtype, std::vector<int64_t> dims, const std::vector<double> &values) {
  Tensor t(dtype, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i)
    t.setElementFromDouble(int64_t(i), values[i]);
  return t;
}

/// A [batch, heads, seq, size] array of doubles.
struct Heads {
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  std::vector<double> data;

  Heads() = default;
  Heads(int64_t b, int64_t h, int64_t s, int64_t d)
      : batch(b), heads(h), seq(s), size(d), data(size_t(b * h * s * d), 0.0) {}
  double &at(int64_t b, int64_t h, int64_t s, int64_t d) {
    return data[size_t(((b * heads + h) * seq + s) * size + d)];
  }
  double at(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return data[size_t(((b * heads + h) * seq + s) * size + d)];
  }
  std::vector<int64_t> dims() const { return {batch, heads, seq, size}; }
};

/// Reads Q, K or V as [batch, heads, seq, size]; a 3-D tensor is
/// [batch, seq, heads*size] and is split into `heads3d` heads.
Heads readHeads(const Node &node, const Tensor &t, int64_t heads3d, const char *what,
                bool seqFirst = false) {
  const std::vector<int64_t> &d = t.dims();
  if (t.rank() == 4) {
    Heads h(d[0], d[1], d[2], d[3]);
    h.data = loadDoubles(t);
    return h;
  }
  if (heads3d <= 0 || d[2] % heads3d != 0)
    fail(node.describe(), ": hidden size ", d[2], " of ", what, " is not a multiple of ", heads3d,
         " heads");
  // [batch, seq, hidden], or [seq, batch, hidden] with onnxc's seq_first.
  Heads h(seqFirst ? d[1] : d[0], heads3d, seqFirst ? d[0] : d[1], d[2] / heads3d);
  for (int64_t b = 0; b < h.batch; ++b)
    for (int64_t s = 0; s < h.seq; ++s)
      for (int64_t head = 0; head < h.heads; ++head)
        for (int64_t i = 0; i < h.size; ++i) {
          int64_t row = seqFirst ? s * h.batch + b : b * h.seq + s;
          h.at(b, head, s, i) = t.elementAsDouble((row * h.heads + head) * h.size + i);
        }
  return h;
}

/// Prepends the past cache along the sequence axis.
Heads appendToPast(const Node &node, const Tensor *past, const Heads &current, const char *what) {
  if (!past)
    return current;
  const std::vector<int64_t> &d = past->dims();
  if (past->rank() != 4 || d[0] != current.batch || d[1] != current.heads || d[3] != current.size)
    fail(node.describe(), ": ", what, " has shape ", past->typeString(), ", expected [",
         current.batch, ", ", current.heads, ", past, ", current.size, "]");
  Heads all(current.batch, current.heads, d[2] + current.seq, current.size);
  std::vector<double> pastValues = loadDoubles(*past);
  for (int64_t b = 0; b < all.batch; ++b)
    for (int64_t h = 0; h < all.heads; ++h)
      for (int64_t s = 0; s < all.seq; ++s)
        for (int64_t i = 0; i < all.size; ++i)
          all.at(b, h, s, i) = s < d[2] ? pastValues[size_t(((b * d[1] + h) * d[2] + s) * d[3] + i)]
                                        : current.at(b, h, s - d[2], i);
  return all;
}

/// What the mask and the causal / window attributes do to each score of
/// [batch, qHeads, qSeq, total]: without mask_fill, `bias` is added (-inf
/// hides); with it, a `hidden` score is replaced by the fill and then `bias`
/// (the float mask, 0 elsewhere) is added.
struct AttentionBias {
  std::vector<double> bias;
  std::vector<char> hidden; // empty without mask_fill
};

/// The mask_fill attribute, or nullopt when absent (hidden keys are -inf).
std::optional<double> maskFill(const Node &node) {
  if (!node.hasAttr("mask_fill"))
    return std::nullopt;
  double fill = node.getFloat("mask_fill", 0.0f);
  if (std::isnan(fill) || fill == std::numeric_limits<double>::infinity())
    fail(node.describe(), ": mask_fill must be finite or -inf, got ", fill);
  return fill;
}

AttentionBias attentionBias(const Node &node, const Tensor *mask, int64_t batch, int64_t heads,
                            int64_t qSeq, int64_t total, int64_t past) {
  const double minusInf = -std::numeric_limits<double>::infinity();
  const bool replaces = maskFill(node).has_value();
  std::vector<double> bias(size_t(batch * heads * qSeq * total), 0.0);
  std::vector<char> hiddenKeys(replaces ? bias.size() : 0, 0);
  std::vector<int64_t> maskDims(4, 1), maskStrides(4, 0);
  std::vector<double> maskValues;
  if (mask) {
    if (mask->rank() > 4 || mask->rank() == 0)
      fail(node.describe(), ": attention mask must have rank 1 to 4, got ", mask->typeString());
    std::copy(mask->dims().begin(), mask->dims().end(), maskDims.begin() + (4 - mask->rank()));
    const int64_t expected[4] = {batch, heads, qSeq, total};
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      bool ok = maskDims[i] == 1 || maskDims[i] == expected[i] || (i == 3 && maskDims[i] < total);
      if (!ok)
        fail(node.describe(), ": attention mask of shape ", mask->typeString(),
             " does not broadcast to [", batch, ", ", heads, ", ", qSeq, ", ", total, "]");
      maskStrides[i] = maskDims[i] == 1 ? 0 : stride;
      stride *= maskDims[i];
    }
    maskValues = loadDoubles(*mask);
  }
  bool isBool = mask && mask->dtype() == DType::Bool;
  bool causal = node.getInt("is_causal", 0) != 0;
  // onnxc's own attribute (set by fuse-attention for banded masks): query i
  // sees key j only when |j - (i + past)| <= window; -1 means no window.
  int64_t window = node.getInt("window", -1);
  size_t index = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < qSeq; ++i)
        for (int64_t j = 0; j < total; ++j, ++index) {
          double value = 0.0;
          bool hidden = false;
          if (mask) {
            int64_t col = j;
            if (col >= maskDims[3]) {
              hidden = true; // keys past a short mask are masked out
            } else {
              double m = maskValues[size_t(b * maskStrides[0] + h * maskStrides[1] +
                                           i * maskStrides[2] + col * maskStrides[3])];
              if (isBool)
                hidden = m == 0.0;
              else
                value = m;
            }
          }
          bool outsideBand =
              (causal && j > i + past) || (window >= 0 && std::abs(j - (i + past)) > window);
          hidden = hidden || outsideBand;
          if (replaces)
            hiddenKeys[index] = hidden;
          else if (hidden)
            value += minusInf;
          bias[index] = value;
        }
  return {std::move(bias), std::move(hiddenKeys)};
}

/// A biased score as an f32 graph holds it: s + m rounds there, which is
/// the meaning of a large additive mask (s + finfo.min is finfo.min, s - 1e9
/// is -1e9 for |s| < 32, finfo.min + finfo.min is -inf), so a row that such
/// a mask hides entirely is uniform as in the unfused graph.
double roundedLike(DType dtype, double x) { return dtype == DType::F32 ? double(float(x)) : x; }

struct AttentionInputs {
  Heads q, key, value; // key/value include the past
  int64_t past = 0;
  bool is3d = false, seqFirst = false;
};

AttentionInputs readAttentionInputs(const Node &node, const std::vector<const Tensor *> &operands) {
  const Tensor &q = requiredTensor(node, operands, 0, "Q");
  const Tensor &k = requiredTensor(node, operands, 1, "K");
  const Tensor &v = requiredTensor(node, operands, 2, "V");
  if (!isFloat(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype())
    fail(node.describe(), ": attention Q, K, V must share one floating type, got ", q.typeString(),
         ", ", k.typeString(), ", ", v.typeString());
  if (!((q.rank() == 3 || q.rank() == 4) && k.rank() == q.rank() && v.rank() == q.rank()))
    fail(node.describe(), ": attention Q, K, V must all be 3-D or all 4-D, got ", q.typeString(),
         ", ", k.typeString(), ", ", v.typeString());
  AttentionInputs in;
  in.is3d = q.rank() == 3;
  int64_t qHeads = in.is3d ? node.requireInt("q_num_heads") : 0;
  int64_t kvHeads = in.is3d ? node.requireInt("kv_num_heads") : 0;
  in.seqFirst = node.getInt("seq_first", 0) != 0;
  if (in.seqFirst && !in.is3d)
    fail(node.describe(), ": seq_first needs the 3-D form, got Q ", q.typeString());
  in.q = readHeads(node, q, qHeads, "Q", in.seqFirst);
  Heads key = readHeads(node, k, kvHeads, "K", in.seqFirst);
  Heads value = readHeads(node, v, kvHeads, "V", in.seqFirst);
  if (key.batch != in.q.batch || value.batch != in.q.batch || key.size != in.q.size ||
      value.heads != key.heads || value.seq != key.seq)
    fail(node.describe(), ": attention shapes do not agree: Q ", q.typeString(), ", K ",
         k.typeString(), ", V ", v.typeString());
  if (key.heads == 0 || in.q.heads % key.heads != 0)
    fail(node.describe(), ": ", in.q.heads, " query heads are not a multiple of ", key.heads,
         " key/value heads");
  const Tensor *pastKey = optionalTensor(node, operands, 4, "past_key");
  const Tensor *pastValue = optionalTensor(node, operands, 5, "past_value");
  if (bool(pastKey) != bool(pastValue))
    fail(node.describe(), ": past_key and past_value must be given together");
  in.key = appendToPast(node, pastKey, key, "past_key");
  in.value = appendToPast(node, pastValue, value, "past_value");
  in.past = pastKey ? pastKey->dims()[2] : 0;
  return in;
}

double softcapped(double x, double cap) { return cap > 0 ? cap * std::tanh(x / cap) : x; }

void attentionKernel(const Node &node, const std::vector<const Tensor *> &operands,
                     std::vector<Tensor> &results) {
  AttentionInputs in = readAttentionInputs(node, operands);
  Heads &q = in.q;
  int64_t total = in.key.seq, group = q.heads / in.key.heads;
  const Tensor *mask = optionalTensor(node, operands, 3, "attn_mask");
  if (mask && mask->dtype() != DType::Bool && mask->dtype() != operands[0]->dtype())
    fail(node.describe(), ": attention mask must be bool or ", dtypeName(operands[0]->dtype()),
         ", got ", mask->typeString());
  AttentionBias masking = attentionBias(node, mask, q.batch, q.heads, q.seq, total, in.past);
  const std::vector<double> &bias = masking.bias;
  std::optional<double> fill = maskFill(node);
  DType dtype = operands[0]->dtype();
  double scale = node.hasAttr("scale") ? double(node.getFloat("scale", 1.0f))
                                       : 1.0 / std::sqrt(double(q.size));
  double cap = node.getFloat("softcap", 0.0f);
  bool capFirst = node.getInt("softcap_first", 0) != 0;
  bool zeroMaskedRows = node.getInt("masked_rows_zero", 0) != 0;
  int64_t mode = node.getInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    fail(node.describe(), ": qk_matmul_output_mode must be 0 to 3, got ", mode);

  Heads y(q.batch, q.heads, q.seq, in.value.size);
  std::vector<double> qkOut(bias.size());
  std::vector<double> row(static_cast<size_t>(total));
  size_t index = 0;
  for (int64_t b = 0; b < q.batch; ++b)
    for (int64_t h = 0; h < q.heads; ++h)
      for (int64_t i = 0; i < q.seq; ++i, index += size_t(total)) {
        int64_t kvHead = h / group;
        double maxScore = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < q.size; ++d)
            dot += q.at(b, h, i, d) * in.key.at(b, kvHead, j, d);
          double scaled = dot * scale;
          // onnxc's softcap_first caps the score before the masks (onnxruntime's
          // GroupQueryAttention), where ONNX caps the masked score.
          double score = capFirst ? softcapped(scaled, cap) : scaled;
          double kept = fill && masking.hidden[index + size_t(j)] ? *fill : score;
          double withBias = roundedLike(dtype, kept + bias[index + size_t(j)]);
          double capped = capFirst ? withBias : softcapped(withBias, cap);
          double stage1 = capFirst ? score : withBias, stage2 = capFirst ? withBias : capped;
          qkOut[index + size_t(j)] = mode == 0 ? scaled : mode == 1 ? stage1 : stage2;
          row[size_t(j)] = capped;
          maxScore = std::max(maxScore, capped);
        }
        if (zeroMaskedRows && maxScore == -std::numeric_limits<double>::infinity()) {
          if (mode == 3) // Y's row stays zero, and so do its probabilities
            std::fill_n(qkOut.begin() + std::ptrdiff_t(index), total, 0.0);
          continue;
        }
        double sum = 0;
        for (double &s : row)
          sum += (s = std::exp(s - maxScore));
        for (int64_t j = 0; j < total; ++j) {
          double p = row[size_t(j)] / sum;
          if (mode == 3)
            qkOut[index + size_t(j)] = p;
          for (int64_t d = 0; d < y.size; ++d)
            y.at(b, h, i, d) += p * in.value.at(b, kvHead, j, d);
        }
      }

  if (in.is3d) {
    // Back to [batch, seq, heads*size] (or [seq, batch, heads*size]).
    std::vector<double> flat(y.data.size());
    for (int64_t b = 0; b < y.batch; ++b)
      for (int64_t h = 0; h < y.heads; ++h)
        for (int64_t s = 0; s < y.seq; ++s)
          for (int64_t d = 0; d < y.size; ++d) {
            int64_t row = in.seqFirst ? s * y.batch + b : b * y.seq + s;
            flat[size_t((row * y.heads + h) * y.size + d)] = y.at(b, h, s, d);
          }
    std::vector<int64_t> dims = {y.batch, y.seq, y.heads * y.size};
    if (in.seqFirst)
      std::swap(dims[0], dims[1]);
    results[0] = makeTensor(dtype, dims, flat);
  } else {
    results[0] = makeTensor(dtype, y.dims(), y.data);
  }
  if (results.size() > 1)
    results[1] = makeTensor(dtype, in.key.dims(), in.key.data);
  if (results.size() > 2)
    results[2] = makeTensor(dtype, in.value.dims(), in.value.data);
  if (results.size() > 3)
    results[3] = makeTensor(dtype, {q.batch, q.heads, q.seq, total}, qkOut);
}

// --- RotaryEmbedding ---------------------------------------------------------

/// Where element (b, head, s, d) of X lives, for the 3-D and 4-D layouts.
struct RotaryLayout {
  int64_t batch, heads, seq, headSize;
  bool is3d;
  int64_t offset(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return is3d ? ((b * seq + s) * heads + h) * headSize + d
                : ((b * heads + h) * seq + s) * headSize + d;
  }
};

RotaryLayout rotaryLayout(const Node &node, const Tensor &x) {
  const std::vector<int64_t> &d = x.dims();
  if (x.rank() == 4)
    return {d[0], d[1], d[2], d[3], false};
  if (x.rank() != 3)
    fail(node.describe(), ": rotary embedding input must be 3-D or 4-D, got ", x.typeString());
  int64_t heads = node.getInt("num_heads", 0);
  if (heads <= 0 || d[2] % heads != 0)
    fail(node.describe(), ": rotary embedding of 3-D input ", x.typeString(),
         " needs a num_heads attribute dividing the hidden size");
  return {d[0], heads, d[1], d[2] / heads, true};
}

/// Row of the cos/sin caches used at (b, s): position_ids picks a row of a
/// [max_pos, half] cache; without it the cache is [batch, seq, half].
std::vector<int64_t> rotaryCacheRows(const Node &node, const RotaryLayout &layout,
                                     const Tensor &cache, const Tensor *positions, int64_t half) {
  std::vector<int64_t> rows(size_t(layout.batch * layout.seq));
  const std::vector<int64_t> &cd = cache.dims();
  if (positions) {
    if (!isInteger(positions->dtype()) || positions->rank() != 2 ||
        positions->dims()[0] != layout.batch || positions->dims()[1] != layout.seq)
      fail(node.describe(), ": position_ids must be integer [", layout.batch, ", ", layout.seq,
           "], got ", positions->typeString());
    if (cache.rank() != 2 || cd[1] != half)
      fail(node.describe(), ": rotary cache must be [max_position, ", half, "], got ",
           cache.typeString());
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i] = positions->elementAsInt64(int64_t(i));
      if (rows[i] < 0 || rows[i] >= cd[0])
        fail(node.describe(), ": position id ", rows[i], " is outside the cache of ", cd[0],
             " positions");
    }
    return rows;
  }
  if (cache.rank() != 3 || cd[0] != layout.batch || cd[1] != layout.seq || cd[2] != half)
    fail(node.describe(), ": without position_ids the rotary cache must be [", layout.batch, ", ",
         layout.seq, ", ", half, "], got ", cache.typeString());
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i] = int64_t(i);
  return rows;
}

void rotaryEmbeddingKernel(const Node &node, const std::vector<const Tensor *> &operands,
                           std::vector<Tensor> &results) {
  const Tensor &x = requiredTensor(node, operands, 0, "X");
  const Tensor &cosCache = requiredTensor(node, operands, 1, "cos_cache");
  const Tensor &sinCache = requiredTensor(node, operands, 2, "sin_cache");
  const Tensor *positions = optionalTensor(node, operands, 3, "position_ids");
  if (!isFloat(x.dtype()))
    fail(node.describe(), ": rotary embedding input must be floating point, got ", x.typeString());
  RotaryLayout layout = rotaryLayout(node, x);
  int64_t rotaryDim = node.getInt("rotary_embedding_dim", 0);
  if (rotaryDim == 0)
    rotaryDim = layout.headSize;
  if (rotaryDim < 0 || rotaryDim > layout.headSize || rotaryDim % 2 != 0)
    fail(node.describe(), ": rotary_embedding_dim ", rotaryDim,
         " must be even and at most the head size ", layout.headSize);
  if (cosCache.dims() != sinCache.dims())
    fail(node.describe(), ": cos_cache ", cosCache.typeString(), " and sin_cache ",
         sinCache.typeString(), " differ in shape");
  int64_t half = rotaryDim / 2;
  std::vector<int64_t> rows = rotaryCacheRows(node, layout, cosCache, positions, half);
  bool interleaved = node.getInt("interleaved", 0) != 0;

  std::vector<double> in = loadDoubles(x), out = in;
  std::vector<double> cosValues = loadDoubles(cosCache), sinValues = loadDoubles(sinCache);
  for (int64_t b = 0; b < layout.batch; ++b)
    for (int64_t s = 0; s < layout.seq; ++s) {
      int64_t row = rows[size_t(b * layout.seq + s)];
      for (int64_t h = 0; h < layout.heads; ++h)
        for (int64_t i = 0; i < half; ++i) {
          // The pair rotated together: adjacent when interleaved, else halves.
          int64_t first = interleaved ? 2 * i : i;
          int64_t second = interleaved ? 2 * i + 1 : i + half;
          double c = cosValues[size_t(row * half + i)], sn = sinValues[size_t(row * half + i)];
          double x1 = in[size_t(layout.offset(b, h, s, first))];
          double x2 = in[size_t(layout.offset(b, h, s, second))];
          out[size_t(layout.offset(b, h, s, first))] = c * x1 - sn * x2;
          out[size_t(layout.offset(b, h, s, second))] = sn * x1 + c * x2;
        }
    }
  results[0] = makeTensor(x.dtype(), x.dims(), out);
}

} // namespace

void registerAttentionKernels(KernelTable &table) {
  table.add(OpKind::Attention, attentionKernel);
  table.add(OpKind::RotaryEmbedding, rotaryEmbeddingKernel);
}

} // namespace onnxc

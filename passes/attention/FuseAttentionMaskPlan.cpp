//===- passes/attention/FuseAttentionMaskPlan.cpp - Masks as the op's attributes ---===//
//
// fuse-attention's plan for the masks the core matcher collected: which
// become is_causal / window (proven bands, AttentionMasks.h), which one
// stays the mask operand, and the mask_fill. Apart from the matcher because
// it is where the unfused chain's meaning is compared with the fused op's:
// the order the masks apply in and the values they fill decide what fuses.
//
//===----------------------------------------------------------------------===//
#include "passes/attention/FuseAttentionMatch.h"

#include <cassert>
#include <cmath>

namespace onnxc::attention {

using match::matched;

/// The cache and new parts of the 4-D K and V, when both are Concat(past,
/// new) on the sequence axis with `past` keys in the cache; nullopt else.
std::optional<CacheSplit> splitCache(Value *k4, Value *v4, const Dim &past) {
  auto parts = [&](Value *x) -> std::optional<std::pair<Value *, Value *>> {
    Node *cat = x ? x->definingNode() : nullptr;
    if (!cat || cat->kind() != OpKind::Concat || cat->numOperands() != 2)
      return std::nullopt;
    int64_t axis = cat->getInt("axis", 0);
    Value *cache = cat->operand(0), *fresh = cat->operand(1);
    if ((axis != 2 && axis != -2) || !cache || !fresh || cache->shape().rank() != 4 ||
        fresh->shape().rank() != 4 || !cache->shape()[2].provablyEqual(past))
      return std::nullopt;
    return std::make_pair(cache, fresh);
  };
  auto key = parts(k4), value = parts(v4);
  if (!key || !value)
    return std::nullopt;
  return CacheSplit{key->first, key->second, value->first, value->second};
}

namespace {

/// Whether the Attention op's attributes say exactly this band: none,
/// is_causal, window, or both. (These four forms are closed under
/// intersection, so several masks that each are one combine into one.)
bool expressible(const KeyBand &b) {
  return b.isEverything() || b.above == 0 || b.above == b.below;
}

std::string bandText(const KeyBand &b) {
  auto side = [](int64_t v) {
    return v == KeyBand::kUnbounded ? std::string("unbounded") : std::to_string(v);
  };
  return "[" + side(b.below) + " below, " + side(b.above) + " above]";
}

/// K and V as the 4-D tensors the op would read (K before its transpose and
/// either before a grouped-query repeat), split into cache and new keys.
std::optional<CacheSplit> cacheOf(const CoreMatch &m) {
  double scale = m.scale; // keyForms folds a scale on K into it: a copy here
  KeyForms key = keyForms(m.kt, scale);
  int64_t group = 1;
  Value *v4 = m.v;
  if (Value *kv = repeatedKvSource(m.v, group))
    v4 = kv;
  const Shape &scores = m.scores->result(0)->shape();
  std::optional<Dim> past = Dim::trySubtract(scores[3], scores[2]);
  if (!past)
    return std::nullopt;
  return splitCache(key.k4, v4, *past);
}

/// What the walk over the masks, in the order applied, has seen so far.
struct MaskWalk {
  const CoreMatch &m;
  PassContext &context;
  const Dim &qSeq, &kvSeq;
  // A band around a diagonal offset by a cache is expressible only when the
  // op can read the cache apart (past_key / past_value).
  bool offsetExpressible = false;
  std::optional<double> whereFill;
  bool additiveBand = false, additiveOperand = false, whereAfterAdd = false;
};

/// `term`, which no attribute says, as the op's mask operand.
MatchStatus keepAsOperand(const MaskTerm &term, bool isWhere, MaskWalk &walk, MaskPlan &plan) {
  if (plan.operand)
    return Rejection{"more than one mask stays an operand"};
  plan.operand = term.mask;
  if (!isWhere) {
    walk.additiveOperand = true;
    plan.subtract = term.negated;
    return matched();
  }
  if (term.mask->dtype() != DType::Bool)
    return Rejection{"a Where mask condition is not bool"};
  plan.negate = term.encoding == MaskEncoding::HiddenWhereTrue;
  return matched();
}

/// One mask, in the order applied: its proven band joins the attributes,
/// or it stays an operand (and --explain says why).
MatchStatus planMaskTerm(const MaskTerm &term, MaskWalk &walk, MaskPlan &plan) {
  bool isWhere = term.encoding != MaskEncoding::Additive;
  if (isWhere) {
    if (walk.whereFill && *walk.whereFill != term.fill)
      return Rejection{"two Where masks fill different values"};
    walk.whereFill = term.fill;
    walk.whereAfterAdd = walk.whereAfterAdd || walk.additiveOperand;
  }
  std::string why = "a subtracted bias (ALiBi) is an additive operand";
  std::optional<KeyBand> band =
      term.negated ? std::nullopt
                   : proveBandMask(term.mask, term.encoding, walk.qSeq, walk.kvSeq, why);
  if (band && !band->isEverything() && !walk.offsetExpressible) {
    why = "query and key lengths differ and K and V are not a cache concatenated with the "
          "new keys (the op offsets its diagonal only by a past_key operand)";
    band.reset();
  }
  if (band && expressible(*band)) {
    plan.band = plan.band.intersect(*band);
    walk.additiveBand = walk.additiveBand || !isWhere;
    return matched();
  } else if (band)
    why = "its band " + bandText(*band) + " is neither causal nor symmetric";
  walk.context.explain(*walk.m.softmax, "mask " + term.mask->name() + " stays an operand: " + why);
  return keepAsOperand(term, isWhere, walk, plan);
}

/// The checks on the masks as a whole, once each is planned.
MatchResult<MaskPlan> finishPlan(MaskPlan plan, const MaskWalk &walk) {
  if (walk.whereFill && std::isfinite(*walk.whereFill)) {
    if (walk.whereAfterAdd)
      return Rejection{"a Where filling a finite value follows the additive mask (the fused op "
                       "would add the mask to the fill)"};
    if (walk.additiveBand)
      return Rejection{"an additive shape-only mask meets a Where filling a finite value (its "
                       "hidden keys score s + mask, not the fill)"};
    plan.fill = walk.whereFill;
  }
  plan.pastOffset = !plan.band.isEverything() && walk.qSeq != walk.kvSeq;
  assert(expressible(plan.band));
  return plan;
}

} // namespace

MatchResult<MaskPlan> planMasks(const CoreMatch &m, PassContext &context) {
  const Shape &scores = m.scores->result(0)->shape();
  const Dim &qSeq = scores[2], &kvSeq = scores[3];
  MaskWalk walk{m, context, qSeq, kvSeq, qSeq == kvSeq || cacheOf(m).has_value(), std::nullopt};
  MaskPlan plan;
  // m.masks runs from Softmax backwards; walk them in the order applied.
  for (auto it = m.masks.rbegin(); it != m.masks.rend(); ++it) {
    if (MatchStatus status = planMaskTerm(*it, walk, plan); !status)
      return status.rejection();
  }
  return finishPlan(plan, walk);
}

} // namespace onnxc::attention

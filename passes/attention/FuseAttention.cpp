//===- passes/attention/FuseAttention.cpp - Exported attention -> one Attention op ---===//
//
// The scaled dot-product core, as exporters write it (anchored at Softmax):
//
//   %s = MatMul(%q, %kt)            q [b,h,Sq,d] (optionally * c), kt [b,h,d,Skv]
//   %s = Div(%s, √d) | Mul(%s, 1/√d)   (or the scale folded into q and/or k)
//   %s = Add(%s, %mask)             zero or more masks: additive,
//   %s = Sub(%s, %bias)             a subtracted bias (ALiBi), or
//   %s = Where(%hidden, -inf, %s)   Where replacing hidden scores
//   %p = Softmax(%s) {axis = -1}
//   %o = MatMul(%p, %v)             v [b,h,Skv,dv]
//
// and the multi-head wrapper around it:
//
//   %q = Transpose(Reshape(%q_proj [b,S,h*d] -> [b,S,h,d])) {perm = [0,2,1,3]}
//   %kt = Transpose(Reshape(%k_proj ...)) {perm = [0,2,3,1]}   (or Kᵀ of the 4-D k)
//   %y = Reshape(Transpose(%o) {perm = [0,2,1,3]}) -> [b,Sq,h*dv]
//
// become %y = Attention(%q_proj, %k_proj, %v_proj, [%mask]) {q_num_heads = h,
// kv_num_heads = h, scale, [is_causal], [window]}: the 3-D form, which reads
// the projections in place and writes the merged heads. When the plumbing
// is not recognized, the 4-D form Attention(%q, %k, %v) replaces %o. K and
// V repeated for grouped-query attention (LLaMA's repeat_kv: Unsqueeze,
// Expand, Reshape) are read before the repeat, with kv_num_heads (3-D) or
// the 4-D operands' heads saying so.
//
// Canonicalize first, match once: other exporters' spellings are rewritten
// into this form by passes that run before this one (passes/Pipelines.cpp),
// so the matcher reads one form: lift-batched-heads lifts heads folded into
// the batch ([b*h, S, d], torch's nn.MultiheadAttention, BART, DeBERTa),
// split-packed-qkv splits a ViT's packed qkv projection into three ordinary
// head splits of its slices, batch-first-heads rewrites torch's
// sequence-first head splits and merge ([S, b, h*d]) into these between
// Transposes [1, 0, 2] (which fold-seq-first-attention folds into the fused
// op's seq_first after this pass), and expand-xsoftmax rewrites DeBERTa's
// XSoftmax (probabilities zeroed after Softmax where its mask hides keys)
// into this masked core, with the position terms and the mask as one
// additive mask, and a zeroing of the rows that see no key after the head
// merge. Still read here: LLaMA's repeat_kv.
//
// Masks that depend only on the sequence length are proven (see
// AttentionMasks.h): one that is a causal triangle at every length becomes
// is_causal, a band |i-j| <= r the onnxc attribute window = r; any other
// mask stays an operand (--explain says why): an additive one as is, a
// Where as a bool "visible" mask. A Where filling a finite value (HF's
// torch.finfo(f32).min) sets mask_fill, so hidden keys keep that score and
// a row hiding every key stays uniform as in the unfused graph (planMasks
// says which mask orders that covers). Dead nodes are left for dce.
//
// The pass is split in four, one step each (FuseAttentionMatch.h lists
// them): this file is the pass and the rewrite.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"
#include "passes/Pass.h"
#include "passes/attention/FuseAttentionMatch.h"
#include "passes/attention/RewriteBuilder.h"

#include <algorithm>

namespace onnxc::attention {

namespace {

using match::matched;

class FuseAttention : public Pass {
public:
  std::string_view name() const override { return "fuse-attention"; }
  std::string_view description() const override {
    return "replace exported scaled dot-product attention (and its head plumbing) by one Attention "
           "op";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    // Softmaxes first: a fusion erases nodes after its Softmax.
    std::vector<Node *> candidates = graph.nodesOfKind(OpKind::Softmax);
    bool changed = false;
    for (Node *softmax : candidates) {
      // A chain left dead by an earlier fusion waits for dce.
      if (!softmax->result(0)->hasUses())
        continue;
      MatchResult<bool> fused = fuse(graph, *softmax, context);
      if (!fused)
        context.reject(*softmax, fused.rejection().reason);
      else if (*fused)
        changed = true;
    }
    return changed;
  }

private:
  /// Fuses the attention anchored at `softmax`: whether it did (not when
  /// its result is dead, left for dce), or why not.
  MatchResult<bool> fuse(Graph &graph, Node &softmax, PassContext &context) {
    MatchResult<CoreMatch> core = matchCore(graph, softmax);
    if (!core)
      return core.rejection();
    if (!core->output->result(0)->hasUses() && !graph.isOutput(core->output->result(0)))
      return false;
    MatchResult<MaskPlan> masks = planMasks(*core, context);
    if (!masks)
      return masks.rejection();
    if (MatchStatus status = rewrite(graph, *core, *masks, context); !status)
      return status.rejection();
    return true;
  }

  /// Shape(scores) read the [b, h, Sq, Skv] dims of a tensor that no longer
  /// exists: rebuild them from values that do (the projections, or the 4-D
  /// Q and V), placed before the Shape node so every reader stays in order.
  static void rewireShapeReaders(Graph &graph, const CoreMatch &core, Value *v4, const Heads3d *q3,
                                 const Heads3d *v3) {
    for (Node *reader : core.shapeReaders) {
      RewriteBuilder builder(graph, reader);
      auto dimsOf = [&](Value *value, int64_t start, int64_t end) {
        return builder.create(OpKind::Shape, {value}, "attention.dims",
                              {{"start", Attribute(start)}, {"end", Attribute(end)}});
      };
      std::vector<Value *> dims; // one 1-element tensor per axis of the scores
      if (q3) {
        dims = {dimsOf(q3->source, 0, 1), builder.constantI64("attention.heads", {q3->heads}),
                dimsOf(q3->source, 1, 2), dimsOf(v3->source, 1, 2)};
      } else {
        Value *bhs = dimsOf(core.q, 0, 3);
        dims = {bhs, dimsOf(v4, 2, 3)};
      }
      replaceShapeReader(graph, builder, reader, dims);
    }
  }

  /// Replaces `reader` = Shape(t) {start, end} of a 4-D t by the matching
  /// slice of `dims` (one 1-element tensor per axis of t, concatenated).
  static void replaceShapeReader(Graph &graph, RewriteBuilder &builder, Node *reader,
                                 const std::vector<Value *> &dims) {
    int64_t rank = 4;
    auto clampAxis = [rank](int64_t axis) {
      return std::clamp(axis < 0 ? axis + rank : axis, int64_t(0), rank);
    };
    int64_t start = clampAxis(reader->getInt("start", 0)),
            end = clampAxis(reader->getInt("end", rank));
    Value *full =
        builder.create(OpKind::Concat, dims, "attention.dims", {{"axis", Attribute(int64_t(0))}});
    Value *picked = full;
    if (start != 0 || end != rank) {
      std::vector<Value *> operands = {
          full, builder.constantI64("attention.dims.start", {start}),
          builder.constantI64("attention.dims.end", {std::max(start, end)})};
      picked = builder.create(OpKind::Slice, operands, "attention.dims");
    }
    std::string name = reader->result(0)->name();
    graph.replaceAllUsesWith(reader->result(0), picked);
    graph.eraseNode(reader);
    graph.renameValue(picked, name);
  }

  /// K or V repeated for grouped heads may stay measured by Shape nodes
  /// (HF LLaMA slices its mask to Shape(repeated K)[-2]): they read the
  /// unrepeated source's dims instead, so that once the fused chain is
  /// swept the repeat goes dead too (unless something else still reads it).
  static void rewireRepeatedShapeReaders(Graph &graph, Value *repeated, Value *source) {
    if (!repeated || repeated == source)
      return;
    std::vector<Node *> readers;
    for (const Use &use : repeated->uses())
      if (use.user->kind() == OpKind::Shape &&
          std::find(readers.begin(), readers.end(), use.user) == readers.end())
        readers.push_back(use.user);
    std::optional<int64_t> heads = constantDim(repeated->shape(), 1);
    if (!heads)
      return;
    for (Node *reader : readers) {
      RewriteBuilder builder(graph, reader);
      auto dimsOf = [&](int64_t start, int64_t end) {
        return builder.create(OpKind::Shape, {source}, "attention.dims",
                              {{"start", Attribute(start)}, {"end", Attribute(end)}});
      };
      replaceShapeReader(
          graph, builder, reader,
          {dimsOf(0, 1), builder.constantI64("attention.heads", {*heads}), dimsOf(2, 4)});
    }
  }

  /// How the fused op reads its operands, and the node it replaces.
  struct FusedForm {
    double scale = 1;
    KeyForms key;
    Value *v4 = nullptr; // V, before a grouped-query repeat
    int64_t group = 1;
    std::optional<CacheSplit> cache;
    std::optional<Heads3d> q3, v3;
    Node *merge = nullptr; // the head merge the 3-D form replaces
    bool threeD = false;   // the 3-D form, reading the projections in place
    Node *root = nullptr;
    std::string base;
  };

  /// The 3-D form when the plumbing allows, else the 4-D form; decided
  /// before anything is created.
  static MatchResult<FusedForm> chooseForm(const Graph &graph, const CoreMatch &core,
                                           const MaskPlan &masks) {
    FusedForm form;
    form.scale = core.scale;
    form.key = keyForms(core.kt, form.scale);
    // Grouped-query attention: K and V repeated per group (repeat_kv) are
    // read ungrouped, by an Attention with fewer KV heads.
    int64_t valueGroup = 1;
    form.v4 = core.v;
    if (Value *kv = repeatedKvSource(core.v, valueGroup))
      form.v4 = kv;
    if (form.key.group != valueGroup)
      return Rejection{"K and V are repeated for grouped heads differently"};
    form.group = form.key.group;
    // A band offset by a cache: the op offsets its diagonal by the length
    // of past_key, so it reads the cache and the new keys apart (and
    // appends them itself, in the 4-D form).
    if (masks.pastOffset) {
      const Shape &scores = core.scores->result(0)->shape();
      form.cache = splitCache(form.key.k4, form.v4, scores[3] - scores[2]);
      if (!form.cache)
        return Rejection{"the mask is a band offset by kv - q, but K and V are not a cache "
                         "concatenated with the new keys"};
    }
    form.q3 = headsSource(core.q);
    form.v3 = headsSource(form.v4);
    form.merge = mergeHeadsRoot(graph, core.output->result(0));
    std::optional<Heads3d> &q3 = form.q3, &k3 = form.key.k3, &v3 = form.v3;
    form.threeD = !form.cache && q3 && k3 && v3 && form.merge && k3->heads == v3->heads &&
                  q3->heads == k3->heads * form.group;
    form.root = form.threeD ? form.merge : core.output;
    if (form.threeD) {
      // A scale applied to the projection before the head split (BART's
      // q_proj(x) * scaling) joins the op's scale: the op reads the
      // unscaled projection, and the Mul is left dead.
      q3->source = stripScale(q3->source, form.scale);
      k3->source = stripScale(k3->source, form.scale);
    }
    form.base = core.softmax->name().empty() ? "attention" : core.softmax->name();
    return form;
  }

  /// Q, K and V as the fused op reads them.
  static std::vector<Value *> qkvOperands(RewriteBuilder &builder, const CoreMatch &core,
                                          const FusedForm &form) {
    const std::string &base = form.base;
    if (form.threeD)
      return {form.q3->source, form.key.k3->source, form.v3->source};
    // The 4-D op wants K itself: undo the exporter's transpose.
    Value *k4 = form.key.k4;
    if (!k4 && form.key.splitHeads)
      k4 = builder.create(OpKind::Transpose, {form.key.splitHeads}, base + ".k",
                          {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3})}});
    else if (!k4)
      k4 = builder.create(OpKind::Transpose, {core.kt}, base + ".k",
                          {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 2})}});
    if (form.cache)
      return {core.q, form.cache->newKey, form.cache->newValue};
    return {core.q, k4, form.v4};
  }

  /// The mask operand as the op reads it: the plan's operand, negated or
  /// a negated bias.
  static Value *maskOperand(RewriteBuilder &builder, const MaskPlan &masks, const FusedForm &form) {
    const std::string &base = form.base;
    Value *mask = masks.operand;
    if (masks.negate)
      mask = builder.create(OpKind::Not, {mask}, base + ".visible");
    if (masks.subtract)
      mask = builder.create(OpKind::Neg, {mask}, base + ".bias");
    return mask;
  }

  /// The Attention node, with its attributes and inferred result.
  static Node *createAttention(Graph &graph, RewriteBuilder &builder, const CoreMatch &core,
                               const MaskPlan &masks, const FusedForm &form) {
    std::vector<Value *> operands = qkvOperands(builder, core, form);
    if (masks.operand)
      operands.push_back(maskOperand(builder, masks, form));
    if (form.cache) {
      if (!masks.operand)
        operands.push_back(nullptr);
      operands.push_back(form.cache->pastKey);
      operands.push_back(form.cache->pastValue);
    }
    Node *attention = graph.createNode(OpKind::Attention, operands, 1, form.base, {}, form.root);
    builder.adopt(attention);
    attention->setAttr("scale", Attribute(float(form.scale)));
    if (form.threeD) {
      attention->setAttr("q_num_heads", Attribute(form.q3->heads));
      attention->setAttr("kv_num_heads", Attribute(form.key.k3->heads));
    }
    const KeyBand &band = masks.band;
    if (band.above == 0 && !band.isEverything())
      attention->setAttr("is_causal", Attribute(int64_t(1)));
    if (band.below != KeyBand::kUnbounded)
      attention->setAttr("window", Attribute(band.below));
    if (masks.fill)
      attention->setAttr("mask_fill", Attribute(float(*masks.fill)));
    InferenceContext inference(graph);
    inferNodeShapes(*attention, inference);
    return attention;
  }

  /// The fused op's result in place of the root's.
  static MatchStatus replaceRoot(Graph &graph, const FusedForm &form, Value *result) {
    Node *root = form.root;
    if (result->type() != root->result(0)->type())
      return Rejection{"the fused op's result type differs from the pattern's"};
    std::string resultName = root->result(0)->name();
    graph.replaceAllUsesWith(root->result(0), result);
    graph.eraseNode(root);
    graph.renameValue(result, resultName);
    return matched();
  }

  static void countFusion(PassContext &context, const MaskPlan &masks, const FusedForm &form) {
    context.count("fused");
    if (!form.threeD)
      context.count("in 4-D form");
    if (form.group > 1)
      context.count("grouped-query");
    if (masks.band.above == 0 && !masks.band.isEverything())
      context.count("causal");
    if (masks.band.below != KeyBand::kUnbounded)
      context.count("windowed");
    if (masks.operand)
      context.count("with a mask operand");
    if (masks.fill)
      context.count("with a finite mask fill");
    if (form.cache)
      context.count("after a KV cache");
  }

  MatchStatus rewrite(Graph &graph, const CoreMatch &core, const MaskPlan &masks,
                      PassContext &context) {
    MatchResult<FusedForm> chosen = chooseForm(graph, core, masks);
    if (!chosen)
      return chosen.rejection();
    FusedForm &form = *chosen;
    RewriteBuilder builder(graph, form.root);
    MatchStatus replaced;
    try {
      Node *attention = createAttention(graph, builder, core, masks, form);
      replaced = replaceRoot(graph, form, attention->result(0));
    } catch (const Error &) {
      replaced = Rejection{"shape inference rejects the fused op"};
    }
    if (!replaced) {
      builder.rollBack();
      return replaced;
    }
    const Heads3d *q3 = form.threeD ? &*form.q3 : nullptr, *v3 = form.threeD ? &*form.v3 : nullptr;
    rewireShapeReaders(graph, core, form.v4, q3, v3);
    if (form.group > 1) {
      rewireRepeatedShapeReaders(graph, form.key.repeated, form.key.k4);
      rewireRepeatedShapeReaders(graph, core.v, form.v4);
    }
    countFusion(context, masks, form);
    return matched();
  }
};

} // namespace

} // namespace onnxc::attention

namespace onnxc {

std::unique_ptr<Pass> createFuseAttentionPass() {
  return std::make_unique<attention::FuseAttention>();
}

} // namespace onnxc

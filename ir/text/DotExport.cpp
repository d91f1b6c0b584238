//===- ir/text/DotExport.cpp - Graphviz view of a graph --------------------------===//
//
// Big models carry hundreds of weights; drawing each as its own shape buries
// the ops. Small constants (shape vectors, axes, epsilons) are drawn as notes
// because they explain the node they feed; large ones are listed inside the
// label of the node that uses them instead.
//
// A 6-layer model is hundreds of boxes; what makes it readable is the layer
// structure the exporter wrote into node names (`/encoder/layer.0/attention/
// MatMul`). Each node goes into a cluster named by its scope up to the first
// indexed component (`layer.0`, `h.3`, `layers/2`), or its first scope when
// there is none (`embeddings`); nodes a pass made without a name join the
// cluster of their first operand. Fused ops are filled and labelled with the
// attributes that say what they do (heads, causal, window, epsilon).
//
//===----------------------------------------------------------------------===//
#include "ir/text/DotExport.h"

#include <cctype>
#include <charconv>
#include <map>
#include <unordered_map>

namespace onnxc {

namespace {

/// Constants with more elements than this are folded into their users.
constexpr int64_t kMaxDrawnConstantElements = 16;
/// How many list elements / attributes a label shows before "...".
constexpr size_t kMaxListItems = 6;
constexpr size_t kMaxLabelAttributes = 4;

// Escapes text for a double-quoted DOT string; "\n" stays a DOT line break.
std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out;
}

std::string shortFloat(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), float(value));
  return std::string(buffer, end);
}

template <typename T, typename Format>
std::string shortList(const std::vector<T> &items, Format format) {
  std::string out = "[";
  for (size_t i = 0; i < items.size() && i < kMaxListItems; ++i)
    out += (i ? ", " : "") + format(items[i]);
  if (items.size() > kMaxListItems)
    out += ", ...";
  return out + "]";
}

std::string shortAttribute(const Attribute &attr) {
  switch (attr.kind()) {
  case Attribute::Kind::Int:
    return std::to_string(attr.asInt());
  case Attribute::Kind::Float:
    return shortFloat(attr.asFloat());
  case Attribute::Kind::String:
    return "\"" + attr.asString() + "\"";
  case Attribute::Kind::Ints:
    return shortList(attr.asInts(), [](int64_t v) { return std::to_string(v); });
  case Attribute::Kind::Floats:
    return shortList(attr.asFloats(), shortFloat);
  case Attribute::Kind::Strings:
    return shortList(attr.asStrings(), [](const std::string &v) { return "\"" + v + "\""; });
  case Attribute::Kind::Tensor:
    return "tensor " + attr.asTensor().typeString();
  }
  return "?";
}

std::string constantSummary(const Value *constant) {
  std::string text = constant->name() + ": " + constant->type().str();
  const Tensor &data = constant->constantValue();
  if (data.hasData() && data.numElements() >= 1 && data.numElements() <= int64_t(kMaxListItems)) {
    std::vector<double> values;
    for (int64_t i = 0; i < data.numElements(); ++i)
      values.push_back(data.elementAsDouble(i));
    text += " = " + (data.rank() == 0 ? shortFloat(values[0]) : shortList(values, shortFloat));
  }
  return text;
}

bool isDrawnConstant(const Value *value) {
  return value->isConstant() && value->constantPtr() &&
         value->constantValue().numElements() <= kMaxDrawnConstantElements;
}

bool isFusedOp(OpKind kind) {
  switch (kind) {
  case OpKind::Attention:
  case OpKind::AdditiveAttention:
  case OpKind::LayerNormalization:
  case OpKind::SkipLayerNormalization:
  case OpKind::RMSNormalization:
  case OpKind::Gelu:
  case OpKind::RotaryEmbedding:
  case OpKind::DynamicQuantizedMatMul:
  case OpKind::QuantizedMatMul:
  case OpKind::BlockQuantizedMatMul:
  case OpKind::QuantizedConv:
    return true;
  default:
    return false;
  }
}

/// The few attributes that say what a fused op does, in reading order, with
/// short names: "heads = 12 (kv 4)", "causal", "window = 128", "eps = 1e-12".
std::string fusedAttributes(const Node &node) {
  std::string text;
  auto line = [&](const std::string &item) { text += "\n" + item; };
  if (node.hasAttr("q_num_heads")) {
    int64_t q = node.getInt("q_num_heads", 0), kv = node.getInt("kv_num_heads", q);
    line("heads = " + std::to_string(q) + (kv != q ? " (kv " + std::to_string(kv) + ")" : ""));
  } else if (node.kind() == OpKind::Attention && node.operand(0)->shape().isRanked() &&
             node.operand(0)->shape().rank() == 4) {
    line("heads = " + node.operand(0)->shape()[1].str()); // [b, h, S, d]
  }
  if (node.getInt("is_causal", 0) != 0)
    line("causal");
  if (node.getInt("window", -1) >= 0)
    line("window = " + std::to_string(node.getInt("window", -1)));
  if (node.kind() == OpKind::Attention && node.hasOperand(3))
    line(std::string(node.operand(3)->dtype() == DType::Bool ? "bool" : "additive") + " mask");
  if (node.kind() == OpKind::Attention && node.hasOperand(4))
    line("past kv");
  if (node.getInt("seq_first", 0) != 0)
    line("seq first");
  for (const char *name : {"scale", "mask_fill"})
    if (const Attribute *attr = node.findAttr(name))
      line(std::string(name) + " = " + shortAttribute(*attr));
  if (const Attribute *eps = node.findAttr("epsilon"))
    line("eps = " + shortAttribute(*eps));
  if (const Attribute *approximate = node.findAttr("approximate"))
    line("approximate = " + shortAttribute(*approximate));
  if (const Attribute *rotary = node.findAttr("rotary_embedding_dim"))
    line("rotary dim = " + shortAttribute(*rotary));
  return text;
}

std::string nodeLabel(const Node &node) {
  std::string label(node.opName());
  if (isFusedOp(node.kind())) {
    label += fusedAttributes(node);
    for (const Value *operand : node.operands())
      if (operand && operand->isConstant() && !isDrawnConstant(operand))
        label += "\n" + operand->name() + ": " + operand->type().str();
    return label;
  }
  size_t shown = 0;
  for (const auto &[name, attr] : node.attributes()) {
    if (shown++ == kMaxLabelAttributes) {
      label += "\n...";
      break;
    }
    label += "\n" + name + " = " + shortAttribute(attr);
  }
  for (const Value *operand : node.operands())
    if (operand && operand->isConstant() && !isDrawnConstant(operand))
      label += "\n" + operand->name() + ": " + operand->type().str();
  return label;
}

bool isIndexed(const std::string &component) {
  if (component.empty() || !std::isdigit(static_cast<unsigned char>(component.back())))
    return false;
  size_t digits = component.find_last_not_of("0123456789");
  return digits == std::string::npos || component[digits] == '.' || component[digits] == '_';
}

/// The scope components of a node name, without the op's own name:
/// "/m/encoder/layer.0/attn/MatMul" -> [m, encoder, layer.0, attn].
std::vector<std::string> scopeParts(const std::string &nodeName) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= nodeName.size()) {
    size_t slash = nodeName.find('/', start);
    if (slash == std::string::npos)
      slash = nodeName.size();
    if (slash > start)
      parts.push_back(nodeName.substr(start, slash - start));
    start = slash + 1;
  }
  if (!parts.empty())
    parts.pop_back();
  return parts;
}

/// The first scope every scoped node shares (torch's "/m/..." wrapper), or "".
std::string commonRoot(const Graph &graph) {
  std::string root;
  for (const auto &node : graph.nodes()) {
    std::vector<std::string> parts = scopeParts(node->name());
    if (parts.empty())
      continue;
    if (root.empty())
      root = parts[0];
    else if (parts[0] != root)
      return "";
  }
  return root;
}

/// The cluster of a node name: its scope up to the first indexed component
/// ("encoder/layer.0"), else its first scope ("embeddings"), without the
/// common root; "" when it has no scope.
std::string layerScope(const std::string &nodeName, const std::string &root) {
  std::vector<std::string> parts = scopeParts(nodeName);
  if (!parts.empty() && parts[0] == root && parts.size() > 1)
    parts.erase(parts.begin());
  std::string scope;
  for (const std::string &part : parts) {
    scope += (scope.empty() ? "" : "/") + part;
    if (isIndexed(part))
      return scope;
  }
  return parts.empty() ? "" : parts.front();
}

/// Where each drawn value comes from: an input, a constant note or a node.
using SourceIds = std::unordered_map<const Value *, std::string>;

/// The inputs, and the constants worth drawing as notes.
void writeSources(const Graph &graph, std::ostream &os, SourceIds &source) {
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value *input = graph.inputs()[i];
    std::string id = "in" + std::to_string(i);
    source[input] = id;
    os << "  " << id << " [shape=ellipse, style=filled, fillcolor=\"#dde8f8\", label=\""
       << escape(input->name() + "\n" + input->type().str()) << "\"];\n";
  }
  for (size_t i = 0; i < graph.constants().size(); ++i) {
    const Value *constant = graph.constants()[i];
    if (!isDrawnConstant(constant))
      continue;
    std::string id = "c" + std::to_string(i);
    source[constant] = id;
    os << "  " << id << " [shape=note, fontsize=8, label=\"" << escape(constantSummary(constant))
       << "\"];\n";
  }
}

/// The nodes: those without a scope, then clusters in the order their
/// first node appears, each with its nodes.
void writeNodes(const Graph &graph, std::ostream &os, SourceIds &source) {
  std::unordered_map<const Node *, std::string> scopeOf;
  std::map<std::string, size_t> clusterIndex;
  std::vector<std::pair<std::string, std::vector<std::string>>> clusters;
  std::vector<std::string> unclustered;
  const std::string root = commonRoot(graph);
  size_t nodeIndex = 0;
  for (const auto &node : graph.nodes()) {
    std::string id = "n" + std::to_string(nodeIndex++);
    std::string scope = layerScope(node->name(), root);
    if (node->name().empty() && node->operand(0) && node->operand(0)->definingNode())
      scope = scopeOf[node->operand(0)->definingNode()];
    scopeOf[node.get()] = scope;
    std::string line = id + " [shape=box, " +
                       (isFusedOp(node->kind()) ? "style=filled, fillcolor=\"#fde9c8\", " : "") +
                       "label=\"" + escape(nodeLabel(*node)) + "\"];";
    if (scope.empty()) {
      unclustered.push_back(line);
    } else {
      auto [it, added] = clusterIndex.emplace(scope, clusters.size());
      if (added)
        clusters.push_back({scope, {}});
      clusters[it->second].second.push_back(line);
    }
    for (const Value *result : node->results())
      source[result] = id;
  }
  for (const std::string &line : unclustered)
    os << "  " << line << "\n";
  for (size_t c = 0; c < clusters.size(); ++c) {
    os << "  subgraph cluster_" << c << " {\n";
    os << "    label=\"" << escape(clusters[c].first) << "\";\n";
    os << "    style=rounded; color=\"#8a8a8a\"; fontname=\"monospace\";\n";
    for (const std::string &line : clusters[c].second)
      os << "    " << line << "\n";
    os << "  }\n";
  }
}

/// The edges into every node's operands, and the outputs with theirs.
void writeEdges(const Graph &graph, std::ostream &os, const SourceIds &source) {
  auto edge = [&](const Value *value, const std::string &target) {
    auto it = source.find(value);
    if (it == source.end())
      return; // a folded constant, or a broken graph: nothing to draw
    os << "  " << it->second << " -> " << target << " [label=\"" << escape(value->type().str())
       << "\"];\n";
  };
  size_t nodeIndex = 0;
  for (const auto &node : graph.nodes()) {
    std::string id = "n" + std::to_string(nodeIndex++);
    for (const Value *operand : node->operands())
      if (operand)
        edge(operand, id);
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const GraphOutput &output = graph.outputs()[i];
    std::string id = "out" + std::to_string(i);
    os << "  " << id << " [shape=ellipse, style=filled, fillcolor=\"#e0f0d8\", label=\""
       << escape(output.name) << "\"];\n";
    if (output.value)
      edge(output.value, id);
  }
}

} // namespace

void exportDot(const Graph &graph, std::ostream &os) {
  os << "digraph \"" << escape(graph.name()) << "\" {\n";
  os << "  node [fontname=\"monospace\", fontsize=10];\n";
  os << "  edge [fontname=\"monospace\", fontsize=9];\n";
  SourceIds source;
  writeSources(graph, os, source);
  writeNodes(graph, os, source);
  writeEdges(graph, os, source);
  os << "}\n";
}

} // namespace onnxc

//===- ir/DotExport.cpp - Graphviz view of a graph --------------------------===//
//
// Big models carry hundreds of weights; drawing each as its own shape buries
// the ops. Small constants (shape vectors, axes, epsilons) are drawn as notes
// because they explain the node they feed; large ones are listed inside the
// label of the node that uses them instead.
//
//===----------------------------------------------------------------------===//
#include "ir/DotExport.h"

#include <charconv>
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
  case Attribute::Kind::Int: return std::to_string(attr.asInt());
  case Attribute::Kind::Float: return shortFloat(attr.asFloat());
  case Attribute::Kind::String: return "\"" + attr.asString() + "\"";
  case Attribute::Kind::Ints:
    return shortList(attr.asInts(), [](int64_t v) { return std::to_string(v); });
  case Attribute::Kind::Floats: return shortList(attr.asFloats(), shortFloat);
  case Attribute::Kind::Strings:
    return shortList(attr.asStrings(), [](const std::string &v) { return "\"" + v + "\""; });
  case Attribute::Kind::Tensor: return "tensor " + attr.asTensor().typeString();
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

std::string nodeLabel(const Node &node) {
  std::string label(node.opName());
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

} // namespace

void exportDot(const Graph &graph, std::ostream &os) {
  os << "digraph \"" << escape(graph.name()) << "\" {\n";
  os << "  node [fontname=\"monospace\", fontsize=10];\n";
  os << "  edge [fontname=\"monospace\", fontsize=9];\n";

  // Where each drawn value comes from: an input, a constant note or a node.
  std::unordered_map<const Value *, std::string> source;
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
  size_t nodeIndex = 0;
  for (const auto &node : graph.nodes()) {
    std::string id = "n" + std::to_string(nodeIndex++);
    os << "  " << id << " [shape=box, label=\"" << escape(nodeLabel(*node)) << "\"];\n";
    for (const Value *result : node->results())
      source[result] = id;
  }

  auto edge = [&](const Value *value, const std::string &target) {
    auto it = source.find(value);
    if (it == source.end())
      return; // a folded constant, or a broken graph: nothing to draw
    os << "  " << it->second << " -> " << target << " [label=\"" << escape(value->type().str())
       << "\"];\n";
  };
  nodeIndex = 0;
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
  os << "}\n";
}

} // namespace onnxc

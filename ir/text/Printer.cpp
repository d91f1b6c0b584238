//===- ir/text/Printer.cpp - The textual form of the IR --------------------------===//
//
// Writes the grammar of docs/IR.md. Everything here is chosen so that the
// parser reads back exactly what was printed: floats always carry '.', 'e',
// inf or nan (so they never read back as ints), names that are not plain
// print quoted, and attributes print in map (= name) order.
//
//===----------------------------------------------------------------------===//
#include "ir/text/Printer.h"

#include <cctype>
#include <charconv>
#include <sstream>

namespace onnxc {

namespace {

bool isBareNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// Value and graph names follow '%' or '@', so any non-empty run of bare
// characters (leading digits included) is unambiguous.
bool isBareName(const std::string &name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!isBareNameChar(c))
      return false;
  return true;
}

// Attribute names stand alone, so they must also look like identifiers.
bool isBareIdentifier(const std::string &name) {
  return isBareName(name) && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
}

void printQuoted(std::ostream &os, const std::string &text) {
  static const char *kHex = "0123456789abcdef";
  os << '"';
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (c == '\n')
      os << "\\n";
    else if (c == '\t')
      os << "\\t";
    else if (u < 0x20 || u == 0x7f)
      os << "\\x" << kHex[u >> 4] << kHex[u & 15];
    else
      os << c; // UTF-8 passes through unchanged
  }
  os << '"';
}

void printName(std::ostream &os, char sigil, const std::string &name) {
  os << sigil;
  if (isBareName(name))
    os << name;
  else
    printQuoted(os, name);
}

void printValueRef(std::ostream &os, const Value *value) {
  if (value)
    printName(os, '%', value->name());
  else
    os << '_';
}

// Shortest round-tripping text; ".0" is added when the text would otherwise
// read back as an integer ("100", "-0").
template <typename F> void printFloating(std::ostream &os, F value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string_view text(buffer, size_t(end - buffer));
  os << text;
  if (text.find_first_of(".en") == std::string_view::npos)
    os << ".0";
}

void printElement(std::ostream &os, const Tensor &tensor, int64_t i) {
  switch (tensor.dtype()) {
  case DType::Bool:
    os << (tensor.data<uint8_t>()[i] ? "true" : "false");
    return;
  case DType::F32:
    printFloating(os, tensor.data<float>()[i]);
    return;
  case DType::F64:
    printFloating(os, tensor.data<double>()[i]);
    return;
  case DType::F16:
    printFloating(os, halfToFloat(tensor.data<uint16_t>()[i]));
    return;
  case DType::BF16:
    printFloating(os, bfloat16ToFloat(tensor.data<uint16_t>()[i]));
    return;
  case DType::U64:
    os << tensor.data<uint64_t>()[i];
    return;
  default:
    os << tensor.elementAsInt64(i);
    return;
  }
}

void printDense(std::ostream &os, const Tensor &tensor, const PrintOptions &options) {
  os << "dense<";
  int64_t count = tensor.numElements();
  if (!tensor.hasData() || tensor.dtype() == DType::Unknown) {
    os << "elided";
  } else if (count == 0) {
    os << "[]";
  } else if (options.printAllConstants) {
    static const char *kHex = "0123456789abcdef";
    const auto *bytes = static_cast<const uint8_t *>(tensor.rawData());
    os << "0x";
    for (size_t i = 0; i < tensor.byteSize(); ++i)
      os << kHex[bytes[i] >> 4] << kHex[bytes[i] & 15];
  } else if (size_t(count) > options.maxInlineElements) {
    os << "elided";
  } else if (tensor.rank() == 0) {
    printElement(os, tensor, 0);
  } else {
    os << '[';
    for (int64_t i = 0; i < count; ++i) {
      if (i)
        os << ", ";
      printElement(os, tensor, i);
    }
    os << ']';
  }
  os << '>';
}

template <typename T, typename PrintOne>
void printList(std::ostream &os, const std::vector<T> &items, const char *emptyKind,
               PrintOne printOne) {
  if (items.empty()) {
    os << "[] : " << emptyKind;
    return;
  }
  os << '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i)
      os << ", ";
    printOne(items[i]);
  }
  os << ']';
}

void printAttribute(std::ostream &os, const Attribute &attr, const PrintOptions &options) {
  switch (attr.kind()) {
  case Attribute::Kind::Int:
    os << attr.asInt();
    return;
  case Attribute::Kind::Float:
    printFloating(os, attr.asFloat());
    return;
  case Attribute::Kind::String:
    printQuoted(os, attr.asString());
    return;
  case Attribute::Kind::Ints:
    printList(os, attr.asInts(), "ints", [&](int64_t v) { os << v; });
    return;
  case Attribute::Kind::Floats:
    printList(os, attr.asFloats(), "floats", [&](float v) { printFloating(os, v); });
    return;
  case Attribute::Kind::Strings:
    printList(os, attr.asStrings(), "strings", [&](const std::string &v) { printQuoted(os, v); });
    return;
  case Attribute::Kind::Tensor:
    printDense(os, attr.asTensor(), options);
    os << " : " << attr.asTensor().typeString();
    return;
  }
}

bool isFullyUnknown(const Value *value) {
  return value->dtype() == DType::Unknown && !value->shape().isRanked();
}

void printGraphAt(std::ostream &os, const Graph &graph, const PrintOptions &options,
                  const std::string &indent);

void printNodeTo(std::ostream &os, const Node &node, const PrintOptions &options,
                 const std::string &indent) {
  for (size_t i = 0; i < node.numResults(); ++i) {
    if (i)
      os << ", ";
    printValueRef(os, node.result(i));
  }
  if (node.numResults())
    os << " = ";
  os << node.opName() << '(';
  for (size_t i = 0; i < node.numOperands(); ++i) {
    if (i)
      os << ", ";
    printValueRef(os, node.operand(i));
  }
  os << ')';

  if (!node.attributes().empty()) {
    os << " {";
    bool first = true;
    for (const auto &[name, attr] : node.attributes()) {
      os << (first ? "" : ", ");
      first = false;
      if (isBareIdentifier(name))
        os << name;
      else
        printQuoted(os, name);
      os << " = ";
      printAttribute(os, attr, options);
    }
    os << '}';
  }

  bool anyKnown = false;
  for (const Value *result : node.results())
    anyKnown |= !isFullyUnknown(result);
  if (anyKnown) {
    os << " : ";
    for (size_t i = 0; i < node.numResults(); ++i)
      os << (i ? ", " : "") << node.result(i)->type().str();
  }

  if (options.printNodeNames && !node.name().empty()) {
    os << " loc(";
    printQuoted(os, node.name());
    os << ')';
  }

  // Regions follow on the same line and close at the node's indentation:
  // `then_branch = graph @then(...) -> (...) {` ... `}`.
  for (const auto &[name, body] : node.subgraphs()) {
    os << ' ';
    if (isBareIdentifier(name))
      os << name;
    else
      printQuoted(os, name);
    os << " = ";
    printGraphAt(os, *body, options, indent);
  }
}

void printHeader(std::ostream &os, const Graph &graph) {
  os << "graph ";
  printName(os, '@', graph.name());
  os << '(';
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value *input = graph.inputs()[i];
    os << (i ? ", " : "");
    printValueRef(os, input);
    os << ": " << input->type().str();
  }
  os << ") -> (";
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const GraphOutput &output = graph.outputs()[i];
    os << (i ? ", " : "");
    printName(os, '%', output.name);
    // A broken graph (null output) still prints, so passes can be debugged.
    os << ": " << (output.value ? output.value->type() : TensorType()).str();
  }
  os << ") {\n";
}

// `indent` is the indentation of the line the graph opens on; its body is
// two spaces deeper and its closing brace at `indent`, without a newline
// after it when nested (the enclosing node line ends there).
void printGraphAt(std::ostream &os, const Graph &graph, const PrintOptions &options,
                  const std::string &indent) {
  std::string inner = indent + "  ";
  printHeader(os, graph);
  for (const Value *constant : graph.constants()) {
    os << inner << "const ";
    printValueRef(os, constant);
    os << ": " << constant->type().str() << " = ";
    if (constant->constantPtr())
      printDense(os, constant->constantValue(), options);
    else
      os << "dense<elided>";
    os << '\n';
  }
  for (const ShapeAssumption &assumption : graph.assumptions()) {
    os << inner << "assume [" << assumption.expr.str() << "] "
       << (assumption.kind == ShapeAssumption::Kind::Zero ? "==" : ">=") << " 0 ";
    printQuoted(os, assumption.message);
    os << '\n';
  }
  for (const auto &node : graph.nodes()) {
    os << inner;
    printNodeTo(os, *node, options, inner);
    os << '\n';
  }
  os << inner << "return";
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    os << (i ? ", " : " ");
    printValueRef(os, graph.outputs()[i].value);
  }
  os << '\n' << indent << '}';
}

} // namespace

void printGraph(const Graph &graph, std::ostream &os, const PrintOptions &options) {
  printGraphAt(os, graph, options, "");
  os << '\n';
}

std::string printGraphToString(const Graph &graph, const PrintOptions &options) {
  std::ostringstream os;
  printGraph(graph, os, options);
  return os.str();
}

std::string printNode(const Node &node, const PrintOptions &options) {
  std::ostringstream os;
  printNodeTo(os, node, options, "");
  return os.str();
}

} // namespace onnxc

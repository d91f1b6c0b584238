//===- ir/text/Parser.cpp - Reading the textual IR -------------------------------===//
//
// Recursive descent over the tokens of ir/text/Lexer.h, one function per grammar
// rule of docs/IR.md. Values are created as their definitions are read, so a
// use before the definition is reported as an undefined value, which is also
// what keeps parsed graphs free of cycles. Number tokens and dense literals
// become values in ir/text/ParseLiterals.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/text/Parser.h"

#include "ir/Error.h"
#include "ir/text/Lexer.h"
#include "ir/text/ParseLiterals.h"

#include <fstream>
#include <sstream>

namespace onnxc {

namespace {

using Kind = IRToken::Kind;

struct DeclaredOutput {
  IRToken name;
  TensorType type;
};

class IRParser {
public:
  IRParser(std::string_view text, const std::string &fileName) : lexer_(text, fileName) {
    consume();
  }

  std::unique_ptr<Graph> parse();

private:
  // --- tokens -----------------------------------------------------------------
  void consume() { tok_ = lexer_.next(); }
  bool consumeIf(Kind kind) {
    if (tok_.kind != kind)
      return false;
    consume();
    return true;
  }
  bool atKeyword(std::string_view word) const {
    return tok_.kind == Kind::Identifier && tok_.text == word;
  }
  [[noreturn]] void errorAt(const IRToken &token, const std::string &message) const {
    lexer_.error(token.line, token.column, message);
  }
  IRToken expect(Kind kind) {
    if (tok_.kind != kind)
      errorAt(tok_, std::string("expected ") + tokenKindName(kind));
    IRToken token = std::move(tok_);
    consume();
    return token;
  }
  void expectKeyword(std::string_view word) {
    if (!atKeyword(word))
      errorAt(tok_, "expected '" + std::string(word) + "'");
    consume();
  }

  // --- grammar ----------------------------------------------------------------
  std::unique_ptr<Graph> parseGraphDefinition();
  void parseRegions(Node &node);
  void parseHeader();
  TensorType parseType();
  Shape parseShapeBody(const IRToken &open);
  DenseLiteral parseDenseLiteral();
  void parseConstant();
  void parseAssumption();
  void parseNode();
  AttributeMap parseAttributes();
  Attribute parseAttributeValue();
  Attribute parseAttributeList();
  void parseReturn();

  // --- values -----------------------------------------------------------------
  void checkUndefined(const IRToken &name) {
    if (graph_->findValue(name.text))
      errorAt(name, "value '%" + name.text + "' defined twice");
  }
  Value *lookup(const IRToken &name) {
    Value *value = graph_->findValue(name.text);
    if (!value)
      errorAt(name, "use of undefined value '%" + name.text + "'");
    return value;
  }

  IRLexer lexer_;
  IRToken tok_;
  std::unique_ptr<Graph> graph_;
  std::vector<DeclaredOutput> outputs_;
  unsigned regionDepth_ = 0;
};

/// Regions nest graphs in graphs; the parser recurses once per level, so
/// hostile text could otherwise exhaust the stack.
constexpr unsigned kMaxRegionDepth = 64;

std::unique_ptr<Graph> IRParser::parse() {
  std::unique_ptr<Graph> graph = parseGraphDefinition();
  if (tok_.kind != Kind::EndOfFile)
    errorAt(tok_, "expected end of input after the graph");
  return graph;
}

// A graph, top-level or the region of a node: the outer graph being built
// is set aside while the nested one is read (regions see no outer values).
std::unique_ptr<Graph> IRParser::parseGraphDefinition() {
  std::unique_ptr<Graph> outerGraph = std::move(graph_);
  std::vector<DeclaredOutput> outerOutputs = std::move(outputs_);
  outputs_.clear();
  parseHeader();
  while (atKeyword("const"))
    parseConstant();
  IRToken firstAssumption = tok_;
  bool anyAssumption = atKeyword("assume");
  while (atKeyword("assume"))
    parseAssumption();
  if (anyAssumption) {
    try {
      checkAssumptionsCanHold(graph_->assumptions());
    } catch (const Error &error) {
      errorAt(firstAssumption, error.what());
    }
  }
  while (!atKeyword("return")) {
    if (atKeyword("const"))
      errorAt(tok_, "constants must come before the first node");
    if (tok_.kind != Kind::ValueName)
      errorAt(tok_, "expected a node or 'return'");
    parseNode();
  }
  parseReturn();
  expect(Kind::RBrace);
  std::unique_ptr<Graph> graph = std::move(graph_);
  graph_ = std::move(outerGraph);
  outputs_ = std::move(outerOutputs);
  return graph;
}

// NAME '=' graph, repeated: the subgraphs of If, Loop and Scan.
void IRParser::parseRegions(Node &node) {
  // The statements after a node start with '%', 'return', or (misplaced)
  // 'const'/'assume', which keep their own diagnostics.
  auto atRegionName = [&] {
    return (tok_.kind == Kind::Identifier && !atKeyword("return") && !atKeyword("const") &&
            !atKeyword("assume")) ||
           tok_.kind == Kind::String;
  };
  while (atRegionName()) {
    IRToken name = tok_;
    consume();
    if (node.subgraph(name.text))
      errorAt(name, "region '" + name.text + "' given twice");
    expect(Kind::Equal);
    if (!atKeyword("graph"))
      errorAt(tok_, "expected 'graph' after the region name '" + name.text + "'");
    if (regionDepth_ == kMaxRegionDepth)
      errorAt(name, "regions nest deeper than " + std::to_string(kMaxRegionDepth) + " levels");
    ++regionDepth_;
    std::unique_ptr<Graph> body = parseGraphDefinition();
    --regionDepth_;
    node.setSubgraph(name.text, std::move(body));
  }
}

void IRParser::parseHeader() {
  expectKeyword("graph");
  graph_ = std::make_unique<Graph>(expect(Kind::GraphName).text);
  expect(Kind::LParen);
  if (tok_.kind != Kind::RParen) {
    do {
      IRToken name = expect(Kind::ValueName);
      checkUndefined(name);
      expect(Kind::Colon);
      graph_->addInput(name.text, parseType());
    } while (consumeIf(Kind::Comma));
  }
  expect(Kind::RParen);
  expect(Kind::Arrow);
  expect(Kind::LParen);
  if (tok_.kind != Kind::RParen) {
    do {
      IRToken name = expect(Kind::ValueName);
      for (const DeclaredOutput &other : outputs_)
        if (other.name.text == name.text)
          errorAt(name, "output '%" + name.text + "' declared twice");
      expect(Kind::Colon);
      outputs_.push_back({name, parseType()});
    } while (consumeIf(Kind::Comma));
  }
  expect(Kind::RParen);
  expect(Kind::LBrace);
}

TensorType IRParser::parseType() {
  if (tok_.kind != Kind::Identifier)
    errorAt(tok_, "expected a type");
  std::optional<DType> dtype = parseDType(tok_.text);
  if (!dtype)
    errorAt(tok_, "unknown dtype '" + tok_.text + "'");
  consume();
  if (tok_.kind != Kind::LSquare)
    errorAt(tok_, "expected '['");
  // No consume(): the lexer must not tokenize the dims; they go to Dim::parse.
  IRToken open = tok_;
  Shape shape = parseShapeBody(open);
  consume();
  return {*dtype, std::move(shape)};
}

Shape IRParser::parseShapeBody(const IRToken &open) {
  std::string body = lexer_.rawUntilClosingSquare();
  size_t first = body.find_first_not_of(" \t\r");
  if (first == std::string::npos)
    return Shape::scalar();
  if (body.substr(first, body.find_last_not_of(" \t\r") - first + 1) == "*")
    return Shape::unranked();

  std::vector<Dim> dims;
  size_t pieceStart = 0;
  int depth = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i < body.size() && body[i] != ',') {
      depth += body[i] == '(' ? 1 : body[i] == ')' ? -1 : 0;
      continue;
    }
    if (i < body.size() && depth > 0)
      continue;
    std::string piece = body.substr(pieceStart, i - pieceStart);
    size_t b = piece.find_first_not_of(" \t\r"), e = piece.find_last_not_of(" \t\r");
    IRToken at = open;
    at.column += unsigned(pieceStart + (b == std::string::npos ? 0 : b)) + 1;
    if (b == std::string::npos)
      errorAt(at, "expected a dimension");
    // Trimmed: Dim::parse reads "?" only as the whole text.
    piece = piece.substr(b, e - b + 1);
    std::optional<Dim> dim;
    try {
      dim = Dim::parse(piece);
    } catch (const Error &e) {
      errorAt(at, e.what());
    }
    if (!dim)
      errorAt(at, "invalid dimension '" + piece + "'");
    dims.push_back(std::move(*dim));
    pieceStart = i + 1;
  }
  return Shape(std::move(dims));
}

DenseLiteral IRParser::parseDenseLiteral() {
  DenseLiteral literal;
  literal.start = tok_;
  expectKeyword("dense");
  expect(Kind::Less);
  auto isScalarToken = [&] {
    return tok_.kind == Kind::Integer || tok_.kind == Kind::Float || isFloatWord(tok_) ||
           atKeyword("true") || atKeyword("false");
  };
  if (atKeyword("elided")) {
    consume();
  } else if (tok_.kind == Kind::Hex) {
    literal.form = DenseLiteral::Form::Hex;
    literal.hexDigits = tok_.text;
    consume();
  } else if (consumeIf(Kind::LSquare)) {
    literal.form = DenseLiteral::Form::List;
    if (tok_.kind != Kind::RSquare) {
      do {
        if (!isScalarToken())
          errorAt(tok_, "expected a number, 'true' or 'false'");
        literal.elements.push_back(tok_);
        consume();
      } while (consumeIf(Kind::Comma));
    }
    expect(Kind::RSquare);
  } else if (isScalarToken()) {
    literal.form = DenseLiteral::Form::Scalar;
    literal.elements.push_back(tok_);
    consume();
  } else {
    errorAt(tok_, "expected 'elided', a hex literal, a scalar or '[' in dense<...>");
  }
  expect(Kind::Greater);
  return literal;
}

void IRParser::parseConstant() {
  expectKeyword("const");
  IRToken name = expect(Kind::ValueName);
  checkUndefined(name);
  expect(Kind::Colon);
  IRToken typeToken = tok_;
  TensorType type = parseType();
  expect(Kind::Equal);
  if (!atKeyword("dense"))
    errorAt(tok_, "expected 'dense'");
  DenseLiteral literal = parseDenseLiteral();
  graph_->addConstant(name.text, buildTensor(lexer_, literal, type, typeToken));
}

// assume [DIM] == 0 "message"  |  assume [DIM] >= 0 "message"
void IRParser::parseAssumption() {
  expectKeyword("assume");
  if (tok_.kind != Kind::LSquare)
    errorAt(tok_, "expected '[' and a dimension expression after 'assume'");
  IRToken open = tok_;
  Shape body = parseShapeBody(open);
  consume();
  if (body.rank() != 1 || body[0].isUnknown())
    errorAt(open, "an assumption takes one known dimension expression");
  ShapeAssumption assumption;
  assumption.expr = body[0];
  if (consumeIf(Kind::Greater))
    assumption.kind = ShapeAssumption::Kind::NonNegative;
  else if (consumeIf(Kind::Equal))
    assumption.kind = ShapeAssumption::Kind::Zero;
  else
    errorAt(tok_, "expected '==' or '>=' in an assumption");
  expect(Kind::Equal);
  IRToken zero = expect(Kind::Integer);
  if (zero.text != "0")
    errorAt(zero, "an assumption compares with 0");
  assumption.message = expect(Kind::String).text;
  graph_->addAssumption(std::move(assumption));
}

void IRParser::parseNode() {
  std::vector<IRToken> resultNames;
  do {
    IRToken name = expect(Kind::ValueName);
    checkUndefined(name);
    for (const IRToken &earlier : resultNames)
      if (earlier.text == name.text)
        errorAt(name, "value '%" + name.text + "' defined twice");
    if (name.text.empty())
      errorAt(name, "a node result needs a non-empty name");
    resultNames.push_back(std::move(name));
  } while (consumeIf(Kind::Comma));
  expect(Kind::Equal);

  if (tok_.kind != Kind::Identifier)
    errorAt(tok_, "expected an op name");
  std::optional<OpKind> kind = parseOpKind(tok_.text);
  if (!kind)
    errorAt(tok_, "unknown op '" + tok_.text + "'");
  consume();

  std::vector<Value *> operands;
  expect(Kind::LParen);
  if (tok_.kind != Kind::RParen) {
    do {
      if (atKeyword("_")) {
        operands.push_back(nullptr);
        consume();
      } else {
        operands.push_back(lookup(expect(Kind::ValueName)));
      }
    } while (consumeIf(Kind::Comma));
  }
  expect(Kind::RParen);

  AttributeMap attributes = parseAttributes();

  std::vector<TensorType> types;
  IRToken typesStart = tok_;
  if (consumeIf(Kind::Colon)) {
    do
      types.push_back(parseType());
    while (consumeIf(Kind::Comma));
    if (types.size() != resultNames.size())
      errorAt(typesStart, "expected " + std::to_string(resultNames.size()) + " result types, got " +
                              std::to_string(types.size()));
  }

  std::string nodeName;
  if (atKeyword("loc")) {
    consume();
    expect(Kind::LParen);
    nodeName = expect(Kind::String).text;
    expect(Kind::RParen);
  }

  std::vector<std::string> names;
  for (const IRToken &token : resultNames)
    names.push_back(token.text);
  Node *node = graph_->createNode(*kind, operands, unsigned(names.size()), nodeName, names);
  for (const auto &[name, value] : attributes)
    node->setAttr(name, value);
  for (size_t i = 0; i < types.size(); ++i)
    node->result(i)->setType(types[i]);
  parseRegions(*node);
}

AttributeMap IRParser::parseAttributes() {
  AttributeMap attributes;
  if (!consumeIf(Kind::LBrace))
    return attributes;
  while (tok_.kind != Kind::RBrace) {
    if (!attributes.empty())
      expect(Kind::Comma);
    if (tok_.kind != Kind::Identifier && tok_.kind != Kind::String)
      errorAt(tok_, "expected an attribute name");
    IRToken name = tok_;
    consume();
    expect(Kind::Equal);
    if (!attributes.emplace(name.text, parseAttributeValue()).second)
      errorAt(name, "attribute '" + name.text + "' given twice");
  }
  consume();
  return attributes;
}

Attribute IRParser::parseAttributeValue() {
  IRToken token = tok_;
  switch (token.kind) {
  case Kind::Integer: {
    consume();
    int64_t value = 0;
    if (!parseWhole(token.text, value))
      errorAt(token, "integer " + token.text + " out of range");
    return Attribute(value);
  }
  case Kind::Float:
    consume();
    return Attribute(parseFloatToken(lexer_, token));
  case Kind::String:
    consume();
    return Attribute(token.text);
  case Kind::LSquare:
    return parseAttributeList();
  default:
    break;
  }
  if (isFloatWord(token)) {
    consume();
    return Attribute(parseFloatToken(lexer_, token));
  }
  if (atKeyword("dense")) {
    DenseLiteral literal = parseDenseLiteral();
    expect(Kind::Colon);
    IRToken typeToken = tok_;
    TensorType type = parseType();
    return Attribute(buildTensor(lexer_, literal, type, typeToken));
  }
  errorAt(token, "expected an attribute value");
}

// A list takes its kind from its elements: all ints, numbers with at least
// one float, or all strings. An empty list names its kind: `[] : ints`.
Attribute IRParser::parseAttributeList() {
  expect(Kind::LSquare);
  if (consumeIf(Kind::RSquare)) {
    expect(Kind::Colon);
    if (atKeyword("ints") || atKeyword("floats") || atKeyword("strings")) {
      std::string listKind = tok_.text;
      consume();
      if (listKind == "ints")
        return Attribute(std::vector<int64_t>{});
      if (listKind == "floats")
        return Attribute(std::vector<float>{});
      return Attribute(std::vector<std::string>{});
    }
    errorAt(tok_, "expected 'ints', 'floats' or 'strings' after an empty list");
  }
  std::vector<IRToken> items;
  do {
    if (tok_.kind != Kind::String && tok_.kind != Kind::Integer && tok_.kind != Kind::Float &&
        !isFloatWord(tok_))
      errorAt(tok_, "expected a number or a string in an attribute list");
    items.push_back(tok_);
    consume();
  } while (consumeIf(Kind::Comma));
  expect(Kind::RSquare);

  bool allStrings = true, allInts = true, allNumbers = true;
  for (const IRToken &item : items) {
    allStrings &= item.kind == Kind::String;
    allInts &= item.kind == Kind::Integer;
    allNumbers &= item.kind == Kind::Integer || item.kind == Kind::Float || isFloatWord(item);
  }
  if (allStrings) {
    std::vector<std::string> values;
    for (const IRToken &item : items)
      values.push_back(item.text);
    return Attribute(std::move(values));
  }
  if (allInts) {
    std::vector<int64_t> values(items.size());
    for (size_t i = 0; i < items.size(); ++i)
      if (!parseWhole(items[i].text, values[i]))
        errorAt(items[i], "integer " + items[i].text + " out of range");
    return Attribute(std::move(values));
  }
  if (allNumbers) {
    std::vector<float> values;
    for (const IRToken &item : items)
      values.push_back(parseFloatToken(lexer_, item));
    return Attribute(std::move(values));
  }
  errorAt(items.front(), "attribute list mixes strings and numbers");
}

void IRParser::parseReturn() {
  IRToken returnToken = tok_;
  expectKeyword("return");
  std::vector<IRToken> values;
  if (tok_.kind != Kind::RBrace) {
    do {
      if (atKeyword("_"))
        errorAt(tok_, "a graph output must be bound to a value");
      values.push_back(expect(Kind::ValueName));
    } while (consumeIf(Kind::Comma));
  }
  if (values.size() != outputs_.size())
    errorAt(returnToken, "return has " + std::to_string(values.size()) +
                             " values, the graph declares " + std::to_string(outputs_.size()) +
                             " outputs");
  for (size_t i = 0; i < values.size(); ++i) {
    Value *value = lookup(values[i]);
    const DeclaredOutput &declared = outputs_[i];
    // Hand-written tests may leave result types to shape inference and state
    // only the output types; the declared type then fills the unknown one.
    if (value->dtype() == DType::Unknown && !value->shape().isRanked())
      value->setType(declared.type);
    else if (value->type() != declared.type)
      errorAt(values[i], "output '%" + declared.name.text + "' is declared " + declared.type.str() +
                             " but '%" + value->name() + "' is " + value->type().str());
    graph_->addOutput(declared.name.text, value);
  }
}

} // namespace

std::unique_ptr<Graph> parseGraph(std::string_view text, const std::string &fileName) {
  return IRParser(text, fileName).parse();
}

std::unique_ptr<Graph> parseGraphFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, ": cannot open file");
  std::ostringstream contents;
  contents << in.rdbuf();
  return parseGraph(contents.str(), path);
}

} // namespace onnxc

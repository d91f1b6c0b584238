//===- text/chat/Ast.h - The tree a chat template parses to ----------------===//
//
// Two node kinds, expressions and statements, each a tagged struct: the
// subset is small enough that one evaluator switch per kind reads better
// than a class per node. Every node keeps its template line for errors.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/chat/Value.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace onnxc::text::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Literal,   // value
  Name,      // name
  Attribute, // children[0].name
  Item,      // children[0][children[1]]
  Slice,     // children[0][children[1]:children[2]:children[3]] (null = omitted)
  Call,      // children[0](children[1..], keywords)
  Filter,    // children[0] | name(children[1..], keywords)
  Test,      // children[0] is [not] name(children[1..]); negated
  Unary,     // op children[0]: "-", "+", "not"
  Binary,    // children[0] op children[1]: + - * / // % ** ~ and or
  Compare,   // children[0] ops[0] children[1] ops[1] children[2] ... (chained)
  Condition, // children[1] if children[0] else children[2] (children[2] may be null)
  List,      // [children...] and tuples
  Dict,      // {keys[i]: children[i]}
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;                   // Literal
  std::string name;              // Name, Attribute, Filter, Test, Unary/Binary operator
  bool negated = false;          // Test
  std::vector<ExprPtr> children; // operands, arguments; may hold nulls in Slice/Condition
  std::vector<std::pair<std::string, ExprPtr>> keywords; // Call / Filter keyword arguments
  std::vector<std::string> ops;                          // Compare
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

enum class StmtKind {
  Text,     // text
  Print,    // {{ expr }}
  If,       // conditions[i] -> bodies[i]; a final body without condition is else
  For,      // for targets in expr [if filter]: bodies[0], else bodies[1]
  Set,      // set targets = expr (target "ns.attr" when attribute is set)
  SetBlock, // {% set name %}bodies[0]{% endset %}
  Macro,    // {% macro name(params=defaults) %}bodies[0]{% endmacro %}
  Break,
  Continue,
  Body,        // a plain block rendered in place ({% generation %})
  FilterBlock, // bodies[0]'s text through the filter chain expr (its innermost subject a literal)
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                 // Text; Macro name
  ExprPtr expr;                     // Print, For (iterable), Set (value)
  ExprPtr filter;                   // For ... if filter
  std::vector<std::string> targets; // For / Set names; Macro parameters
  std::string attribute;            // Set ns.attribute: targets[0] is the namespace
  std::vector<ExprPtr> conditions;  // If; Macro parameter defaults (null when none)
  std::vector<StmtList> bodies;
};

} // namespace onnxc::text::chat

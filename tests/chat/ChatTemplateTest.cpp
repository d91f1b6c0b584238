//===- tests/chat/ChatTemplateTest.cpp - The chat-template interpreter ------===//
//
// Edge cases of the lexer, parser and renderer (text/chat), each expected
// output as jinja2 3.1.6 renders it with trim_blocks and lstrip_blocks (the
// environment transformers uses); every refusal and its line; the C API's
// checks; and random byte strings, which must give a template or one error
// line, never a crash or a hang. tests/chat/test_chat_templates.py compares
// whole model templates with jinja2 itself.
//
//===----------------------------------------------------------------------===//
#include "text/chat/ChatTemplate.h"
#include "ir/Error.h"
#include "onnxc/onnxc_chat.h"
#include "text/chat/Json.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

using namespace onnxc::text::chat;

namespace {

const char *kContext = R"({
  "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": " Hi "}],
  "d": {"b": 1, "a": [1, 2]}, "s": "héllo wörld", "n": null, "xs": [3, 1, 2], "x": {}})";

std::string render(const std::string &source) {
  std::unique_ptr<ChatTemplate> chat = ChatTemplate::fromString(source);
  ValueDict variables = parseJson(kContext, "context").asDict();
  const Value *messages = variables.find("messages");
  return chat->apply(*messages, true, variables);
}

std::string errorOf(const std::string &source) {
  try {
    render(source);
  } catch (const onnxc::Error &e) {
    return e.what();
  }
  return "(no error)";
}

struct Case {
  const char *source;
  const char *expected;
};

// Expected outputs are jinja2 3.1.6's for the same template and context.
const Case kCases[] = {
    {"{{ 'a' ~ 1 ~ none ~ true }}", "a1NoneTrue"},
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 10 / 4 * 2 }}",
     "3 -4 2 3.5 1024 5.0"},
    {"{{ 1e10 }} {{ 0.1 + 0.2 }} {{ 1.5e-7 }} {{ 3.0 }} {{ 1/3 }}",
     "10000000000.0 0.30000000000000004 1.5e-07 3.0 0.3333333333333333"},
    {"{{ [1, 'a', none, true, 2.5] }} {{ {'k': 'v'} }} {{ {'a': {'b': 1}} }}",
     "[1, 'a', None, True, 2.5] {'k': 'v'} {'a': {'b': 1}}"},
    {"{{ s[1:4] }}|{{ s[::-1] }}|{{ s[-3:] }}|{{ xs[1:] }}|{{ xs[::2] }}|{{ s[0] }}{{ s[-1] }}",
     "éll|dlröw olléh|rld|[1, 2]|[3, 2]|hd"},
    {"{{ messages[0]['role'] }} {{ messages[1].content|trim }} {{ messages|length }} "
     "{{ messages[5] is defined }}",
     "system Hi 2 False"},
    {"{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
     "{{ loop.length }}{{ loop.revindex }};{% endfor %}",
     "10TrueFalse22;21FalseTrue21;"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}|{% for k in d %}{{ k }}{% endfor %}"
     "|{% for k, v in d|items %}{{ k }}{% endfor %}",
     "b=1,a=[1, 2],|ba|ba"},
    {"{% for x in [] %}x{% else %}empty{% endfor %}", "empty"},
    {"{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}", "3222"},
    {"{% for x in 'ab' %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", "-b;a-;"},
    {"{% set ns = namespace(a=1, found=false) %}{% for x in xs %}{% set ns.a = ns.a + x %}"
     "{% if x == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.a }} {{ ns.found }}",
     "7 True"},
    // A set inside a loop body lasts for that iteration only.
    {"{% set x = 1 %}{% for i in xs %}{% set x = x + i %}{% endfor %}{{ x }}", "1"},
    {"{% if n is none %}none{% elif n %}t{% else %}f{% endif %} {{ 'yes' if xs else 'no' }} "
     "{{ 'a' if false }}|",
     "none yes |"},
    {"{{ undefinedvar }}|{{ undefinedvar is defined }}|{{ d.missing is defined }}|"
     "{{ undefinedvar|default('dflt') }}|{{ ''|default('e', true) }}|{{ d.missing|length }}",
     "|False|False|dflt|e|0"},
    {"{{ none.x }}|{{ 'abc'.nomethod is defined }}|{{ 'x' ~ undefinedvar ~ 'y' }}", "|False|xy"},
    {"{{ [1,2][5] }}|{{ {'a':1}['b'] }}|", "||"},
    {"{{ 'x' in 'xyz' }} {{ 1 in xs }} {{ 'b' in d }} {{ 5 not in xs }} {{ not 1 == 2 }} "
     "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}",
     "True True True True True True False"},
    {"{{ 1.0 == 1 }} {{ true == 1 }} {{ 'a' < 'b' }}", "True True True"},
    {"{{ s|upper }} {{ s|title }} {{ 'hELLO wORLD-x'|capitalize }} {{ 'ab cd'.title() }} "
     "{{ s.split(' ') }} {{ ' a  b '.split() }}",
     "HÉLLO WÖRLD Héllo Wörld Hello world-x Ab Cd ['héllo', 'wörld'] ['a', 'b']"},
    {"{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ 'x  '.rstrip() }}|"
     "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x','c')) }}",
     "x|a|x|x|TrueTrue"},
    {"{{ xs|join(', ') }} {{ xs|first }} {{ xs|last }} {{ xs|sort }} {{ xs|reverse|list }} "
     "{{ 'abc'|list }} {{ xs|string }} {{ '42'|int + 1 }} {{ 'x'|int }} {{ 3.9|int }}",
     "3, 1, 2 3 2 [1, 2, 3] [2, 1, 3] ['a', 'b', 'c'] [3, 1, 2] 43 0 3"},
    {"{{ 'a-b-c'|replace('-', '+') }} {{ d|tojson }} {{ s|tojson }} {{ d|tojson(indent=2) }} "
     "{{ '<&>\\''|tojson }}",
     "a+b+c {\"a\": [1, 2], \"b\": 1} \"h\\u00e9llo w\\u00f6rld\" {\n  \"a\": [\n    1,\n    2\n"
     "  ],\n  \"b\": 1\n} \"\\u003c\\u0026\\u003e\\u0027\""},
    // tojson returns markup: adding a plain string to it HTML-escapes the plain one.
    {"{{ 'a' + ('<b>'|tojson) }} {{ ('x'|tojson)[1:] + '<' }}", "a\"\\u003cb\\u003e\" x\"&lt;"},
    {"{{ messages|selectattr('role', 'equalto', 'user')|list|length }} "
     "{{ messages|map(attribute='role')|join(',') }} "
     "{{ messages|rejectattr('role', 'equalto', 'user')|map(attribute='content')|first }}",
     "1 system,user S"},
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} "
     "{{ greet('B', punct='?') }}",
     "Hi A! Hi B?"},
    {"{% raw %}{{ not evaluated }}{% endraw %}", "{{ not evaluated }}"},
    {"a {# comment #} b {#- trimmed -#} c", "a  bc"},
    {"  {% if true %}\n  x\n  {% endif %}\n  {{- 'y' }}\n", "  x\ny"},
    {"{%- for x in xs -%}\n  {{ x }}\n{%- endfor %}\nend\n", "312end"},
    {"{%+ if true %}a{% endif +%}\nb", "a\nb"},
    {"x\n   {#- c #}\ny", "xy"},
    {"{{ 'a' }}\n{% if true %}\n  b\n{% endif %}\n", "a\n  b\n"},
    {"\t{% if true %}x{% endif %}\n", "x"},
    {"line\r\n{% if true %}\r\nx\r\n{% endif %}", "line\nx\n"},
    {"{{ \"a\\tb\\n\\u00e9\\x41\" }}|{{ 'it''s' }}", "a\tb\néA|its"},
    {"{% set a, b = [1, 2] %}{{ a + b }} {{ xs * 2 }} {{ '-' * 3 }} {{ [1] + [2] }}",
     "3 [3, 1, 2, 3, 1, 2] --- [1, 2]"},
    {"{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ d.get('b') }} {{ d.get('z', 9) }} "
     "{{ d.keys()|list }} {{ d['a'][1] }}",
     "[0, 1, 2] [1, 3, 5] 1 9 ['b', 'a'] 2"},
    {"{{ 1 is number }} {{ 'a' is string }} {{ d is mapping }} {{ xs is iterable }} {{ 3 is odd }} "
     "{{ 4 is even }} {{ 6 is divisibleby 3 }} {{ true is boolean }} {{ 1 is integer }}",
     "True True True True True True True True True"},
    {"{% set block %}inner {{ 1 }}{% endset %}[{{ block }}]", "[inner 1]"},
    {"{{ -3|abs }} {{ (2.567)|round(1) }} {{ xs|sum }} {{ xs|max }} {{ [1,1,2]|unique|list }}",
     "3 2.6 6 3 [1, 2]"},
    {"{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb\n'|indent(2, true) }}|"
     "{{ 'a\n\nb'|indent('> ', blank=true) }}|",
     "a\n    b\n\n    c|  a\n  b\n|a\n> \n> b|"},
    {"{{ none|selectattr('x')|list }}{{ none|map(attribute='x')|list }}", "[][]"},
    {"{% set s %}{%- filter trim|upper -%}\n  a b \n{%- endfilter %}{% endset %}[{{ s }}]"
     "{% filter replace('x', 'y') %}x{{ 'x' }}{% endfilter %}",
     "[A B]yy"},
    // loopcontrols, which later transformers versions enable.
    {"{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}"
     "{% endif %}{{ x }}{% endfor %}",
     "3"},
};

TEST(ChatTemplate, RendersAsJinja2) {
  for (const Case &c : kCases)
    EXPECT_EQ(render(c.source), c.expected) << c.source;
}

TEST(ChatTemplate, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(errorOf("\n{{ x.y.z }}"), "chat template line 2: 'dict object' has no attribute 'y'");
  EXPECT_EQ(errorOf("{{ 1 + 'a' }}"),
            "chat template line 1: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(errorOf("{{ undefinedvar + 1 }}"), "chat template line 1: 'undefinedvar' is undefined");
  EXPECT_EQ(errorOf("a\n{{ raise_exception('no system role') }}"),
            "chat template line 2: raise_exception: no system role");
  // Errors stay one line; a raw \r in the source reads as \n, as in jinja2.
  EXPECT_EQ(errorOf("{{ raise_exception('two\nlines') }}"),
            "chat template line 1: raise_exception: two\\nlines");
  EXPECT_EQ(errorOf("{{ x['a\rb'].c }}"),
            "chat template line 1: 'dict object' has no attribute 'a\\nb'");
  EXPECT_EQ(errorOf("{{ 1 // 0 }}"), "chat template line 1: integer division or modulo by zero");
  EXPECT_EQ(errorOf("{% set x.y = 1 %}"),
            "chat template line 1: cannot assign attribute on non-namespace object 'x'");
  EXPECT_EQ(errorOf("{{ range(100001)|length }}"),
            "chat template line 1: range too big, the sandbox allows at most 100000 items");
  EXPECT_EQ(errorOf("{{ 9223372036854775807 + 1 }}"),
            "chat template line 1: integer overflow in '+'");
  EXPECT_EQ(errorOf("{{ undefinedvar() }}"), "chat template line 1: 'undefinedvar' is undefined");
}

TEST(ChatTemplate, RefusesConstructsOutsideTheSubset) {
  const Case refusals[] = {
      {"a\n\n{% include 'x.jinja' %}", "chat template line 3: unsupported tag 'include'"},
      {"{% extends 'base' %}", "chat template line 1: unsupported tag 'extends'"},
      {"{% filter wordwrap %}x{% endfilter %}", "chat template line 1: unknown filter 'wordwrap'"},
      {"{% with a = 1 %}{% endwith %}", "chat template line 1: unsupported tag 'with'"},
      {"{% frobnicate %}", "chat template line 1: unknown tag 'frobnicate'"},
      {"{{ x | wordwrap }}", "chat template line 1: unknown filter 'wordwrap'"},
      {"{{ x is prime }}", "chat template line 1: unknown test 'prime'"},
      {"{% for x in xs recursive %}{% endfor %}",
       "chat template line 1: unsupported recursive loops"},
      {"{{ f(*args) }}", "chat template line 1: unsupported * or ** arguments"},
      {"{% for x in y %}", "chat template line 1: missing '{% endfor %}'"},
      {"{% endif %}", "chat template line 1: unexpected 'endif'"},
      {"\n{{ 1 + }}", "chat template line 2: unexpected '}}'"},
      {"{{ 'abc }}", "chat template line 1: unterminated string"},
      {"{# never closed", "chat template line 1: unclosed comment"},
      {"{{ a ]", "chat template line 1: unexpected ']'"},
      {"{{ (a] }}", "chat template line 1: unexpected ']'"},
      {"{{ a $ b }}", "chat template line 1: unexpected character '$'"},
      {"{% raw %}no end", "chat template line 1: raw tag without endraw"},
      {"{{ {1: 2} }}", "chat template line 1: dict keys must be string literals"},
      {"{{ x[1, 2] }}", "chat template line 1: unsupported tuple subscript"},
  };
  for (const Case &c : refusals) {
    try {
      ChatTemplate::fromString(c.source);
      ADD_FAILURE() << "accepted: " << c.source;
    } catch (const onnxc::Error &e) {
      EXPECT_EQ(std::string(e.what()), c.expected) << c.source;
    }
  }
}

TEST(ChatTemplate, BoundsDepthOutputAndSteps) {
  std::string deep = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_NE(errorOf("{{ " + deep + " }}").find("nested deeper than 200"), std::string::npos);
  EXPECT_NE(errorOf("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("deeper than 64"),
            std::string::npos);
  std::unique_ptr<ChatTemplate> chat =
      ChatTemplate::fromString("{% for i in range(100) %}{% for j in range(100) %}xxxxxxxxxx"
                               "{% endfor %}{% endfor %}");
  chat->limits().maxOutputBytes = 50000;
  EXPECT_THROW(chat->apply(Value::list({}), false), onnxc::Error);
  chat->limits() = RenderLimits{};
  chat->limits().maxSteps = 1000;
  EXPECT_THROW(chat->apply(Value::list({}), false), onnxc::Error);
  EXPECT_NE(errorOf("{{ 'x' * 100000000000 }}").find("would exceed"), std::string::npos);
}

TEST(ChatTemplate, RandomBytesNeverCrash) {
  // Fragments of template syntax and raw bytes, glued at random: each must load and render or
  // fail with one "chat template ..." line.
  const char *pieces[] = {"{{",       "}}",   "{%",   "%}",       "{#",      "#}",    "-",   "+",
                          " for ",    " in ", " if ", " endfor ", " endif ", " set ", "=",   "x",
                          "messages", "[",    "]",    "(",        ")",       "'",     "\"",  "|",
                          "trim",     ".",    "loop", " is ",     "defined", "\n",    "~",   "*",
                          "1",        "{",    "}",    ",",        ":",       "\xff",  "\xc3"};
  std::mt19937 random(1234);
  int rendered = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string source;
    int length = int(random() % 24);
    for (int i = 0; i < length; ++i) {
      if (random() % 5 == 0)
        source += char(random() % 256);
      else
        source += pieces[random() % (sizeof pieces / sizeof *pieces)];
    }
    try {
      std::unique_ptr<ChatTemplate> chat = ChatTemplate::fromString(source);
      chat->limits().maxSteps = 100000;
      chat->apply(Value::list({}), true);
      ++rendered;
    } catch (const onnxc::Error &e) {
      std::string message = e.what();
      EXPECT_TRUE(message.rfind("chat template", 0) == 0) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      ++refused;
    }
  }
  EXPECT_GT(rendered, 0);
  EXPECT_GT(refused, 0);
}

TEST(ChatTemplate, CApiChecksItsArguments) {
  const char *source = "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
                       "{{ extra }}{% if add_generation_prompt %}>{% endif %}";
  onnxc_chat_template *chat = onnxc_chat_template_from_string(source, std::strlen(source));
  ASSERT_NE(chat, nullptr) << onnxc_chat_template_last_error();
  char *text = nullptr;
  size_t length = 0;
  ASSERT_EQ(onnxc_chat_template_apply(chat, R"([{"role": "user", "content": "hé"}])",
                                      R"({"extra": "!"})", 1, &text, &length),
            0)
      << onnxc_chat_template_last_error();
  EXPECT_EQ(std::string(text, length), "[user:hé]!>");
  onnxc_chat_template_free_text(text);
  EXPECT_EQ(onnxc_chat_template_apply(chat, "[]", nullptr, 0, &text, &length), 0);
  EXPECT_EQ(std::string(text, length), "");
  onnxc_chat_template_free_text(text);

  EXPECT_EQ(onnxc_chat_template_apply(chat, "{\"not\": \"a list\"}", nullptr, 1, &text, &length),
            -1);
  EXPECT_NE(std::string(onnxc_chat_template_last_error()).find("expected a JSON array"),
            std::string::npos);
  EXPECT_EQ(onnxc_chat_template_apply(chat, "[1,", nullptr, 1, &text, &length), -1);
  EXPECT_NE(std::string(onnxc_chat_template_last_error()).find("messages: "), std::string::npos);
  EXPECT_EQ(onnxc_chat_template_apply(chat, "[\"\xff\"]", nullptr, 1, &text, &length), -1);
  EXPECT_NE(std::string(onnxc_chat_template_last_error()).find("not valid UTF-8"),
            std::string::npos);
  EXPECT_EQ(onnxc_chat_template_apply(nullptr, "[]", nullptr, 1, &text, &length), -1);
  EXPECT_EQ(onnxc_chat_template_apply(chat, nullptr, nullptr, 1, &text, &length), -1);
  EXPECT_EQ(onnxc_chat_template_apply(chat, "[]", nullptr, 1, nullptr, &length), -1);
  EXPECT_STREQ(onnxc_chat_template_source(chat), source);
  onnxc_chat_template_destroy(chat);

  EXPECT_EQ(onnxc_chat_template_load(nullptr), nullptr);
  EXPECT_EQ(onnxc_chat_template_load("/nonexistent/folder"), nullptr);
  EXPECT_NE(std::string(onnxc_chat_template_last_error()).find("no such file or folder"),
            std::string::npos);
  EXPECT_EQ(onnxc_chat_template_from_string("{% include 'x' %}", 17), nullptr);
  EXPECT_STREQ(onnxc_chat_template_last_error(), "chat template line 1: unsupported tag 'include'");
}

} // namespace

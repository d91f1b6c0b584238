//===- tests/fuzz/RandomGraph.cpp - Small valid graphs from fuzz bytes -----===//
//
// The builder keeps, for every value, its dtype, its dims and whether it
// still holds exactly what the inputs and constants held (no rounding
// happened on the way). Comparisons, Floor, Cast to an integer and the like
// are discontinuous, so they only take exact values: a rounding difference
// of one ulp between the compiled code and the evaluator could otherwise
// flip them and look like a bug.
//
//===----------------------------------------------------------------------===//
#include "RandomGraph.h"
#include "RandomGraphBuilder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>

namespace onnxc::fuzz {

namespace gen {

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::F32:
    return "f32";
  case Kind::I64:
    return "i64";
  case Kind::Bool:
    return "bool";
  }
  return "?";
}

int64_t upperElements(const GenDims &dims) {
  int64_t count = 1;
  for (const GenDim &d : dims)
    count = std::min(count * std::max<int64_t>(d.size, 1), kMaxElements + 1);
  return count;
}

bool broadcastDims(const GenDims &a, const GenDims &b, GenDims &out, bool assume) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, GenDim());
  for (size_t i = 0; i < rank; ++i) {
    const GenDim *x = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const GenDim *y = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!x || (x->isStatic() && x->size == 1))
      out[i] = y ? *y : *x;
    else if (!y || (y->isStatic() && y->size == 1) || *x == *y)
      out[i] = *x;
    else if (assume && x->isStatic() != y->isStatic())
      out[i] = x->isStatic() ? *x : *y;
    else
      return false;
  }
  return true;
}

std::string intList(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

} // namespace gen

using gen::Builder;

RandomCase generateRandomCase(ByteReader &reader) { return Builder(reader).build(); }

namespace {
constexpr std::string_view kCaseMagic = "# onnxc-fuzz-case\n";
} // namespace

std::string caseFileText(const RandomCase &testCase) {
  std::string text(kCaseMagic);
  for (const auto &binding : testCase.bindings) {
    text += "# run:";
    for (const auto &[symbol, value] : binding)
      text += " " + symbol + "=" + std::to_string(value);
    text += "\n";
  }
  text += "# seed: " + std::to_string(testCase.dataSeed) + "\n";
  text += "# specials: " + std::to_string(int(testCase.specialValues)) + "\n";
  text += "# threads: " + std::to_string(testCase.threads) + "\n";
  return text + testCase.irText;
}

bool parseCaseFile(std::string_view text, RandomCase &testCase, std::string &error) {
  if (text.substr(0, kCaseMagic.size()) != kCaseMagic)
    return false;
  testCase = RandomCase();
  size_t pos = kCaseMagic.size();
  auto bad = [&](const std::string &line) {
    if (error.empty())
      error = "malformed case file line: " + line;
  };
  while (pos < text.size() && text[pos] == '#') {
    size_t end = text.find('\n', pos);
    std::string line(text.substr(pos, end == std::string_view::npos ? end : end - pos));
    pos = end == std::string_view::npos ? text.size() : end + 1;
    std::istringstream in(line.substr(1));
    std::string key;
    in >> key;
    if (key == "run:") {
      std::map<std::string, int64_t> binding;
      for (std::string item; in >> item;) {
        size_t eq = item.find('=');
        std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
        if (value.empty() || value.size() > 2 ||
            !std::all_of(value.begin(), value.end(), ::isdigit)) {
          bad(line); // a symbol's value is a small count
          continue;
        }
        binding[item.substr(0, eq)] = std::stoll(value);
      }
      testCase.bindings.push_back(binding);
    } else if (key == "seed:") {
      in >> testCase.dataSeed;
    } else if (key == "specials:") {
      int flag = 0;
      in >> flag;
      testCase.specialValues = flag != 0;
    } else if (key == "threads:") {
      in >> testCase.threads;
    } else {
      bad(line);
    }
    if (in.fail() && key != "run:")
      bad(line);
  }
  if (testCase.bindings.empty())
    testCase.bindings.emplace_back();
  testCase.irText = std::string(text.substr(pos));
  return true;
}

} // namespace onnxc::fuzz

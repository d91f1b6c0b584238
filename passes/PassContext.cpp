//===- passes/PassContext.cpp - Pass statistics and explanations ----------===//
#include "passes/Pass.h"

#include <algorithm>

namespace onnxc {

namespace {
// Adds to a named tally kept in first-seen order; tallies are short, so a
// linear search is simpler than a map plus an order vector.
void addToTally(std::vector<std::pair<std::string, int64_t>> &tally, std::string_view key,
                int64_t amount) {
  auto it = std::find_if(tally.begin(), tally.end(), [&](const auto &e) { return e.first == key; });
  if (it == tally.end())
    tally.emplace_back(std::string(key), amount);
  else
    it->second += amount;
}
} // namespace

void PassContext::count(std::string_view counter, int64_t amount) {
  addToTally(counters_, counter, amount);
}

int64_t PassContext::counter(std::string_view counter) const {
  for (const auto &[name, value] : counters_)
    if (name == counter)
      return value;
  return 0;
}

void PassContext::explain(const Node &node, std::string_view reason) {
  if (explaining_)
    explain(node.describe() + ": " + std::string(reason));
}

void PassContext::explain(std::string message) {
  if (!explaining_)
    return;
  std::string line = passName_.empty() ? std::move(message) : passName_ + ": " + message;
  if (explained_.insert(line).second)
    explanations_.push_back(std::move(line));
}

void PassContext::reject(const Node &node, std::string_view reason) {
  count("rejected");
  addToTally(rejectReasons_, reason, 1);
  explain(node, reason);
}

std::string PassContext::statisticsLine() const {
  std::string line = passName_ + ":";
  if (counters_.empty())
    line += " nothing to do";
  bool first = true;
  for (const auto &[name, value] : counters_) {
    line += (first ? " " : ", ") + std::to_string(value) + " " + name;
    first = false;
    if (name != "rejected" || rejectReasons_.empty())
      continue;
    line += " (";
    for (size_t i = 0; i < rejectReasons_.size(); ++i)
      line += (i ? "; " : "") + std::to_string(rejectReasons_[i].second) + " " +
              rejectReasons_[i].first;
    line += ")";
  }
  return line;
}

} // namespace onnxc

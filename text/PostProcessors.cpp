//===- text/PostProcessors.cpp - tokenizer.json post-processors --------------===//
//
// With add_special_tokens, a post-processor puts the special tokens around
// an encoded sequence: BERT's [CLS] A [SEP], RoBERTa's <s> A </s>, or what a
// TemplateProcessing "single" template spells out. Only single sequences are
// encoded, so the "pair" templates are read but not used.
//
//===----------------------------------------------------------------------===//
#include "text/PostProcessors.h"

namespace onnxc::text {
namespace {

/// One template item: a run of special-token ids, or the sequence itself.
struct TemplateItem {
  bool isSequence = false;
  std::vector<uint32_t> ids;
};

class TemplatePostProcessor : public PostProcessor {
public:
  explicit TemplatePostProcessor(std::vector<TemplateItem> items) : items_(std::move(items)) {}
  void process(std::vector<uint32_t> &ids) const override {
    std::vector<uint32_t> out;
    out.reserve(ids.size() + 4);
    for (const TemplateItem &item : items_) {
      if (item.isSequence)
        out.insert(out.end(), ids.begin(), ids.end());
      else
        out.insert(out.end(), item.ids.begin(), item.ids.end());
    }
    ids = std::move(out);
  }
  size_t addedCount() const override {
    size_t count = 0;
    for (const TemplateItem &item : items_)
      count += item.ids.size();
    return count;
  }

private:
  std::vector<TemplateItem> items_;
};

class NoChangePostProcessor : public PostProcessor {
public:
  void process(std::vector<uint32_t> &) const override {}
  size_t addedCount() const override { return 0; }
};

class SequencePostProcessor : public PostProcessor {
public:
  explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void process(std::vector<uint32_t> &ids) const override {
    for (const auto &step : steps_)
      step->process(ids);
  }
  size_t addedCount() const override {
    size_t count = 0;
    for (const auto &step : steps_)
      count += step->addedCount();
    return count;
  }

private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

/// ["[CLS]", 101] as BertProcessing and RobertaProcessing write a token.
uint32_t tokenPairId(const JsonObject &object, std::string_view key, const std::string &where) {
  std::string at = where + "." + std::string(key);
  const JsonArray &pair = expectArray(requireField(object, key, where), at);
  if (pair.size() != 2)
    fail(at, ": expected [token, id]");
  int64_t id = expectInteger(pair[1], at);
  if (id < 0)
    fail(at, ": negative id");
  return static_cast<uint32_t>(id);
}

std::unique_ptr<PostProcessor> wrapWith(uint32_t first, uint32_t last) {
  std::vector<TemplateItem> items(3);
  items[0].ids = {first};
  items[1].isSequence = true;
  items[2].ids = {last};
  return std::make_unique<TemplatePostProcessor>(std::move(items));
}

std::unique_ptr<PostProcessor> makeTemplate(const JsonObject &object, const std::string &where) {
  const JsonObject &specials =
      expectObject(requireField(object, "special_tokens", where), where + ".special_tokens");
  const JsonArray &single = expectArray(requireField(object, "single", where), where + ".single");
  std::vector<TemplateItem> items;
  for (size_t i = 0; i < single.size(); ++i) {
    std::string at = where + ".single[" + std::to_string(i) + "]";
    const JsonObject &piece = expectObject(single[i], at);
    TemplateItem item;
    if (piece.get("Sequence")) {
      item.isSequence = true;
    } else if (const JsonValue *special = piece.get("SpecialToken")) {
      std::string name = requireString(expectObject(*special, at), "id", at);
      const JsonValue *entry = specials.get(name);
      if (!entry)
        fail(at, ": special token '", name, "' is not in special_tokens");
      std::string entryAt = where + ".special_tokens['" + name + "']";
      const JsonArray &ids = expectArray(
          requireField(expectObject(*entry, entryAt), "ids", entryAt), entryAt + ".ids");
      for (const JsonValue &id : ids)
        item.ids.push_back(static_cast<uint32_t>(expectInteger(id, entryAt + ".ids")));
    } else {
      fail(at, ": expected a Sequence or a SpecialToken");
    }
    items.push_back(std::move(item));
  }
  return std::make_unique<TemplatePostProcessor>(std::move(items));
}

} // namespace

std::unique_ptr<PostProcessor> makePostProcessor(const JsonValue &value, const std::string &where) {
  if (value.kind() == JsonValue::Null)
    return nullptr;
  const JsonObject &object = expectObject(value, where);
  std::string type = componentType(object, where);
  if (type == "TemplateProcessing")
    return makeTemplate(object, where);
  if (type == "BertProcessing" || type == "RobertaProcessing")
    return wrapWith(tokenPairId(object, "cls", where), tokenPairId(object, "sep", where));
  if (type == "ByteLevel")
    return std::make_unique<NoChangePostProcessor>();
  if (type == "Sequence") {
    const JsonArray &items = expectArray(requireField(object, "processors", where), where);
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < items.size(); ++i)
      if (auto step = makePostProcessor(items[i], where + ".processors[" + std::to_string(i) + "]"))
        steps.push_back(std::move(step));
    return std::make_unique<SequencePostProcessor>(std::move(steps));
  }
  unsupportedComponent(where, type);
}

} // namespace onnxc::text

//===- text/TokenizerLoader.cpp - Finding and opening a tokenizer file -------===//
#include "ir/Error.h"
#include "text/Tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace onnxc::text {
namespace {

std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path.string(), ": cannot open the file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    fail(path.string(), ": cannot read the file");
  return contents.str();
}

/// The file of a model folder that holds its tokenizer.
std::filesystem::path tokenizerInFolder(const std::filesystem::path &folder) {
  for (const char *name : {"tokenizer.json", "tokenizer.model", "spiece.model"})
    if (std::filesystem::is_regular_file(folder / name))
      return folder / name;
  fail(folder.string(), ": no tokenizer.json, tokenizer.model or spiece.model in the folder");
}

} // namespace

std::unique_ptr<Tokenizer> loadTokenizer(const std::string &path) {
  std::error_code error;
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(file, error))
    file = tokenizerInFolder(file);
  else if (!std::filesystem::exists(file, error))
    fail(path, ": no such file or folder");
  std::string contents = readFile(file);
  // tokenizer.json is a JSON object; a SentencePiece model is a protobuf,
  // whose first byte is a field tag, never '{'.
  size_t first = contents.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && contents[first] == '{')
    return tokenizerFromJson(contents, file.string());
  if (file.extension() == ".model")
    return tokenizerFromSentencePiece(contents, file.string());
  fail(file.string(), ": not a tokenizer.json (no JSON object) or a SentencePiece .model");
}

} // namespace onnxc::text

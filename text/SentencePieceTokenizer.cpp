//===- text/SentencePieceTokenizer.cpp - SentencePiece .model files ----------===//
//
// A .model file is SentencePiece's own serialized model (normalizer rules,
// pieces, scores); Debian's libsentencepiece reads and runs it exactly as the
// Python package does, so onnxc does not reimplement its normalizer. It is
// reached through libonnxc_spm.so, loaded here with RTLD_DEEPBIND
// (text/sentencepiece/SpmShim.h says why). add_special_tokens puts the
// model's BOS in front (the LLaMA and Mistral convention); control tokens
// decode to nothing, as in SentencePiece.
//
//===----------------------------------------------------------------------===//
#include "text/Tokenizer.h"

#include "ir/Error.h"
#include "text/Unicode.h"
#include "text/sentencepiece/SpmShim.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

namespace onnxc::text {
namespace {

/// The shim's functions, looked up once per process.
struct SpmApi {
  decltype(&onnxc_spm_load) load;
  decltype(&onnxc_spm_destroy) destroy;
  decltype(&onnxc_spm_encode) encode;
  decltype(&onnxc_spm_decode) decode;
  decltype(&onnxc_spm_piece_size) pieceSize;
  decltype(&onnxc_spm_bos_id) bosId;
  decltype(&onnxc_spm_is_control) isControl;
  decltype(&onnxc_spm_piece_to_id) pieceToId;
  decltype(&onnxc_spm_id_to_piece) idToPiece;
  decltype(&onnxc_spm_free) free;
};

/// Where libonnxc_spm.so is: $ONNXC_SPM_LIBRARY, else beside the library
/// (or program) holding this code, else the build tree's.
std::vector<std::string> shimCandidates() {
  std::vector<std::string> paths;
  if (const char *explicitPath = std::getenv("ONNXC_SPM_LIBRARY"))
    paths.push_back(explicitPath);
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&shimCandidates), &info) && info.dli_fname)
    paths.push_back(
        (std::filesystem::path(info.dli_fname).parent_path() / "libonnxc_spm.so").string());
#ifdef ONNXC_SPM_BUILD_PATH
  paths.push_back(ONNXC_SPM_BUILD_PATH);
#endif
  return paths;
}

const SpmApi &spmApi() {
  static SpmApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
  // ASan's runtime refuses RTLD_DEEPBIND; the sanitizer leg loads no .model
  // file in a process that has loaded libprotobuf.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    const int flags = RTLD_NOW | RTLD_LOCAL;
#else
    const int flags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
    void *library = nullptr;
    std::string tried;
    for (const std::string &path : shimCandidates()) {
      if ((library = dlopen(path.c_str(), flags)))
        break;
      tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
    }
    if (!library) {
      error = "cannot load libonnxc_spm.so, which reads SentencePiece .model files (" + tried + ")";
      return;
    }
    auto find = [&](const char *name) {
      void *address = dlsym(library, name);
      if (!address && error.empty())
        error = std::string("libonnxc_spm.so lacks ") + name;
      return address;
    };
    api.load = reinterpret_cast<decltype(api.load)>(find("onnxc_spm_load"));
    api.destroy = reinterpret_cast<decltype(api.destroy)>(find("onnxc_spm_destroy"));
    api.encode = reinterpret_cast<decltype(api.encode)>(find("onnxc_spm_encode"));
    api.decode = reinterpret_cast<decltype(api.decode)>(find("onnxc_spm_decode"));
    api.pieceSize = reinterpret_cast<decltype(api.pieceSize)>(find("onnxc_spm_piece_size"));
    api.bosId = reinterpret_cast<decltype(api.bosId)>(find("onnxc_spm_bos_id"));
    api.isControl = reinterpret_cast<decltype(api.isControl)>(find("onnxc_spm_is_control"));
    api.pieceToId = reinterpret_cast<decltype(api.pieceToId)>(find("onnxc_spm_piece_to_id"));
    api.idToPiece = reinterpret_cast<decltype(api.idToPiece)>(find("onnxc_spm_id_to_piece"));
    api.free = reinterpret_cast<decltype(api.free)>(find("onnxc_spm_free"));
  });
  if (!error.empty())
    fail(error);
  return api;
}

class SentencePieceTokenizer : public Tokenizer {
public:
  SentencePieceTokenizer(std::string_view model, const std::string &name)
      : name_(name), api_(spmApi()) {
    char error[512];
    spm_ = api_.load(model.data(), model.size(), error, sizeof error);
    if (!spm_)
      fail(name, ": not a SentencePiece model: ", error);
  }
  ~SentencePieceTokenizer() override { api_.destroy(spm_); }
  SentencePieceTokenizer(const SentencePieceTokenizer &) = delete;
  SentencePieceTokenizer &operator=(const SentencePieceTokenizer &) = delete;

  std::vector<uint32_t> encode(std::string_view text, bool addSpecialTokens,
                               bool /*applyLimits*/) const override {
    requireUtf8(text, "the text to encode");
    int *ids = nullptr;
    size_t count = 0;
    char error[512];
    if (api_.encode(spm_, text.data(), text.size(), &ids, &count, error, sizeof error) != 0)
      fail(name_, ": encoding failed: ", error);
    std::unique_ptr<int, decltype(api_.free)> owned(ids, api_.free);
    std::vector<uint32_t> out;
    out.reserve(count + 1);
    int bos = api_.bosId(spm_);
    if (addSpecialTokens && bos >= 0)
      out.push_back(static_cast<uint32_t>(bos));
    for (size_t i = 0; i < count; ++i)
      out.push_back(static_cast<uint32_t>(ids[i]));
    return out;
  }

  std::string decode(std::span<const uint32_t> ids, bool skipSpecialTokens) const override {
    std::vector<int> known;
    int size = api_.pieceSize(spm_);
    for (uint32_t id : ids)
      if (id < static_cast<uint32_t>(size) &&
          !(skipSpecialTokens && api_.isControl(spm_, static_cast<int>(id))))
        known.push_back(static_cast<int>(id));
    char *text = nullptr;
    size_t length = 0;
    char error[512];
    if (api_.decode(spm_, known.data(), known.size(), &text, &length, error, sizeof error) != 0)
      fail(name_, ": decoding failed: ", error);
    std::unique_ptr<char, decltype(api_.free)> owned(text, api_.free);
    return std::string(text, length);
  }

  std::optional<uint32_t> tokenToId(std::string_view token) const override {
    int id = api_.pieceToId(spm_, token.data(), token.size());
    // PieceToId answers unk_id for any unknown piece: only a real match counts.
    if (id < 0 || idToToken(static_cast<uint32_t>(id)) != std::string(token))
      return std::nullopt;
    return static_cast<uint32_t>(id);
  }
  std::optional<std::string> idToToken(uint32_t id) const override {
    char *piece = nullptr;
    size_t length = 0;
    if (id >= static_cast<uint32_t>(api_.pieceSize(spm_)) ||
        api_.idToPiece(spm_, static_cast<int>(id), &piece, &length) != 0)
      return std::nullopt;
    std::unique_ptr<char, decltype(api_.free)> owned(piece, api_.free);
    return std::string(piece, length);
  }
  size_t vocabSize() const override { return static_cast<size_t>(api_.pieceSize(spm_)); }

private:
  std::string name_;
  const SpmApi &api_;
  onnxc_spm *spm_ = nullptr;
};

} // namespace

std::unique_ptr<Tokenizer> tokenizerFromSentencePiece(std::string_view model,
                                                      const std::string &name) {
  return std::make_unique<SentencePieceTokenizer>(model, name);
}

} // namespace onnxc::text

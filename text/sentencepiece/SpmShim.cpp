//===- text/sentencepiece/SpmShim.cpp - libsentencepiece behind a C interface ===//
#include "text/sentencepiece/SpmShim.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#define ONNXC_SPM_API extern "C" __attribute__((visibility("default")))

struct onnxc_spm {
  sentencepiece::SentencePieceProcessor processor;
};

namespace {

void setError(char *error, size_t size, const std::string &message) {
  if (!error || size == 0)
    return;
  size_t n = std::min(message.size(), size - 1);
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

/// A malloc'd copy (the caller frees it with onnxc_spm_free across the shim).
template <typename T> T *copyOut(const T *data, size_t count) {
  T *out = static_cast<T *>(std::malloc(count ? count * sizeof(T) : 1));
  if (out && count)
    std::memcpy(out, data, count * sizeof(T));
  return out;
}

} // namespace

ONNXC_SPM_API onnxc_spm *onnxc_spm_load(const char *model, size_t size, char *error,
                                        size_t errorSize) {
  auto *spm = new (std::nothrow) onnxc_spm;
  if (!spm) {
    setError(error, errorSize, "out of memory");
    return nullptr;
  }
  sentencepiece::util::Status status =
      spm->processor.LoadFromSerializedProto(absl::string_view(model, size));
  if (!status.ok()) {
    setError(error, errorSize, status.ToString());
    delete spm;
    return nullptr;
  }
  return spm;
}

ONNXC_SPM_API void onnxc_spm_destroy(onnxc_spm *spm) { delete spm; }

ONNXC_SPM_API int onnxc_spm_encode(const onnxc_spm *spm, const char *text, size_t size, int **ids,
                                   size_t *count, char *error, size_t errorSize) {
  std::vector<int> out;
  sentencepiece::util::Status status = spm->processor.Encode(absl::string_view(text, size), &out);
  if (!status.ok()) {
    setError(error, errorSize, status.ToString());
    return -1;
  }
  *ids = copyOut(out.data(), out.size());
  *count = out.size();
  return *ids ? 0 : (setError(error, errorSize, "out of memory"), -1);
}

ONNXC_SPM_API int onnxc_spm_decode(const onnxc_spm *spm, const int *ids, size_t count, char **text,
                                   size_t *size, char *error, size_t errorSize) {
  std::string out;
  sentencepiece::util::Status status =
      spm->processor.Decode(std::vector<int>(ids, ids + count), &out);
  if (!status.ok()) {
    setError(error, errorSize, status.ToString());
    return -1;
  }
  *text = copyOut(out.data(), out.size());
  *size = out.size();
  return *text ? 0 : (setError(error, errorSize, "out of memory"), -1);
}

ONNXC_SPM_API int onnxc_spm_piece_size(const onnxc_spm *spm) {
  return spm->processor.GetPieceSize();
}
ONNXC_SPM_API int onnxc_spm_bos_id(const onnxc_spm *spm) { return spm->processor.bos_id(); }
ONNXC_SPM_API int onnxc_spm_is_control(const onnxc_spm *spm, int id) {
  return spm->processor.IsControl(id) ? 1 : 0;
}
ONNXC_SPM_API int onnxc_spm_piece_to_id(const onnxc_spm *spm, const char *piece, size_t size) {
  return spm->processor.PieceToId(absl::string_view(piece, size));
}
ONNXC_SPM_API int onnxc_spm_id_to_piece(const onnxc_spm *spm, int id, char **piece, size_t *size) {
  if (id < 0 || id >= spm->processor.GetPieceSize())
    return -1;
  const std::string &text = spm->processor.IdToPiece(id);
  *piece = copyOut(text.data(), text.size());
  *size = text.size();
  return *piece ? 0 : -1;
}
ONNXC_SPM_API void onnxc_spm_free(void *buffer) { std::free(buffer); }

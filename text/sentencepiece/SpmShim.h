/*===- text/sentencepiece/SpmShim.h - libsentencepiece behind a C interface ===*
 *
 * Debian's libsentencepiece carries its own copy of protobuf-lite (3.14) and
 * exports it. In a process that has loaded Debian's libprotobuf (3.21) first
 * (the onnxc command, the Python module: ONNX models are protobuf), its
 * references bind to that library and it aborts in protobuf's version check.
 * So libonnxc_text does not link it: this shim (libonnxc_spm.so) does, and
 * libonnxc_text loads the shim with RTLD_DEEPBIND, which puts the shim's and
 * libsentencepiece's own symbols ahead of the process's
 * (SentencePieceTokenizer.cpp). Functions returning int return 0 on success
 * and -1 with `error` (size `error_size`) set to one line.
 *===----------------------------------------------------------------------===*/
#ifndef ONNXC_TEXT_SPM_SHIM_H
#define ONNXC_TEXT_SPM_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct onnxc_spm onnxc_spm;

onnxc_spm *onnxc_spm_load(const char *model, size_t size, char *error, size_t error_size);
void onnxc_spm_destroy(onnxc_spm *spm);
/* *ids (malloc'd, free with onnxc_spm_free) and *count. */
int onnxc_spm_encode(const onnxc_spm *spm, const char *text, size_t size, int **ids, size_t *count,
                     char *error, size_t error_size);
/* *text (malloc'd) and *size. */
int onnxc_spm_decode(const onnxc_spm *spm, const int *ids, size_t count, char **text, size_t *size,
                     char *error, size_t error_size);
int onnxc_spm_piece_size(const onnxc_spm *spm);
int onnxc_spm_bos_id(const onnxc_spm *spm);
int onnxc_spm_is_control(const onnxc_spm *spm, int id);
int onnxc_spm_piece_to_id(const onnxc_spm *spm, const char *piece, size_t size);
/* The piece of `id` into *piece (malloc'd) and *size; -1 for an id out of range. */
int onnxc_spm_id_to_piece(const onnxc_spm *spm, int id, char **piece, size_t *size);
void onnxc_spm_free(void *buffer);

#ifdef __cplusplus
}
#endif

#endif /* ONNXC_TEXT_SPM_SHIM_H */

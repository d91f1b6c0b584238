//===- python/src/Generate.cpp - Model.generate over the runtime's generator ===//
#include "python/src/Generate.h"

#include "ir/Error.h"
#include "python/src/ModelRunner.h"

#include <memory>

namespace onnxc::python {

namespace {

struct GeneratorDeleter {
  void operator()(onnxc_generator *generator) const { onnxc_generator_destroy(generator); }
};

} // namespace

GenerateResult generateTokens(const ModelRunner &runner, const std::vector<int64_t> &prompt,
                              const onnxc_generate_options &options,
                              const std::function<void(int64_t)> &onToken,
                              const ModelRunner *encoder, const std::vector<int64_t> &source) {
  std::unique_ptr<onnxc_generator, GeneratorDeleter> generator(
      encoder
          ? onnxc_generator_create_seq2seq(&encoder->descriptor(), &runner.descriptor(), &options)
          : onnxc_generator_create(&runner.descriptor(), &options));
  if (!generator)
    fail(onnxc_last_error());
  GenerateResult result;
  result.mode = onnxc_generator_mode(generator.get());
  result.description = onnxc_generator_describe(generator.get());
  if (encoder &&
      onnxc_generator_encode(generator.get(), source.data(), int64_t(source.size())) != 0)
    fail(onnxc_generator_error(generator.get()));
  if (onnxc_generator_prefill(generator.get(), prompt.data(), int64_t(prompt.size())) != 0)
    fail(onnxc_generator_error(generator.get()));
  while (true) {
    int64_t token = 0;
    int status = onnxc_generator_next(generator.get(), &token);
    if (status < 0)
      fail("after ", result.tokens.size(), " tokens: ", onnxc_generator_error(generator.get()));
    if (status == 0)
      break;
    result.tokens.push_back(token);
    if (onToken)
      onToken(token);
  }
  return result;
}

} // namespace onnxc::python

//===- frontend/ops/NeuralNetOps.cpp - Linear algebra, norms, attention, RNN -===//
//
// All 1:1: between opsets 13 and 23 these ops gained attributes whose
// defaults keep the old behaviour (LSTM/GRU/RNN `layout` at 14), or only
// new types. LayerNormalization appeared at 17, the opset-23 ops at 23;
// Attention is AttentionOps.cpp's.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

namespace onnxc {

void registerNeuralNetImporters(OpImporterRegistry &registry) {
  for (OpKind kind : {OpKind::MatMul, OpKind::Gemm, OpKind::Einsum, OpKind::Softmax,
                      OpKind::LogSoftmax, OpKind::Conv, OpKind::LSTM, OpKind::GRU, OpKind::RNN})
    registry.addOneToOne(kind, 13);
  registry.addOneToOne(OpKind::LayerNormalization, 17);
  for (OpKind kind : {OpKind::RMSNormalization, OpKind::RotaryEmbedding})
    registry.addOneToOne(kind, 23);
}

} // namespace onnxc

//===- tests/unit/frontend/FrontendMicrosoftQuantizationTest.cpp - MatMulNBits & co ---===//
//
// The IR form of com.microsoft MatMulNBits and GatherBlockQuantized (unpacked
// weights, a blocked DequantizeLinear, the product), its values against a
// dequantization written out here, and the one-line refusals. Their
// agreement with onnxruntime is tests/models/test_int4_models.py's.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/eval/Evaluator.h"

#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace onnxc;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kK = 20, kN = 3, kBlock = 16, kBlocks = 2;

/// A MatMulNBits model: A [2, K], 4-bit B with weights q[n][k] = (n + 3k) % 16, scales
/// 0.5 + n + kb, and (when `zeroPoints`) packed zero points n + 2 kb.
class FrontendMatMulNBits : public ::testing::Test {
protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("onnxc-fe-nbits-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".onnx");
    model_.set_ir_version(10);
    for (auto [domain, version] : {std::pair{"", 21}, std::pair{"com.microsoft", 1}}) {
      auto *opset = model_.add_opset_import();
      opset->set_domain(domain);
      opset->set_version(version);
    }
    onnx::GraphProto *g = model_.mutable_graph();
    g->set_name("g");
    auto *a = g->add_input();
    a->set_name("a");
    a->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t(2), kK})
      a->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    g->add_output()->set_name("y");
    std::string b(size_t(kN * kBlocks * kBlock / 2), '\0');
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t k = 0; k < kK; ++k)
        b[size_t(n * kBlocks * kBlock / 2 + k / 2)] |= char(weight(n, k) << (4 * (k % 2)));
    addInitializer("b", onnx::TensorProto::UINT8, {kN, kBlocks, kBlock / 2}, b);
    std::string scales;
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t kb = 0; kb < kBlocks; ++kb) {
        float s = scale(n, kb);
        scales.append(reinterpret_cast<const char *>(&s), sizeof s);
      }
    addInitializer("s", onnx::TensorProto::FLOAT, {kN * kBlocks}, scales);
    std::string zeros;
    for (int64_t n = 0; n < kN; ++n)
      zeros.push_back(char(zeroPoint(n, 0) | zeroPoint(n, 1) << 4));
    addInitializer("z", onnx::TensorProto::UINT8, {kN, 1}, zeros);
  }
  void TearDown() override { fs::remove(path_); }

  static int weight(int64_t n, int64_t k) { return int((n + 3 * k) % 16); }
  static float scale(int64_t n, int64_t kb) { return 0.5f + float(n + kb); }
  static int zeroPoint(int64_t n, int64_t kb) { return int(n + 2 * kb); }

  void addInitializer(const std::string &name, int type, std::vector<int64_t> dims,
                      const std::string &bytes) {
    onnx::TensorProto *t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims)
      t->add_dims(d);
    t->set_raw_data(bytes);
  }
  onnx::NodeProto *addNode(std::vector<std::string> inputs, int64_t bits = 4) {
    onnx::NodeProto *node = model_.mutable_graph()->add_node();
    node->set_op_type("MatMulNBits");
    node->set_domain("com.microsoft");
    node->set_name("mm");
    for (const std::string &in : inputs)
      node->add_input(in);
    node->add_output("y");
    for (auto [name, value] : {std::pair{"K", kK}, std::pair{"N", kN}, std::pair{"bits", bits},
                               std::pair{"block_size", kBlock}}) {
      onnx::AttributeProto *attr = node->add_attribute();
      attr->set_name(name);
      attr->set_type(onnx::AttributeProto::INT);
      attr->set_i(value);
    }
    return node;
  }
  std::unique_ptr<Graph> import() {
    std::ofstream out(path_, std::ios::binary);
    model_.SerializeToOstream(&out);
    out.close();
    return importOnnxFile(path_.string());
  }
  std::string importError() {
    return test::errorOf([&] { import(); });
  }

  fs::path path_;
  onnx::ModelProto model_;
};

size_t count(const Graph &g, OpKind kind) {
  size_t n = 0;
  for (const auto &node : g.nodes())
    n += node->kind() == kind;
  return n;
}

} // namespace

TEST_F(FrontendMatMulNBits, BlockedDequantizeAndMatMulWithThePackedZeroPoints) {
  addNode({"a", "b", "s", "z"});
  std::unique_ptr<Graph> g = import();
  EXPECT_EQ(count(*g, OpKind::DequantizeLinear), 1u);
  EXPECT_EQ(count(*g, OpKind::MatMul), 1u);
  for (const auto &node : g->nodes())
    if (node->kind() == OpKind::DequantizeLinear) {
      EXPECT_EQ(node->getInt("axis", 1), 0);
      EXPECT_EQ(node->getInt("block_size", 0), kBlock);
      EXPECT_EQ(node->operand(0)->type().str(), "u4[20, 3]");
      EXPECT_EQ(node->operand(1)->type().str(), "f32[2, 3]");
      EXPECT_EQ(node->operand(2)->type().str(), "u4[2, 3]");
    }
  std::vector<float> a(size_t(2 * kK));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i % 7) - 3) * 0.25f;
  Tensor y = evaluateGraph(*g, {{"a", Tensor::fromVector<float>({2, kK}, a)}})[0];
  ASSERT_EQ(y.typeString(), "f32[2, 3]");
  for (int64_t m = 0; m < 2; ++m)
    for (int64_t n = 0; n < kN; ++n) {
      double want = 0;
      for (int64_t k = 0; k < kK; ++k)
        want += a[size_t(m * kK + k)] * (weight(n, k) - zeroPoint(n, k / kBlock)) *
                scale(n, k / kBlock);
      EXPECT_NEAR(y.data<float>()[m * kN + n], want, 1e-4 * std::abs(want) + 1e-5);
    }
}

TEST_F(FrontendMatMulNBits, AccuracyLevelFourQuantizesTheActivations) {
  onnx::NodeProto *node = addNode({"a", "b", "s"});
  onnx::AttributeProto *level = node->add_attribute();
  level->set_name("accuracy_level");
  level->set_type(onnx::AttributeProto::INT);
  level->set_i(4);
  std::unique_ptr<Graph> g = import();
  // 4 bits: one BlockQuantizedMatMul that quantizes A itself (its evaluator and kernel).
  EXPECT_EQ(count(*g, OpKind::BlockQuantizedMatMul), 1u);
  EXPECT_EQ(count(*g, OpKind::DequantizeLinear), 0u);
  for (const Node *n : g->nodeList()) {
    if (n->kind() == OpKind::BlockQuantizedMatMul) {
      EXPECT_EQ(n->getInt("activation_int8", 0), 1);
    }
  }
  // One row whose first block holds a single 1 (exact in int8), whose second (short) block
  // holds 0.1 and 0.5: 0.1 is coded round(0.1 * 254) = 25 of 0.5 / 127, so it reads back as
  // 25 * 0.5 / 127 = 0.0984, 1.6% off, which the bound below sees.
  std::vector<float> a(size_t(2 * kK), 0.0f);
  a[0] = 1.0f;
  a[16] = 0.1f;
  a[17] = 0.5f;
  Tensor y = evaluateGraph(*g, {{"a", Tensor::fromVector<float>({2, kK}, a)}})[0];
  for (int64_t n = 0; n < kN; ++n) {
    auto w = [&](int64_t k) { return (weight(n, k) - 8) * double(scale(n, k / kBlock)); };
    double want = w(0) + 25 * (0.5 / 127) * w(16) + 0.5 * w(17);
    EXPECT_NEAR(y.data<float>()[n], want, 1e-5 * std::abs(want) + 1e-6);
    EXPECT_EQ(y.data<float>()[kN + n], 0.0f); // an all-zero row
  }
}

TEST_F(FrontendMatMulNBits, RefusalsNameTheNode) {
  addNode({"a", "b", "s"}, /*bits=*/3);
  EXPECT_NE(importError().find("node 'mm': MatMulNBits with bits=3 is not supported (4 or 8)"),
            std::string::npos)
      << importError();
  model_.mutable_graph()->clear_node();
  std::string order;
  for (int64_t k = 0; k < kK; ++k) {
    int32_t g = int32_t((kK - 1 - k) / kBlock);
    order.append(reinterpret_cast<const char *>(&g), sizeof g);
  }
  addInitializer("g", onnx::TensorProto::INT32, {kK}, order);
  addNode({"a", "b", "s", "", "g"});
  EXPECT_NE(importError().find("node 'mm': MatMulNBits g_idx (act-order) other than k / "
                               "block_size is not supported (g_idx[0] = 1)"),
            std::string::npos)
      << importError();
  model_.mutable_graph()->clear_node();
  addNode({"a", "a", "s"});
  EXPECT_NE(importError().find("node 'mm': MatMulNBits input B must be a constant"),
            std::string::npos)
      << importError();
}

//===- tests/unit/codegen/DimEncodingTest.cpp - Dim words round trip through runtime ===//
#include "codegen/artifact/DimEncoding.h"
#include "../../runtime/DimExpr.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

using namespace onnxc;

TEST(DimEncoding, EncodedDimsEvaluateLikeTheIr) {
  std::map<std::string, int32_t> index{{"batch", 0}, {"seq", 1}};
  const int64_t symbols[] = {3, 7};
  for (const char *text : {"64", "0", "seq", "batch*seq*256+64", "seq*seq-seq+1", "-batch"}) {
    Dim dim = *Dim::parse(text);
    std::vector<int64_t> words = encodeDim(dim, index);
    EXPECT_EQ(runtime::evaluateDimExpr(words.data(), symbols, 2),
              dim.evaluate({{"batch", 3}, {"seq", 7}}))
        << text;
  }
}

TEST(DimEncoding, RefusesUnknownAndUnboundSymbols) {
  std::map<std::string, int32_t> index{{"seq", 0}};
  EXPECT_THROW(encodeDim(Dim::unknown(), index), Error);
  EXPECT_THROW(encodeDim(Dim::symbol("batch"), index), Error);
}

TEST(DimEncoding, RuntimeRejectsBadWordsAndOverflow) {
  const int64_t symbols[] = {int64_t(1) << 40};
  const int64_t outOfRange[] = {1, 1, 1, 5};
  EXPECT_FALSE(runtime::evaluateDimExpr(outOfRange, symbols, 1));
  const int64_t square[] = {1, 1, 2, 0, 0};
  EXPECT_FALSE(runtime::evaluateDimExpr(square, symbols, 1));
}

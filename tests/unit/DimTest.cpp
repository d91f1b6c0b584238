//===- tests/unit/DimTest.cpp - Symbolic dimensions -------------------------===//
#include "ir/Dim.h"
#include "ir/Shape.h"

#include <gtest/gtest.h>

using namespace onnxc;

TEST(Dim, ArithmeticStaysCanonical) {
  Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq");
  EXPECT_EQ((batch * seq).str(), "batch*seq");
  EXPECT_EQ((seq * batch).str(), "batch*seq");
  EXPECT_EQ((seq * Dim(12)).str(), "seq*12");
  EXPECT_EQ((seq + Dim(1)).str(), "seq+1");
  EXPECT_EQ((Dim(1) - seq).str(), "-seq+1");
  EXPECT_EQ((seq - seq).str(), "0");
  EXPECT_TRUE((seq - seq).isConstant());
  EXPECT_EQ(batch * seq * Dim(64), Dim(64) * seq * batch);
}

TEST(Dim, ExactDivision) {
  Dim seq = Dim::symbol("seq");
  EXPECT_EQ(*(seq * Dim(12)).divideExactly(Dim(4)), seq * Dim(3));
  EXPECT_EQ(*(Dim::symbol("batch") * seq).divideExactly(seq), Dim::symbol("batch"));
  EXPECT_FALSE((seq * Dim(12)).divideExactly(Dim(5)));
  EXPECT_FALSE(seq.divideExactly(Dim::symbol("batch")));
  EXPECT_FALSE(seq.divideExactly(Dim(0)));
}

TEST(Dim, UnknownAbsorbs) {
  Dim u = Dim::unknown();
  EXPECT_TRUE((u + Dim(1)).isUnknown());
  EXPECT_TRUE((Dim::symbol("s") * u).isUnknown());
  EXPECT_FALSE(u.provablyEqual(u));
  EXPECT_EQ(u.str(), "?");
}

TEST(Dim, ParseRoundTrips) {
  for (const char *text : {"384", "seq", "batch*seq", "seq*12", "seq+1", "-seq+1", "?", "0",
                           "batch*seq*64+seq"}) {
    std::optional<Dim> d = Dim::parse(text);
    ASSERT_TRUE(d) << text;
    EXPECT_EQ(d->str(), text);
  }
  EXPECT_EQ(Dim::parse("2*(seq+1)")->str(), "seq*2+2");
  EXPECT_FALSE(Dim::parse("seq+"));
  EXPECT_FALSE(Dim::parse("3 4"));
  EXPECT_FALSE(Dim::parse("99999999999999999999999"));
}

TEST(Dim, Evaluate) {
  Dim d = *Dim::parse("batch*seq+seq*2");
  EXPECT_EQ(d.evaluate({{"batch", 3}, {"seq", 5}}), 25);
  EXPECT_FALSE(d.evaluate({{"batch", 3}}));
}

TEST(Shape, Printing) {
  EXPECT_EQ(Shape().str(), "[*]");
  EXPECT_EQ(Shape::scalar().str(), "[]");
  Shape s({Dim::symbol("batch"), Dim(384)});
  EXPECT_EQ(s.str(), "[batch, 384]");
  EXPECT_FALSE(s.isStatic());
  EXPECT_EQ(s.numElements().str(), "batch*384");
  EXPECT_EQ(TensorType({DType::F32, s}).str(), "f32[batch, 384]");
}

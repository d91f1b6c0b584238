//===- tests/unit/ir/MemoryBudgetTest.cpp - The tensor memory budget ---------===//
#include "ir/MemoryBudget.h"
#include "ir/Error.h"
#include "ir/Tensor.h"

#include <gtest/gtest.h>

using namespace onnxc;

namespace {

/// Sets a limit for one test and restores the default after it.
struct ScopedLimit {
  explicit ScopedLimit(int64_t bytes) { setMemoryLimit(bytes); }
  ~ScopedLimit() { setMemoryLimit(0); }
};

} // namespace

TEST(MemoryBudget, ParsesSizesWithBinaryUnits) {
  EXPECT_EQ(parseByteSize("4096"), 4096);
  EXPECT_EQ(parseByteSize("512K"), 512 << 10);
  EXPECT_EQ(parseByteSize("8m"), 8 << 20);
  EXPECT_EQ(parseByteSize("16G"), int64_t(16) << 30);
  EXPECT_EQ(parseByteSize("16GiB"), int64_t(16) << 30);
  EXPECT_EQ(parseByteSize("2TB"), int64_t(2) << 40);
  EXPECT_EQ(parseByteSize("100B"), 100);
  for (const char *bad : {"", "G", "lots", "-1", "1.5G", "8Q", "9223372036854775808",
                          "99999999999999999999", "8388608T"})
    EXPECT_FALSE(parseByteSize(bad)) << bad;
}

TEST(MemoryBudget, TensorsCountWhileAlive) {
  int64_t before = tensorBytesInUse();
  {
    Tensor t(DType::F32, {1000});
    EXPECT_GE(tensorBytesInUse() - before, 4000);
    Tensor shared = t; // a handle, not a second allocation
    EXPECT_LT(tensorBytesInUse() - before, 8000);
  }
  EXPECT_EQ(tensorBytesInUse(), before);
}

TEST(MemoryBudget, RefusesATensorOverTheLimitBeforeAllocating) {
  ScopedLimit limit(int64_t(64) << 20);
  int64_t before = tensorBytesInUse();
  try {
    Tensor t(DType::F32, {int64_t(1) << 25}); // 128 MiB
    FAIL() << "a 128 MiB tensor was allocated under a 64 MiB limit";
  } catch (const SizeError &e) {
    EXPECT_NE(std::string(e.what()).find("memory limit of 64.0 MiB"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(tensorBytesInUse(), before);
  // Two halves that fit alone do not fit together.
  Tensor first(DType::F32, {int64_t(10) << 20});
  EXPECT_THROW(Tensor(DType::F32, {int64_t(10) << 20}), SizeError);
}

TEST(MemoryBudget, LargeZeroedTensorsAreZero) {
  // Mapped lazily (see ir/Tensor.cpp); the contents must still read as zero.
  Tensor t(DType::F32, {int64_t(1) << 20});
  const float *data = t.data<float>();
  for (int64_t i = 0; i < t.numElements(); i += 4093)
    ASSERT_EQ(data[i], 0.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 64, 0u);
}

TEST(MemoryBudget, FormatsBytes) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(int64_t(3) << 29), "1.5 GiB");
  EXPECT_EQ(formatBytes(INT64_MAX), "8.0 EiB");
}

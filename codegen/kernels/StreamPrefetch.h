//===- codegen/kernels/StreamPrefetch.h - Prefetches ahead of a weight stream -===//
//
// The int4 GEMV kernels (Int4Gemv.h, Int4Int8Gemv.h) walk a few streams of
// packed weight records, each read once, from DRAM. Their work per byte keeps
// the out-of-order window from reaching far enough ahead for the hardware
// prefetchers to keep one core's memory pipe full: on a Xeon (Emerald Rapids)
// a 2048 x 5632 step read 12.7 GB/s with int8 activations and 8.5 GB/s with
// f32 ones, against 16 GB/s for a plain read. A software prefetch of every
// line a fixed distance ahead of each stream raised them to 15.5-16 and 10.5
// GB/s (onnxc_bench_int4gemv, alternating runs). 1 KiB ahead was as good as
// 2 KiB and better than 4 KiB; the same distance serves every block size,
// since what matters is the bytes in flight per stream.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"

#include <cstdint>

namespace onnxc {

/// Bytes ahead of a weight stream that its prefetches reach.
inline constexpr int64_t kWeightStreamPrefetchBytes = 1024;

/// Prefetches (into L1, for reading) the lines of `bytes` bytes starting
/// kWeightStreamPrefetchBytes past `record`. Called once per record of a
/// stream whose records are contiguous, the lines at 64-byte steps cover
/// every line of the stream. x86 prefetches do not fault, so the addresses
/// may lie past the buffer.
inline void prefetchAheadOfStream(llvm::IRBuilderBase &b, llvm::Value *record, int64_t bytes) {
  for (int64_t line = 0; line < bytes; line += 64) {
    llvm::Value *address =
        b.CreateGEP(b.getInt8Ty(), record, b.getInt64(kWeightStreamPrefetchBytes + line));
    b.CreateIntrinsic(llvm::Intrinsic::prefetch, {b.getPtrTy()},
                      {address, b.getInt32(0), b.getInt32(3), b.getInt32(1)});
  }
}

} // namespace onnxc

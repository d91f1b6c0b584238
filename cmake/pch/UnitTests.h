// Precompiled for tests/unit (cmake/PrecompiledHeaders.cmake): GoogleTest and the LLVM IR
// headers that most of its files include directly or through codegen's headers.
#pragma once

#include "LlvmIr.h"

#include <gtest/gtest.h>

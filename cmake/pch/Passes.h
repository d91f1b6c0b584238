// Precompiled for passes/ (cmake/PrecompiledHeaders.cmake): the IR's core and the pass and
// pattern-matching interfaces.
#pragma once

#include "Ir.h"

#include "passes/MatchSupport.h"
#include "passes/Pass.h"

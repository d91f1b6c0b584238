// Precompiled for the libraries built on the IR (cmake/PrecompiledHeaders.cmake): the
// standard headers and the IR's core, which nearly every file of theirs includes.
#pragma once

#include "Std.h"

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/Node.h"
#include "ir/OpAttributes.h"

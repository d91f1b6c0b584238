// Precompiled for frontend/ (cmake/PrecompiledHeaders.cmake): the IR's core and the op
// importers' interface, which brings ONNX's generated protobuf classes.
#pragma once

#include "Ir.h"

#include "frontend/OpImporterRegistry.h"

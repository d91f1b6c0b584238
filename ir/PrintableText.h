//===- ir/PrintableText.h - User text made safe for a one-line message -----===//
//
// Messages quote what the user gave (a path, a name, a header read from a
// file). A hostile one could hold a NUL that cuts the message, a newline
// that forges another line, or a terminal escape; quoted through this, it
// can do none of these.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace onnxc {

/// `text` with every control character (C0, DEL, C1) and every byte that
/// is not part of valid UTF-8 written as \xNN; printable ASCII and other
/// UTF-8 characters are kept as they are.
std::string printableText(std::string_view text);

} // namespace onnxc

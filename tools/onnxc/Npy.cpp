//===- tools/onnxc/Npy.cpp - NumPy .npy files <-> Tensor --------------------===//
#include "tools/onnxc/Npy.h"

#include "ir/Error.h"
#include "ir/MemoryBudget.h"
#include "ir/PrintableText.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace onnxc {

namespace {

/// "(2, 0, 3)", as numpy writes a shape.
std::string shapeText(const std::vector<int64_t> &dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

constexpr std::string_view kMagic = "\x93NUMPY";

struct DescrEntry {
  std::string_view code; // kind and size, without the byte-order mark
  DType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16}, {"i1", DType::I8},
    {"u1", DType::U8},  {"i2", DType::I16}, {"u2", DType::U16}, {"i4", DType::I32},
    {"u4", DType::U32}, {"i8", DType::I64}, {"u8", DType::U64}, {"b1", DType::Bool},
};

DType dtypeFromDescr(const std::string &descr, const std::string &name) {
  if (descr.empty())
    fail(name, ": npy header has an empty dtype");
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    order = '=';
    code = descr;
  }
  if (code.find('O') != std::string::npos)
    fail(name, ": npy object arrays (dtype '", printableText(descr), "') are not supported");
  for (const DescrEntry &entry : kDescrs) {
    if (entry.code != code)
      continue;
    bool oneByte = dtypeSize(entry.dtype) == 1;
    if (order == '>' && !oneByte)
      fail(name, ": npy dtype '", printableText(descr),
           "' is big-endian; save it little-endian ('<')");
    return entry.dtype;
  }
  fail(name, ": npy dtype '", printableText(descr), "' is not supported");
}

/// Reads the Python dict literal of an .npy header: string keys mapped to
/// strings, True/False, or tuples of non-negative ints.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &name) : text_(text), name_(name) {}

  void parse() {
    expect('{');
    while (true) {
      skipSpace();
      if (peek() == '}')
        break;
      std::string key = parseString();
      expect(':');
      skipSpace();
      if (key == "descr")
        descr = parseString();
      else if (key == "fortran_order")
        fortranOrder = parseBool();
      else if (key == "shape")
        shape = parseTuple();
      else
        bad("unexpected key '" + key + "'");
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}')
        bad("expected ',' or '}'");
    }
    ++pos_;
    skipSpace();
    if (pos_ != text_.size())
      bad("trailing characters after the dict");
    if (!descr || !fortranOrder || !shape)
      bad("missing 'descr', 'fortran_order' or 'shape'");
  }

  std::optional<std::string> descr;
  std::optional<bool> fortranOrder;
  std::optional<std::vector<int64_t>> shape;

private:
  [[noreturn]] void bad(const std::string &what) const {
    // `what` may quote the header, which the file's author wrote.
    fail(name_, ": malformed npy header: ", printableText(what));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  void expect(char c) {
    skipSpace();
    if (peek() != c)
      bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parseString() {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      bad("expected a quoted string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos)
      bad("unterminated string");
    std::string out(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool parseBool() {
    for (std::string_view word : {"True", "False"}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return word == "True";
      }
    }
    bad("fortran_order must be True or False");
  }
  std::vector<int64_t> parseTuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skipSpace();
      if (peek() == ')')
        break;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        bad("shape must be a tuple of non-negative ints");
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (int64_t(1) << 56))
          bad("shape dimension is too large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      if (peek() == 'L') // written by Python 2
        ++pos_;
      dims.push_back(value);
      skipSpace();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        bad("expected ',' or ')' in shape");
    }
    ++pos_;
    return dims;
  }

  std::string_view text_;
  const std::string &name_;
  size_t pos_ = 0;
};

uint32_t readLittleEndian(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= uint32_t(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

} // namespace

std::string npyDescr(DType dtype) {
  for (const DescrEntry &entry : kDescrs)
    if (entry.dtype == dtype)
      return (dtypeSize(dtype) == 1 ? "|" : "<") + std::string(entry.code);
  return "";
}

Tensor decodeNpy(std::string_view bytes, const std::string &name) {
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic)
    fail(name, ": not an npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    fail(name, ": npy format version ", major, ".", unsigned(static_cast<unsigned char>(bytes[7])),
         " is not supported (1.0 to 3.0 are)");
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = 8 + lengthWidth;
  if (bytes.size() < headerStart)
    fail(name, ": npy file is truncated in its header");
  size_t headerLength = readLittleEndian(bytes, 8, lengthWidth);
  if (bytes.size() - headerStart < headerLength)
    fail(name, ": npy file is truncated in its header");

  HeaderParser header(bytes.substr(headerStart, headerLength), name);
  header.parse();
  if (*header.fortranOrder)
    fail(name, ": npy arrays in fortran order are not supported; save a C-order array");
  DType dtype = dtypeFromDescr(*header.descr, name);

  std::string_view data = bytes.substr(headerStart + headerLength);
  // An empty array (any dim 0, an empty KV cache [b, h, 0, d]) has no data
  // whatever its other dims; numpy writes one whenever the product of its
  // other dims fits in int64, so that is what is taken. Otherwise count
  // elements against the data size as we go, so that a hostile shape cannot
  // overflow the product.
  const std::vector<int64_t> &dims = *header.shape;
  bool empty = std::find(dims.begin(), dims.end(), 0) != dims.end();
  if (empty) {
    int64_t others = 1;
    for (int64_t d : dims)
      if (d != 0 && __builtin_mul_overflow(others, d, &others))
        fail(name, ": npy shape ", shapeText(dims),
             " is too large: the product of its nonzero dims does not fit in int64");
  }
  uint64_t elements = empty ? 0 : 1;
  for (size_t i = 0; !empty && i < dims.size(); ++i)
    if (__builtin_mul_overflow(elements, uint64_t(dims[i]), &elements) || elements > data.size())
      fail(name, ": npy data size mismatch: shape ", shapeText(dims), " needs more than the ",
           data.size(), " bytes present");
  uint64_t expected = elements * dtypeSize(dtype); // elements <= data.size(): no overflow
  if (expected != data.size())
    fail(name, ": npy data size mismatch: shape ", shapeText(dims), " and dtype need ", expected,
         " bytes, file has ", data.size());
  Tensor tensor = Tensor::fromBytes(dtype, *header.shape, data.data(), data.size());
  if (dtype == DType::Bool) {
    uint8_t *values = tensor.data<uint8_t>();
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      values[i] = values[i] != 0;
  }
  return tensor;
}

Tensor readNpy(const std::string &path) {
  // Checked on the open descriptor before reading: a pipe would block for
  // ever and a device (/dev/zero) read until memory runs out.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    fail(path, ": cannot open file (", std::strerror(errno), ")");
  struct stat info {};
  std::string problem;
  if (::fstat(fd, &info) != 0)
    problem = std::strerror(errno);
  else if (!S_ISREG(info.st_mode))
    problem = "not a regular file; an input must be an .npy file";
  std::string contents;
  try {
    if (problem.empty()) {
      checkTensorBytesAvailable(int64_t(info.st_size));
      contents.resize(size_t(info.st_size));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  for (size_t done = 0; problem.empty() && done < contents.size();) {
    ssize_t got = ::read(fd, contents.data() + done, contents.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      problem = got < 0 ? std::strerror(errno) : "the file shrank while it was read";
      break;
    }
    done += size_t(got);
  }
  ::close(fd);
  if (!problem.empty())
    fail(path, ": ", problem);
  return decodeNpy(contents, path);
}

/// A bf16 tensor as the f32 tensor of the same values (exact).
static Tensor widenBfloat16(const Tensor &tensor) {
  Tensor wide(DType::F32, tensor.dims());
  const uint16_t *bits = tensor.data<uint16_t>();
  for (int64_t i = 0, n = tensor.numElements(); i < n; ++i)
    wide.data<float>()[i] = bfloat16ToFloat(bits[i]);
  return wide;
}

std::string encodeNpy(const Tensor &tensor, const std::string &name) {
  // numpy has no bfloat16: its values are written as the f32 they are.
  if (tensor.dtype() == DType::BF16 && tensor.hasData())
    return encodeNpy(widenBfloat16(tensor), name);
  std::string descr = npyDescr(tensor.dtype());
  if (descr.empty())
    fail(name, ": dtype ", dtypeName(tensor.dtype()), " has no npy equivalent");
  if (!tensor.hasData() && tensor.numElements() != 0)
    fail(name, ": tensor has no data to write");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.rank(); ++i)
    shape += (i ? ", " : "") + std::to_string(tensor.dims()[i]);
  shape += tensor.rank() == 1 ? ",)" : ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // numpy aligns the data to 64 bytes and ends the header with a newline.
  size_t prefix = header.size() + 1 + 10 > 65535 ? 12 : 10;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string out(kMagic);
  out += char(prefix == 10 ? 1 : 2);
  out += char(0);
  for (size_t i = 0; i < prefix - 8; ++i)
    out += char((header.size() >> (8 * i)) & 0xff);
  out += header;
  if (tensor.numElements())
    out.append(static_cast<const char *>(tensor.rawData()), tensor.byteSize());
  return out;
}

void writeNpy(const std::string &path, const Tensor &tensor) {
  std::string bytes = encodeNpy(tensor, path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    fail(path, ": cannot open file for writing");
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out)
    fail(path, ": write error");
}

} // namespace onnxc

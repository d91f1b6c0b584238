//===- driver/LibraryFileCheck.cpp - Is this file a model.so we can map? --===//
#include "driver/LibraryFileCheck.h"

#include "ir/Error.h"

#include <cerrno>
#include <cstring>
#include <elf.h>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace onnxc {

namespace {

/// The file being checked: reads by offset, never past its size.
class ElfFile {
public:
  ElfFile(int fd, const std::string &path, uint64_t size) : fd_(fd), path_(path), size_(size) {}

  uint64_t size() const { return size_; }

  /// Whether [offset, offset + length) lies inside the file.
  bool covers(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

  /// `count` records of `T` at `offset`, which the caller checked `covers`.
  template <typename T> std::vector<T> read(uint64_t offset, uint64_t count) const {
    std::vector<T> records(count);
    readBytes(offset, records.data(), count * sizeof(T));
    return records;
  }

  std::string readString(uint64_t offset, uint64_t length) const {
    std::string bytes(length, '\0');
    readBytes(offset, bytes.data(), length);
    return bytes;
  }

  [[noreturn]] void truncated(const std::string &what, uint64_t end) const {
    fail(path_, ": the model library is truncated or corrupt: ", what, " ends at byte ", end,
         " but the file has ", size_, " bytes (recompile the model)");
  }

private:
  void readBytes(uint64_t offset, void *out, uint64_t length) const {
    char *bytes = static_cast<char *>(out);
    for (uint64_t done = 0; done < length;) {
      ssize_t got = ::pread(fd_, bytes + done, size_t(length - done), off_t(offset + done));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        fail(path_, ": cannot read the model library (",
             got < 0 ? std::strerror(errno) : "file shrank while being read", ")");
      done += uint64_t(got);
    }
  }

  int fd_;
  const std::string &path_;
  uint64_t size_;
};

Elf64_Ehdr checkHeader(const ElfFile &file, const std::string &path) {
  if (file.size() < sizeof(Elf64_Ehdr))
    fail(path, ": not a model library: ", file.size(),
         " bytes is too short for an ELF shared object");
  Elf64_Ehdr header = file.read<Elf64_Ehdr>(0, 1)[0];
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    fail(path, ": not a model library: not an ELF file");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    fail(path, ": not a model library for this machine: not a 64-bit little-endian ELF file");
  if (header.e_machine != EM_X86_64)
    fail(path, ": not a model library for this machine: built for ELF machine ", header.e_machine,
         ", not x86-64 (", EM_X86_64, ")");
  if (header.e_type != ET_DYN)
    fail(path, ": not a model library: ELF type ", header.e_type,
         " is not a shared object (compile with --emit=so)");
  if (header.e_phnum == 0 || header.e_phentsize != sizeof(Elf64_Phdr))
    fail(path, ": the model library is corrupt: it has no valid program headers");
  if (!file.covers(header.e_phoff, uint64_t(header.e_phnum) * sizeof(Elf64_Phdr)))
    file.truncated("the program header table",
                   header.e_phoff + uint64_t(header.e_phnum) * sizeof(Elf64_Phdr));
  return header;
}

/// Every segment the loader maps must have its file bytes in the file.
void checkSegments(const ElfFile &file, const Elf64_Ehdr &header) {
  std::vector<Elf64_Phdr> segments = file.read<Elf64_Phdr>(header.e_phoff, header.e_phnum);
  for (size_t i = 0; i < segments.size(); ++i)
    if (!file.covers(segments[i].p_offset, segments[i].p_filesz))
      file.truncated("segment " + std::to_string(i), segments[i].p_offset + segments[i].p_filesz);
}

std::vector<Elf64_Shdr> readSections(const ElfFile &file, const Elf64_Ehdr &header,
                                     const std::string &path) {
  if (header.e_shoff == 0 || header.e_shnum == 0)
    return {};
  if (header.e_shentsize != sizeof(Elf64_Shdr))
    fail(path, ": the model library is corrupt: section headers of ", header.e_shentsize, " bytes");
  if (!file.covers(header.e_shoff, uint64_t(header.e_shnum) * sizeof(Elf64_Shdr)))
    file.truncated("the section header table",
                   header.e_shoff + uint64_t(header.e_shnum) * sizeof(Elf64_Shdr));
  std::vector<Elf64_Shdr> sections = file.read<Elf64_Shdr>(header.e_shoff, header.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i)
    if (sections[i].sh_type != SHT_NOBITS &&
        !file.covers(sections[i].sh_offset, sections[i].sh_size))
      file.truncated("section " + std::to_string(i), sections[i].sh_offset + sections[i].sh_size);
  return sections;
}

/// Whether the dynamic symbol table defines `name`.
bool exportsSymbol(const ElfFile &file, const std::vector<Elf64_Shdr> &sections,
                   const std::string &name) {
  for (const Elf64_Shdr &table : sections) {
    if (table.sh_type != SHT_DYNSYM || table.sh_entsize != sizeof(Elf64_Sym) ||
        table.sh_link >= sections.size())
      continue;
    const Elf64_Shdr &names = sections[table.sh_link];
    if (names.sh_type != SHT_STRTAB)
      continue;
    std::string strings = file.readString(names.sh_offset, names.sh_size);
    std::vector<Elf64_Sym> symbols =
        file.read<Elf64_Sym>(table.sh_offset, table.sh_size / sizeof(Elf64_Sym));
    for (const Elf64_Sym &symbol : symbols) {
      if (symbol.st_shndx == SHN_UNDEF || symbol.st_name >= strings.size())
        continue;
      size_t at = symbol.st_name;
      size_t length = strnlen(strings.data() + at, strings.size() - at);
      if (std::string_view(strings.data() + at, length) == name)
        return true;
    }
  }
  return false;
}

} // namespace

void checkModelLibraryFile(int fd, const std::string &path, const std::string &accessor) {
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    fail(path, ": cannot read the model library (", std::strerror(errno), ")");
  if (!S_ISREG(info.st_mode))
    fail(path, ": not a model library: not a regular file");
  ElfFile file(fd, path, uint64_t(info.st_size));
  Elf64_Ehdr header = checkHeader(file, path);
  checkSegments(file, header);
  std::vector<Elf64_Shdr> sections = readSections(file, header, path);
  if (!exportsSymbol(file, sections, accessor))
    fail(path, ": not an onnxc model library (no '", accessor, "' symbol)");
}

} // namespace onnxc

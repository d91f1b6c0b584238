//===- codegen/artifact/WeightsObject.cpp - A model's weights as an ELF object -===//
//
// The file, in order: the ELF header; the data section (each symbol at a
// 64-byte boundary: a cache line, and enough for any aligned vector load of
// packed weights); an empty .note.GNU-stack (without it GNU ld, the driver
// fallback's linker, would make the library's stack executable); the symbol
// table and its strings; the section names; the section headers.
//
//===----------------------------------------------------------------------===//
#include "codegen/artifact/WeightsObject.h"

#include "ir/Error.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <cstring>

namespace onnxc {

namespace {

namespace elf = llvm::ELF;

constexpr uint64_t DataAlignment = 64;

uint64_t alignTo(uint64_t offset, uint64_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

/// Section indices, in the order of the section headers.
enum Section : uint16_t { Null, Data, NoteStack, SymbolTable, Strings, SectionNames, Count };

/// Appends `name` and its terminating NUL to `table`; returns its offset.
uint32_t addString(std::string &table, const std::string &name) {
  uint32_t offset = uint32_t(table.size());
  table += name;
  table += '\0';
  return offset;
}

/// Where each part of the file goes and what its tables hold.
struct WeightsLayout {
  std::vector<uint64_t> symbolOffsets; // within the data section
  uint64_t dataOffset = 0, dataSize = 0;
  uint64_t symbolTableOffset = 0, stringsOffset = 0, sectionNamesOffset = 0, headersOffset = 0;
  std::string strings = std::string(1, '\0'), sectionNames = std::string(1, '\0');
  std::vector<elf::Elf64_Sym> symbolTable;
  std::vector<elf::Elf64_Shdr> headers;
};

WeightsLayout layOut(const std::vector<WeightsSymbol> &symbols, bool x86) {
  WeightsLayout layout;
  layout.dataOffset = alignTo(sizeof(elf::Elf64_Ehdr), DataAlignment);
  layout.symbolTable.push_back({}); // the null symbol
  for (const WeightsSymbol &symbol : symbols) {
    layout.dataSize = alignTo(layout.dataSize, DataAlignment);
    layout.symbolOffsets.push_back(layout.dataSize);
    elf::Elf64_Sym entry{};
    entry.st_name = addString(layout.strings, symbol.name);
    entry.setBindingAndType(elf::STB_GLOBAL, elf::STT_OBJECT);
    entry.st_other = elf::STV_HIDDEN;
    entry.st_shndx = Data;
    entry.st_value = layout.dataSize;
    entry.st_size = symbol.size;
    layout.symbolTable.push_back(entry);
    layout.dataSize += symbol.size;
  }
  layout.symbolTableOffset = alignTo(layout.dataOffset + layout.dataSize, 8);
  layout.stringsOffset =
      layout.symbolTableOffset + layout.symbolTable.size() * sizeof(elf::Elf64_Sym);

  layout.headers.resize(Count);
  auto section = [&](Section index, const char *name, uint32_t type, uint64_t flags,
                     uint64_t offset, uint64_t size, uint64_t alignment) {
    elf::Elf64_Shdr &header = layout.headers[index];
    header.sh_name = addString(layout.sectionNames, name);
    header.sh_type = type;
    header.sh_flags = flags;
    header.sh_offset = offset;
    header.sh_size = size;
    header.sh_addralign = alignment;
  };
  uint64_t dataFlags = elf::SHF_ALLOC | (x86 ? uint64_t(elf::SHF_X86_64_LARGE) : 0);
  section(Data, x86 ? ".lrodata" : ".rodata", elf::SHT_PROGBITS, dataFlags, layout.dataOffset,
          layout.dataSize, DataAlignment);
  section(NoteStack, ".note.GNU-stack", elf::SHT_PROGBITS, 0, layout.dataOffset, 0, 1);
  section(SymbolTable, ".symtab", elf::SHT_SYMTAB, 0, layout.symbolTableOffset,
          layout.symbolTable.size() * sizeof(elf::Elf64_Sym), 8);
  layout.headers[SymbolTable].sh_link = Strings;
  layout.headers[SymbolTable].sh_info = 1; // every symbol past the null one is global
  layout.headers[SymbolTable].sh_entsize = sizeof(elf::Elf64_Sym);
  section(Strings, ".strtab", elf::SHT_STRTAB, 0, layout.stringsOffset, layout.strings.size(), 1);
  layout.sectionNamesOffset = layout.stringsOffset + layout.strings.size();
  section(SectionNames, ".shstrtab", elf::SHT_STRTAB, 0, layout.sectionNamesOffset, 0, 1);
  layout.headers[SectionNames].sh_size = layout.sectionNames.size();
  layout.headersOffset = alignTo(layout.sectionNamesOffset + layout.sectionNames.size(), 8);
  return layout;
}

elf::Elf64_Ehdr fileHeader(const WeightsLayout &layout, uint16_t machine) {
  elf::Elf64_Ehdr header{};
  std::memcpy(header.e_ident, elf::ElfMagic, 4);
  header.e_ident[elf::EI_CLASS] = elf::ELFCLASS64;
  header.e_ident[elf::EI_DATA] = elf::ELFDATA2LSB;
  header.e_ident[elf::EI_VERSION] = elf::EV_CURRENT;
  header.e_ident[elf::EI_OSABI] = elf::ELFOSABI_NONE;
  header.e_type = elf::ET_REL;
  header.e_machine = machine;
  header.e_version = elf::EV_CURRENT;
  header.e_shoff = layout.headersOffset;
  header.e_ehsize = sizeof(elf::Elf64_Ehdr);
  header.e_shentsize = sizeof(elf::Elf64_Shdr);
  header.e_shnum = Count;
  header.e_shstrndx = SectionNames;
  return header;
}

/// Writes zeros up to `offset`.
void padTo(llvm::raw_ostream &out, uint64_t offset) {
  static const char zeros[DataAlignment] = {};
  while (out.tell() < offset)
    out.write(zeros, std::min<uint64_t>(offset - out.tell(), DataAlignment));
}

template <typename T> void writeRecords(llvm::raw_ostream &out, const std::vector<T> &records) {
  out.write(reinterpret_cast<const char *>(records.data()), records.size() * sizeof(T));
}

} // namespace

bool canWriteWeightsObject(const llvm::Triple &triple) {
  return triple.isOSBinFormatELF() &&
         (triple.getArch() == llvm::Triple::x86_64 || triple.getArch() == llvm::Triple::aarch64);
}

void writeWeightsObject(const std::string &path, const llvm::Triple &triple,
                        const std::vector<WeightsSymbol> &symbols) {
  // The records are written as this process holds them: a little-endian host
  // writing a little-endian object (both triples above are).
  if (!canWriteWeightsObject(triple) || !llvm::sys::IsLittleEndianHost)
    fail("cannot write the weights of '", path, "' as an object for ", triple.str());
  bool x86 = triple.getArch() == llvm::Triple::x86_64;
  WeightsLayout layout = layOut(symbols, x86);
  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_None);
  if (error)
    fail("cannot write '", path, "': ", error.message());
  elf::Elf64_Ehdr header = fileHeader(layout, x86 ? elf::EM_X86_64 : elf::EM_AARCH64);
  out.write(reinterpret_cast<const char *>(&header), sizeof(header));
  for (size_t i = 0; i < symbols.size(); ++i) {
    padTo(out, layout.dataOffset + layout.symbolOffsets[i]);
    out.write(reinterpret_cast<const char *>(symbols[i].data), symbols[i].size);
  }
  padTo(out, layout.symbolTableOffset);
  writeRecords(out, layout.symbolTable);
  out << layout.strings << layout.sectionNames;
  padTo(out, layout.headersOffset);
  writeRecords(out, layout.headers);
  out.close();
  if (out.has_error()) {
    std::string message = out.error().message();
    out.clear_error();
    fail("cannot write '", path, "': ", message);
  }
}

} // namespace onnxc

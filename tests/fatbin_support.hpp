// Reading an uncompressed fatbin as nvcc writes it, and the function names of its ELF images:
// what the tests of the embedded units (the generic tier, the GPU build's units) check without
// a GPU or cuobjdump.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace spmvc::test {

template <class T>
inline T read_at(std::span<const unsigned char> bytes, std::size_t offset) {
  REQUIRE(offset + sizeof(T) <= bytes.size());
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

// One image of a fatbin: kind 1 is PTX text, 2 an ELF (CUBIN); `arch` the SM number.
struct FatbinEntry {
  int kind = 0;
  unsigned arch = 0;
  std::span<const unsigned char> payload;
};

// The fatbin container as nvcc writes it (uncompressed): a 16-byte header (magic 0xBA55ED50,
// version, header size, size of the entries), then entries, each a header (kind at 0, its own
// size at 4, payload size at 8, SM number at 28) followed by its payload.
inline std::vector<FatbinEntry> fatbin_entries(std::span<const unsigned char> fatbin) {
  REQUIRE(read_at<std::uint32_t>(fatbin, 0) == 0xBA55ED50u);
  const std::size_t header = read_at<std::uint16_t>(fatbin, 6);
  const std::size_t end = header + read_at<std::uint64_t>(fatbin, 8);
  REQUIRE(end <= fatbin.size());
  std::vector<FatbinEntry> out;
  for (std::size_t at = header; at < end;) {
    FatbinEntry e;
    e.kind = read_at<std::uint16_t>(fatbin, at);
    const std::size_t entry_header = read_at<std::uint32_t>(fatbin, at + 4);
    const std::size_t payload = read_at<std::uint64_t>(fatbin, at + 8);
    e.arch = read_at<std::uint32_t>(fatbin, at + 28);
    REQUIRE(at + entry_header + payload <= end);
    e.payload = fatbin.subspan(at + entry_header, payload);
    out.push_back(e);
    at += entry_header + payload;
  }
  return out;
}

// Names of the function symbols (STT_FUNC) in an ELF64 image's symbol table.
inline std::set<std::string> elf_functions(std::span<const unsigned char> elf) {
  REQUIRE(elf.size() > 64);
  REQUIRE(std::memcmp(elf.data(),
                      "\x7f"
                      "ELF",
                      4) == 0);
  REQUIRE(elf[4] == 2);  // ELFCLASS64
  const auto shoff = read_at<std::uint64_t>(elf, 0x28);
  const std::size_t shentsize = read_at<std::uint16_t>(elf, 0x3a);
  const std::size_t shnum = read_at<std::uint16_t>(elf, 0x3c);
  std::set<std::string> names;
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t sh = shoff + i * shentsize;
    if (read_at<std::uint32_t>(elf, sh + 4) != 2) continue;  // SHT_SYMTAB
    const auto sym_off = read_at<std::uint64_t>(elf, sh + 0x18);
    const auto sym_size = read_at<std::uint64_t>(elf, sh + 0x20);
    const auto link = read_at<std::uint32_t>(elf, sh + 0x28);
    const auto entsize = read_at<std::uint64_t>(elf, sh + 0x38);
    REQUIRE(entsize >= 24);
    const std::size_t strsh = shoff + link * shentsize;
    const auto str_off = read_at<std::uint64_t>(elf, strsh + 0x18);
    for (std::size_t s = sym_off; s + entsize <= sym_off + sym_size; s += entsize) {
      const auto name = read_at<std::uint32_t>(elf, s);
      const auto info = read_at<std::uint8_t>(elf, s + 4);
      if ((info & 0xf) != 2) continue;  // STT_FUNC
      REQUIRE(str_off + name < elf.size());
      names.insert(reinterpret_cast<const char*>(elf.data() + str_off + name));
    }
  }
  return names;
}

}  // namespace spmvc::test

// The generic tier without a GPU: the fatbin nvcc built into the library holds sm_90 SASS and
// compute_90 PTX with every entry point the runtime looks up, the lanes-per-row rule, and
// SPMVC_TIERED / Options::tiered.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "generic_tier.hpp"
#include "spmvc/error.hpp"
#include "test_support.hpp"
#include "tiers.hpp"

using namespace spmvc;
using namespace spmvc::runtime;

namespace {

template <class T>
T read_at(std::span<const unsigned char> bytes, std::size_t offset) {
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
std::vector<FatbinEntry> fatbin_entries(std::span<const unsigned char> fatbin) {
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
std::set<std::string> elf_functions(std::span<const unsigned char> elf) {
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

std::vector<std::string> all_entries() {
  std::vector<std::string> out;
  for (int t = 1; t <= 32; t *= 2)
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64})
      for (bool offsets64 : {false, true}) out.push_back(generic_csr_entry(t, p, offsets64));
  return out;
}

}  // namespace

TEST_CASE("generic tier: entry point names") {
  CHECK(generic_csr_entry(1, Precision::f64, false) == "spmvc_generic_csr_t1_f64_i32");
  CHECK(generic_csr_entry(32, Precision::f32_acc64, true) == "spmvc_generic_csr_t32_f32acc64_i64");
  CHECK(generic_csr_entry(4, Precision::f32, true) == "spmvc_generic_csr_t4_f32_i64");
  CHECK(all_entries().size() == 36);
}

TEST_CASE("generic tier: lanes per row follow the mean row length, one to a warp") {
  CHECK(generic_threads_per_row(0, 0) == 1);
  CHECK(generic_threads_per_row(0, 10) == 1);
  CHECK(generic_threads_per_row(10, 10) == 1);
  CHECK(generic_threads_per_row(11, 10) == 2);    // mean 1.1 rounds up to 2
  CHECK(generic_threads_per_row(50, 10) == 8);    // mean 5
  CHECK(generic_threads_per_row(270, 10) == 32);  // mean 27 (a 27-point stencil)
  CHECK(generic_threads_per_row(std::int64_t{1} << 40, 10) == 32);
}

TEST_CASE("generic tier: the fatbin holds sm_90 SASS and PTX with every entry point") {
  const std::span<const unsigned char> fatbin = generic_csr_fatbin();
  const std::vector<FatbinEntry> entries = fatbin_entries(fatbin);
  int elf_images = 0, ptx_images = 0;
  for (const FatbinEntry& e : entries) {
    CAPTURE(e.kind);
    CHECK(e.arch == 90);
    if (e.kind == 2) {
      ++elf_images;
      const std::set<std::string> functions = elf_functions(e.payload);
      for (const std::string& name : all_entries()) {
        CAPTURE(name);
        CHECK(functions.count(name) == 1);
      }
    } else if (e.kind == 1) {
      ++ptx_images;
      const std::string ptx(e.payload.begin(), e.payload.end());
      CHECK(ptx.find(".target sm_90") != std::string::npos);
      for (const std::string& name : all_entries()) {
        CAPTURE(name);
        CHECK(ptx.find(".entry " + name + "(") != std::string::npos);
      }
    }
  }
  CHECK(elf_images == 1);
  CHECK(ptx_images == 1);
}

TEST_CASE("tiered: Options::tiered when set, else SPMVC_TIERED, else on") {
  Options o;
  {
    spmvc::test::EnvVar env("SPMVC_TIERED", nullptr);
    CHECK(tiered(o));
    o.tiered = false;
    CHECK_FALSE(tiered(o));
    o.tiered.reset();
    // A deterministic compile never tiers, even when asked to: the tiers round differently.
    Options deterministic;
    deterministic.deterministic = true;
    deterministic.tiered = true;
    CHECK_FALSE(tiered(deterministic));
  }
  for (const char* off : {"0", "off", "false"}) {
    spmvc::test::EnvVar env("SPMVC_TIERED", off);
    CHECK_FALSE(tiered(o));
    Options on;
    on.tiered = true;
    CHECK(tiered(on));
  }
  for (const char* on : {"1", "on", "true", ""}) {
    spmvc::test::EnvVar env("SPMVC_TIERED", on);
    CHECK(tiered(o));
  }
  spmvc::test::EnvVar env("SPMVC_TIERED", "maybe");
  try {
    (void)tiered(o);
    FAIL("SPMVC_TIERED=maybe was accepted");
  } catch (const InputError& e) {
    CHECK(e.source() == "SPMVC_TIERED");
    CHECK(std::string(e.what()).find("'maybe'") != std::string::npos);
  }
}

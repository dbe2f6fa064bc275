// csr_stream, value-coded and reordered units: generated source compared byte for byte with
// tests/golden/expected/<unit>.cu. Regenerate after an intended change with:
// SPMVC_UPDATE_GOLDEN=1 ctest -L golden
#include <doctest/doctest.h>

#include "golden/pinned_units.hpp"

namespace fs = std::filesystem;

TEST_CASE("csr_stream, value-coded and reordered units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  for (const auto& u : spmvc::test::pinned_units()) {
    CAPTURE(u.name);
    const spmvc::KernelSource src = spmvc::test::generate_pinned(u);
    spmvc::test::check_golden(dir / (u.name + ".cu"), src.source);
    CHECK(src.source == spmvc::test::generate_pinned(u).source);  // deterministic
  }
}

TEST_CASE("pinned units are what their names say") {
  for (const auto& u : spmvc::test::pinned_units()) {
    CAPTURE(u.name);
    const spmvc::KernelSource src = spmvc::test::generate_pinned(u);
    if (u.values != spmvc::formats::kValuesPlain)
      CHECK(src.kernel_name.find(spmvc::formats::value_coding_tag(u.values)) != std::string::npos);
    const bool mapped = u.reorder != spmvc::test::PinnedUnit::Reorder::none;
    CHECK((src.source.find("#define SPMVC_ROW_MAP 1") != std::string::npos) == mapped);
    const bool gathers = u.reorder == spmvc::test::PinnedUnit::Reorder::rows_and_columns;
    CHECK((src.pre_launches.size() == 1 &&
           src.pre_launches[0].entry.starts_with("spmvc_gather_x")) == gathers);
  }
}

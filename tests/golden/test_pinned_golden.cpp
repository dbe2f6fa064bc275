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
    using R = spmvc::test::PinnedUnit::Reorder;
    // The columns alone keep the rows: no row map.
    const bool mapped = u.reorder == R::rows || u.reorder == R::rows_and_columns;
    CHECK((src.source.find("#define SPMVC_ROW_MAP 1") != std::string::npos) == mapped);
    const bool gathers = u.reorder == R::rows_and_columns;
    CHECK((src.pre_launches.size() == 1 &&
           src.pre_launches[0].entry.starts_with("spmvc_gather_x")) == gathers);
    // x read in two parts: the hubs gathered, every launch that reads x given them.
    const bool hubs = u.reorder == R::columns_hubs;
    CHECK((src.pre_launches.size() == 1 &&
           src.pre_launches[0].entry.starts_with("spmvc_gather_hubs")) == hubs);
    CHECK((src.source.find("spmvc::SplitX<Value>{x, x_hub, ncols}") != std::string::npos) == hubs);
    CHECK((src.kernel_name.find("_xhub") != std::string::npos) == hubs);
  }
}

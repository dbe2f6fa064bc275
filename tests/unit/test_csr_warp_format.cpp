// The csr_warp format unit: its partition (chunks of at most `chunk` nonzeros and 64 rows, long
// rows cut into pieces, groups cut independently, padding to whole blocks), the reference walk
// over the chunks against plain CSR, parameter checks, the planner's candidate and the
// two-launch unit.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "format_roundtrip.hpp"
#include "formats/arrays.hpp"
#include "formats/csr_warp/csr_warp_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/profile.hpp"
#include "test_support.hpp"

using namespace spmvc;
using formats::CsrWarpFormat;

namespace {

CsrWarpParams warp(int chunk) {
  CsrWarpParams p;
  p.chunk = chunk;
  return p;
}

// Rows of the given lengths (columns spread over 300), values from the row and column.
CsrMatrix rows_of(const std::vector<std::int64_t>& lengths, std::int64_t ncols = 300) {
  CsrMatrix a;
  a.nrows = static_cast<std::int64_t>(lengths.size());
  a.ncols = ncols;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    for (std::int64_t k = 0; k < lengths[r]; ++k) {
      a.col_idx.push_back(
          static_cast<std::int32_t>((k * 7 + static_cast<std::int64_t>(r)) % ncols));
      a.values.push_back(1.0 + static_cast<double>((r + static_cast<std::size_t>(k)) % 5) * 0.25);
    }
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  return a;
}

// Short rows, empty rows, a row of exactly the chunk, rows one past it and many times it, and a
// run of more than 64 one-nonzero rows.
CsrMatrix mixed(int chunk) {
  std::vector<std::int64_t> lengths = {3, 0, 5, chunk, chunk + 1, 0, 0, 40, 7 * chunk + 3, 1};
  for (int i = 0; i < 150; ++i) lengths.push_back(i % 3 == 0 ? 0 : 1);
  lengths.push_back(2 * chunk);
  lengths.push_back(0);
  return rows_of(lengths);
}

double roundtrip_error(const CsrMatrix& a, const CsrWarpParams& params, double alpha = 1.0,
                       double beta = 0.0, Precision precision = Precision::f64) {
  return test::reference_roundtrip_error(a, params, alpha, beta, precision);
}

}  // namespace

TEST_CASE("csr_warp: the partition's chunks hold whole rows or one piece of a long row") {
  for (const int chunk : {64, 128, 512}) {
    CAPTURE(chunk);
    const CsrMatrix a = mixed(chunk);
    const auto part = CsrWarpFormat::partition(a, chunk);
    const std::size_t n = part.row.size() - 1;
    REQUIRE(part.nz.size() == part.row.size());
    CHECK(n % CsrWarpFormat::kWarpsPerBlock == 0);
    CHECK(part.long_rows.size() % (3 * CsrWarpFormat::kWarpsPerBlock) == 0);
    std::int64_t longs = 0;
    for (std::int64_t r = 0; r < a.nrows; ++r) longs += a.row_length(r) > chunk ? 1 : 0;
    CHECK(part.long_count == longs);
    // Walk the chunks: each either holds whole rows (its nonzeros exactly theirs, at most 64
    // rows and `chunk` nonzeros) or one piece of a long row; the pieces of a row are consecutive
    // and its long_rows entry names the first.
    std::int64_t next_row = 0, entry = 0;
    for (std::size_t w = 0; w < n; ++w) {
      const std::int64_t r0 = part.row[w], r1 = part.row[w + 1];
      const std::int64_t s = part.nz[w], t = part.nz[w + 1];
      CAPTURE(w);
      CHECK(t - s <= chunk);
      CHECK(r1 - r0 <= CsrWarpFormat::kChunkRows);
      if (r0 == a.nrows) {  // padding
        CHECK(s == a.nnz());
        CHECK(t == a.nnz());
        continue;
      }
      REQUIRE(r0 == next_row);
      if (a.row_length(r0) > chunk) {
        const std::int64_t pieces = (a.row_length(r0) + chunk - 1) / chunk;
        REQUIRE(entry < part.long_count);
        CHECK(part.long_rows[static_cast<std::size_t>(3 * entry)] == r0);
        CHECK(part.long_rows[static_cast<std::size_t>(3 * entry + 1)] == static_cast<int>(w));
        CHECK(part.long_rows[static_cast<std::size_t>(3 * entry + 2)] == pieces);
        for (std::int64_t q = 0; q < pieces; ++q) {
          CHECK(part.row[w + static_cast<std::size_t>(q)] == r0);
          CHECK(part.nz[w + static_cast<std::size_t>(q)] ==
                a.row_ptr[static_cast<std::size_t>(r0)] + q * chunk);
        }
        CHECK(part.row[w + static_cast<std::size_t>(pieces)] == r0 + 1);
        w += static_cast<std::size_t>(pieces) - 1;
        ++entry;
        next_row = r0 + 1;
        continue;
      }
      CHECK(s == a.row_ptr[static_cast<std::size_t>(r0)]);
      CHECK(t == a.row_ptr[static_cast<std::size_t>(r1)]);
      next_row = r1;
    }
    CHECK(next_row == a.nrows);
    CHECK(entry == part.long_count);
  }
}

TEST_CASE("csr_warp: groups of 2048 rows are cut apart and the chunks fill") {
  // 5000 rows of 3: a chunk of 512 nonzeros stops at 64 rows; the groups end at 2048 and 4096.
  const CsrMatrix a = rows_of(std::vector<std::int64_t>(5000, 3));
  const auto part = CsrWarpFormat::partition(a, 512);
  std::vector<std::int64_t> starts(part.row.begin(), part.row.end());
  CHECK(std::find(starts.begin(), starts.end(), 2048) != starts.end());
  CHECK(std::find(starts.begin(), starts.end(), 4096) != starts.end());
  // 2048 = 32 x 64: full chunks up to the group's end; 5000 - 4096 = 904 rows: 14 full and one
  // of 8.
  const std::size_t real =
      static_cast<std::size_t>(std::find(starts.begin(), starts.end(), a.nrows) - starts.begin());
  CHECK(real == 32 + 32 + 15);
  const CsrWarpFormat::Estimate est = CsrWarpFormat::estimate(inspect(a, InspectDepth::rows), 512);
  CHECK(est.chunks == doctest::Approx(static_cast<double>(real)).epsilon(0.1));
  CHECK(est.long_rows == 0);
}

TEST_CASE("csr_warp: the reference over the chunks equals CSR, with alpha, beta and pieces") {
  for (const int chunk : {64, 512}) {
    CAPTURE(chunk);
    CHECK(roundtrip_error(mixed(chunk), warp(chunk)) < 1e-14);
    CHECK(roundtrip_error(mixed(chunk), warp(chunk), 1.5, -0.5) < 1e-14);
    CHECK(roundtrip_error(mixed(chunk), warp(chunk), 2.0, 0.0, Precision::f32) < 1e-14);
  }
  for (const char* spec : {"rmat:scale=11,ef=8", "stencil27:n=9", "random:n=3000,per_row=9"}) {
    CAPTURE(spec);
    const CsrMatrix a = gen::from_spec(spec);
    CHECK(roundtrip_error(a, warp(128), 1.0, 1.0) < 1e-14);
  }
  CHECK(roundtrip_error(test::dense_row_rectangular(), warp(64)) < 1e-14);
  CsrMatrix empty;
  empty.ncols = 4;
  CHECK(roundtrip_error(empty, warp(512)) == 0.0);
}

TEST_CASE("csr_warp: a damaged partition is refused by the reference, not summed") {
  const CsrWarpFormat f;
  const CsrMatrix a = mixed(64);
  Encoded e = f.encode(a, warp(64), Precision::f64);
  std::vector<double> x(static_cast<std::size_t>(a.ncols), 1.0),
      y(static_cast<std::size_t>(a.nrows));
  // A chunk that starts a row late leaves that row's first nonzero to nobody.
  std::int32_t* rows = formats::typed_mut<std::int32_t>(e.arrays[0]);
  REQUIRE(e.arrays[0].name == "chunk_row");
  rows[1] += 1;
  CHECK_THROWS_AS(f.reference_spmv(e, warp(64), x, y, 1.0, 0.0), InternalError);
}

TEST_CASE("csr_warp: parameter checks, the candidate and the two-launch unit") {
  const CsrWarpFormat f;
  const CsrMatrix a = mixed(512);
  const Profile profile = inspect(a, InspectDepth::full);
  CHECK(f.cannot_implement(profile, warp(100), Precision::f64).has_value());
  CHECK(f.cannot_implement(profile, warp(8192), Precision::f64).has_value());
  CHECK_FALSE(f.cannot_implement(profile, warp(64), Precision::f64).has_value());
  CHECK_THROWS_AS(f.encode(a, warp(96), Precision::f64), InputError);

  const std::vector<Candidate> candidates = f.propose(profile, Precision::f64);
  REQUIRE_FALSE(candidates.empty());
  CHECK(candidates.front().applicable);
  CHECK(std::get<CsrWarpParams>(candidates.front().params).chunk == 512);
  CHECK(candidates.front().reason.find("warp chunks") != std::string::npos);

  // Two long rows (7 x 512 + 3 and 2 x 512): the fixup runs after the main kernel.
  const Encoded e = f.encode(a, warp(512), Precision::f64);
  const KernelSource k = f.generate(e, warp(512), "banner");
  CHECK(k.kernel_name == "spmv_csr_warp_c512_f64");
  CHECK(k.grid * CsrWarpFormat::kWarpsPerBlock == e.array("chunk_row").count() - 1);
  REQUIRE(k.post_launches.size() == 1);
  CHECK(k.post_launches[0].entry == "spmv_csr_warp_fixup_c512_f64");
  CHECK(k.post_launches[0].grid == 1);
  CHECK(k.source.find("spmvc::csr_warp::fixup") != std::string::npos);
  CHECK(k.source.find("double* __restrict__ partial") != std::string::npos);
  CHECK(e.array("partial").scratch);
  CHECK(e.total_bytes() < e.nnz * 12 + (e.nrows + 1) * 4 + 4096);

  // No row longer than the chunk: no second launch.
  const CsrMatrix short_rows = rows_of(std::vector<std::int64_t>(100, 9));
  const Encoded s = f.encode(short_rows, warp(512), Precision::f32);
  const KernelSource ks = f.generate(s, warp(512), "banner");
  CHECK(ks.post_launches.empty());
  CHECK(ks.kernel_name == "spmv_csr_warp_c512_f32");
}

TEST_CASE("csr_warp: planned only where the GPU's calibration prices its gathers") {
  // A power-law graph, where csr_warp's model counts gathered x sectors.
  const CsrMatrix g = gen::from_spec("rmat:scale=12,ef=16");
  const Profile profile = inspect(g, InspectDepth::full);
  auto warp_candidate = [&](const Plan& plan) {
    const auto it = std::find_if(plan.candidates.begin(), plan.candidates.end(),
                                 [](const Candidate& c) { return c.format == "csr_warp"; });
    REQUIRE(it != plan.candidates.end());
    return *it;
  };
  compiler::PlanOptions o;
  o.arch = "sm_90";
  o.gpu = "H100";  // no csr_warp row in its calibration
  const Candidate on_h100 = warp_candidate(compiler::make_plan(profile, o));
  CHECK_FALSE(on_h100.applicable);
  CHECK(on_h100.reason.find("no calibration of csr_warp") != std::string::npos);
  CHECK(on_h100.predicted_seconds > 0);  // kept for the calibration's first fit
  o.gpu = "H200";
  const Candidate on_h200 = warp_candidate(compiler::make_plan(profile, o));
  CHECK(on_h200.applicable);
  // Named by the caller, it is planned on the H100 all the same.
  o.gpu = "H100";
  o.format = "csr_warp";
  const Plan named = compiler::make_plan(profile, o);
  CHECK(named.format == "csr_warp");
}

// csr_stream (compiler/formats/csr_stream): the row-block partition respects its limits and
// covers every row once, the host reference equals plain CSR on awkward shapes, the planner's
// block estimate tracks the real partition, and bad parameters are refused with a reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "formats/csr_stream/csr_stream_format.hpp"
#include "formats/format.hpp"
#include "spmvc/compiler/build_choice.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
using namespace spmvc::formats;

namespace {

CsrMatrix awkward(std::int64_t n) { return test::short_and_long_rows(n, true); }

double round_trip(const CsrMatrix& a, const CsrStreamParams& p, Precision precision) {
  const CsrStreamFormat unit;
  const Encoded e = unit.encode(a, p, precision);
  const std::vector<double> x = codegen::test_vector(a.ncols, precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  std::vector<double> ref = y;
  CsrMatrix rounded = a;
  if (precision != Precision::f64)
    for (double& v : rounded.values) v = static_cast<double>(static_cast<float>(v));
  unit.reference_spmv(e, p, x, y, -1.5, 0.5);
  compiler::csr_reference_spmv(rounded, x, ref, -1.5, 0.5);
  return compiler::relative_error(y, ref);
}

}  // namespace

TEST_CASE("csr_stream: two rows a lane let a block hold twice its threads in rows") {
  // A 5-point stencil: 5 nonzeros a row, so a tile of 2048 holds about 400 rows.
  const CsrMatrix a = gen::stencil_2d_5pt(300, 200);
  const CsrStreamFormat unit;
  CsrStreamParams p;
  p.block_size = 256;
  p.tile = 2048;
  const auto widest = [&](const CsrStreamParams& q) {
    const Encoded e = unit.encode(a, q, Precision::f32);
    const auto* rb = reinterpret_cast<const std::int32_t*>(e.array("row_blocks").bytes.data());
    std::int64_t most = 0;
    for (std::int64_t b = 0; b + 1 < e.array("row_blocks").count(); ++b)
      most = std::max<std::int64_t>(most, rb[b + 1] - rb[b]);
    return most;
  };
  CHECK(widest(p) == 256);  // one row a lane: the rows bind before the tile
  p.rows_per_lane = 2;
  CHECK(p.block_rows() == 512);
  const std::int64_t two = widest(p);
  CHECK(two > 256);
  CHECK(two <= 512);
  // Fewer blocks, so the model charges fewer block starts.
  const Profile profile = inspect(a, InspectDepth::rows);
  CsrStreamParams one = p;
  one.rows_per_lane = 1;
  CHECK(CsrStreamFormat::estimated_blocks(profile, p) <
        0.7 * CsrStreamFormat::estimated_blocks(profile, one));
  CHECK(unit.cannot_implement(profile, p, Precision::f32) == std::nullopt);
  p.rows_per_lane = 3;
  const auto why = unit.cannot_implement(profile, p, Precision::f32);
  REQUIRE(why);
  CHECK(why->find("3 rows a lane") != std::string::npos);
}

TEST_CASE("csr_stream: blocks hold at most a tile and a group's rows, or one longer row") {
  const CsrMatrix a = awkward(20000);
  for (const auto& [block, tile] : {std::pair{256, 1024}, {128, 512}, {64, 64}, {256, 2048}}) {
    CAPTURE(block);
    CAPTURE(tile);
    const std::vector<std::int32_t> rb = CsrStreamFormat::row_blocks(a, tile, block);
    REQUIRE(rb.front() == 0);
    REQUIRE(rb.back() == a.nrows);
    int long_blocks = 0;
    for (std::size_t b = 0; b + 1 < rb.size(); ++b) {
      const std::int64_t first = rb[b], last = rb[b + 1];
      REQUIRE(last > first);
      const std::int64_t nnz = a.row_ptr[last] - a.row_ptr[first];
      if (nnz > tile) {
        // Only a lone row may exceed the tile.
        CHECK(last - first == 1);
        ++long_blocks;
        continue;
      }
      CHECK(last - first <= block);
      // Blocks stay inside their group of rows.
      constexpr int kGroup = CsrStreamFormat::kGroupRows;
      CHECK((last - 1) / kGroup == first / kGroup);
      // Greedy inside the group: the next row would have broken a limit, or the group ends.
      if (last < a.nrows) {
        const bool group_end = last % kGroup == 0;
        const bool rows_full = last - first == block;
        const bool tile_full = a.row_ptr[last + 1] - a.row_ptr[first] > tile;
        CHECK((group_end || rows_full || tile_full));
      }
    }
    std::int64_t expected_long = 0;
    for (std::int64_t r = 0; r < a.nrows; ++r) expected_long += a.row_length(r) > tile;
    CHECK(long_blocks == expected_long);

    // The planner's estimate from the profile alone is within 30% of the real count.
    CsrStreamParams p;
    p.block_size = block;
    p.tile = tile;
    const double estimate = CsrStreamFormat::estimated_blocks(inspect(a, InspectDepth::rows), p);
    CHECK(estimate == doctest::Approx(static_cast<double>(rb.size() - 1)).epsilon(0.3));
  }
}

TEST_CASE("csr_stream: the host reference equals plain CSR, with empty and long rows") {
  for (const CsrMatrix& a : {awkward(20000), gen::rmat(12, 16), gen::stencil_2d_5pt(50, 70)}) {
    for (Precision precision : {Precision::f64, Precision::f32}) {
      for (const auto& [block, tile] : {std::pair{256, 1024}, {128, 512}}) {
        CsrStreamParams p;
        p.block_size = block;
        p.tile = tile;
        CAPTURE(a.nrows);
        CAPTURE(tile);
        CHECK(round_trip(a, p, precision) <= (precision == Precision::f64 ? 1e-14 : 1e-6));
      }
    }
  }
  // No rows at all: one empty block keeps the launch valid.
  CsrMatrix empty;
  CHECK(CsrStreamFormat::row_blocks(empty, 1024, 256) == std::vector<std::int32_t>{0, 0});
}

TEST_CASE("csr_stream: bad parameters are refused with the reason") {
  const CsrMatrix a = gen::stencil_2d_5pt(20, 20);
  const Profile profile = inspect(a, InspectDepth::rows);
  const CsrStreamFormat unit;
  auto why = [&](int block, int tile) {
    CsrStreamParams p;
    p.block_size = block;
    p.tile = tile;
    return unit.cannot_implement(profile, p, Precision::f64).value_or("");
  };
  CHECK(why(256, 1024).empty());
  CHECK(why(100, 1000).find("block size 100") != std::string::npos);
  CHECK(why(256, 1000).find("tile 1000 is not 1..8 times") != std::string::npos);
  CHECK(why(512, 4096).empty());
  CHECK(why(256, 4096).find("tile 4096 is not 1..8 times") != std::string::npos);
  CHECK(why(1024, 8192).find("exceeds 4096") != std::string::npos);

  // The planner proposes it; with --format csr_stream it is the plan and names its shape.
  compiler::PlanOptions o;
  o.format = "csr_stream";
  const Plan plan = compiler::make_plan(profile, o);
  CHECK(plan.format == "csr_stream");
  const Encoded e = unit.encode(a, plan.params, Precision::f32);
  const KernelSource k = unit.generate(e, plan.params, "");
  CHECK(k.kernel_name.rfind("spmv_csr_stream_b", 0) == 0);
  CHECK(k.grid == e.array("row_blocks").count() - 1);
}

TEST_CASE("csr_stream: 16-bit columns per block, with wide blocks in the side array") {
  // Rows 0..59999 banded (their blocks fit 16-bit offsets), the rest scattered over 300000
  // columns (their blocks do not).
  CsrMatrix a;
  a.nrows = 120000;
  a.ncols = 300000;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    for (std::int64_t j = 0; j < 6; ++j) {
      const std::int64_t c = r < 60000 ? r + j : (r * 7919 + j * 50021) % a.ncols;
      a.col_idx.push_back(static_cast<std::int32_t>(c));
      a.values.push_back(1.0 + static_cast<double>((r + j) % 9));
    }
    std::sort(a.col_idx.end() - 6, a.col_idx.end());
    a.row_ptr.push_back(a.nnz());
  }
  validate(a);
  const CsrStreamFormat unit;
  CsrStreamParams p;
  p.narrow_columns = true;
  const Encoded e = unit.encode(a, p, Precision::f64);
  const EncodedArray& base = e.array("col_base");
  const auto* b = reinterpret_cast<const std::int32_t*>(base.bytes.data());
  const std::int64_t nblocks = base.count();
  const std::int64_t wide = std::count_if(b, b + nblocks, [](std::int32_t v) { return v < 0; });
  CHECK(wide > 0);
  CHECK(wide < nblocks);
  CHECK(e.array("col16").count() == a.nnz());
  CHECK(e.array("col_wide").count() < a.nnz());
  for (Precision precision : {Precision::f64, Precision::f32}) {
    CHECK(round_trip(a, p, precision) <= (precision == Precision::f64 ? 1e-14 : 1e-6));
  }

  // All narrow on a band: 2 bytes a nonzero saved against 32-bit columns, as the model says.
  const CsrMatrix band = gen::banded(200000, 4);
  const Profile profile = inspect(band, InspectDepth::rows);
  CsrStreamParams plain;
  CHECK(CsrStreamFormat::narrow_share(profile, p) == 1.0);
  const double saved = static_cast<double>(unit.encode(band, plain, Precision::f32).total_bytes() -
                                           unit.encode(band, p, Precision::f32).total_bytes());
  const double modelled = unit.cost(profile, plain, Precision::f32).matrix_bytes -
                          unit.cost(profile, p, Precision::f32).matrix_bytes;
  CHECK(saved == doctest::Approx(2.0 * static_cast<double>(band.nnz())).epsilon(0.05));
  CHECK(modelled == doctest::Approx(saved).epsilon(0.1));
  CHECK(round_trip(band, p, Precision::f64) <= 1e-14);

  // The share estimate: guaranteed on a band, nothing on columns scattered over 300000.
  CHECK(CsrStreamFormat::narrow_share(
            inspect(gen::random_uniform(100000, 300000, 8), InspectDepth::rows), p) == 0.0);
  CsrStreamParams both = p;
  both.offsets64 = true;
  CHECK(unit.cannot_implement(profile, both, Precision::f64).value_or("").find("64-bit") !=
        std::string::npos);
}

TEST_CASE(
    "csr_stream: the inspector's narrow share matches the encoded blocks; c16 proposed where it "
    "fits") {
  // 20 copies of a 3000 x 50000 matrix with scattered columns: a block within one copy spans
  // < 50000 columns, a block that meets two copies spans > 65536. ncols = 10^6, rectangular,
  // so only the measured share can tell.
  const CsrMatrix a = gen::replicate(gen::random_uniform(3000, 50000, 12), 20);
  const Profile profile = inspect(a, InspectDepth::rows);
  REQUIRE(profile.narrow_slice_nnz > 0);
  const double share = static_cast<double>(profile.narrow_slice_nnz) / static_cast<double>(a.nnz());
  CHECK(share < 1.0);  // some slices straddle two copies
  CHECK(share > 0.8);

  CsrStreamParams p;
  p.narrow_columns = true;
  CHECK(CsrStreamFormat::narrow_share(profile, p) == share);
  const CsrStreamFormat unit;
  const Encoded e = unit.encode(a, p, Precision::f32);
  const auto* base = reinterpret_cast<const std::int32_t*>(e.array("col_base").bytes.data());
  const std::vector<std::int32_t> blocks = CsrStreamFormat::row_blocks(a, p.tile, p.block_size);
  std::int64_t narrow_nnz = 0;
  for (std::size_t b = 0; b + 1 < blocks.size(); ++b) {
    if (base[b] >= 0) narrow_nnz += a.row_ptr[blocks[b + 1]] - a.row_ptr[blocks[b]];
  }
  // Blocks are not aligned to the slices: the shares agree to a few percent.
  CHECK(static_cast<double>(narrow_nnz) / static_cast<double>(a.nnz()) ==
        doctest::Approx(share).epsilon(0.05));

  const auto narrow_candidates = [&](const Profile& pr) {
    std::int64_t n = 0;
    for (const Candidate& c : unit.propose(pr, Precision::f32)) {
      n += std::get<CsrStreamParams>(c.params).narrow_columns ? 1 : 0;
    }
    return n;
  };
  CHECK(narrow_candidates(profile) > 0);
  const Profile scattered = inspect(gen::random_uniform(100000, 300000, 8), InspectDepth::rows);
  CHECK(scattered.narrow_slice_nnz == 0);
  CHECK(narrow_candidates(scattered) == 0);
}

TEST_CASE("csr_stream: sorted tiles hold each block's nonzeros in column order, with their slots") {
  // Short rows of a graph, long rows (some past the tile) and empty ones; 32- and 16-bit columns
  // and coded values.
  const CsrMatrix awkward_rows = awkward(20000);
  const CsrMatrix graph = gen::replicate(gen::rmat(11, 12), 3);
  for (const CsrMatrix* m : {&awkward_rows, &graph}) {
    const CsrMatrix& a = *m;
    for (const bool narrow : {false, true}) {
      for (const int coding : {kValuesPlain, kValuesTable8}) {
        CsrStreamParams p;
        p.tile = 2048;
        p.narrow_columns = narrow;
        p.values = coding;
        p.sorted = true;
        const Profile profile = inspect(a, InspectDepth::rows);
        if (coding != kValuesPlain &&
            CsrStreamFormat().cannot_implement(profile, p, Precision::f64).has_value())
          continue;
        CAPTURE(a.nrows);
        CAPTURE(narrow);
        CAPTURE(coding);
        const CsrStreamFormat unit;
        const Encoded e = unit.encode(a, p, Precision::f64);
        const EncodedArray& slots_arr = e.array("slots");
        REQUIRE(slots_arr.count() == a.nnz());
        const auto* slots = reinterpret_cast<const std::uint16_t*>(slots_arr.bytes.data());
        const std::vector<std::int32_t> blocks = CsrStreamFormat::row_blocks(a, p.tile, 256);
        // In each block that fits the tile the slots are a permutation of its nonzeros, and the
        // nonzero a slot names in CSR order has a column no smaller than the one before it in
        // the stored order: stored column order, slot back to CSR order.
        bool permutation = true, ordered = true, long_in_order = true;
        for (std::size_t b = 0; b + 1 < blocks.size(); ++b) {
          const std::int64_t start = a.row_ptr[blocks[b]], end = a.row_ptr[blocks[b + 1]];
          const std::int64_t n = end - start;
          std::vector<char> seen(static_cast<std::size_t>(n), 0);
          std::int32_t previous = -1;
          for (std::int64_t k = start; k < end; ++k) {
            const std::int64_t slot = slots[k];
            if (n > p.tile) {
              long_in_order = long_in_order && slot == (k - start) % 65536;
              continue;
            }
            if (slot >= n || seen[static_cast<std::size_t>(slot)]) {
              permutation = false;
              break;
            }
            seen[static_cast<std::size_t>(slot)] = 1;
            const std::int32_t c = a.col_idx[static_cast<std::size_t>(start + slot)];
            ordered = ordered && c >= previous;
            previous = c;
          }
        }
        CHECK(permutation);
        CHECK(ordered);
        CHECK(long_in_order);
        // The host reference reads the stored order through the slots: the same y as CSR.
        for (Precision precision : {Precision::f64, Precision::f32}) {
          CHECK(round_trip(a, p, precision) <= (precision == Precision::f64 ? 1e-14 : 1e-6));
        }
        // Two bytes a nonzero more than the same tiles in CSR order, as the model counts.
        CsrStreamParams in_order = p;
        in_order.sorted = false;
        const double extra = static_cast<double>(
            e.total_bytes() - unit.encode(a, in_order, Precision::f64).total_bytes());
        CHECK(extra == 2.0 * static_cast<double>(a.nnz()));
        CHECK(unit.cost(profile, p, Precision::f64).matrix_bytes -
                  unit.cost(profile, in_order, Precision::f64).matrix_bytes ==
              doctest::Approx(extra));
      }
    }
  }
  // Sorted tiles are built on the host only: the GPU build of device arrays refuses them with the
  // reason, and compile(CsrMatrix) takes the host path for them.
  CsrStreamParams sorted;
  sorted.sorted = true;
  Options o;
  o.params = FormatParams{sorted};
  const compiler::BuildChoice choice = compiler::choose_build(o, {1000, 1000, 10000, 0});
  CHECK(choice.path == compiler::BuildPath::host);
  CHECK(choice.why.find("sorted tiles") != std::string::npos);
  o.build = BuildMode::device;
  CHECK_THROWS_WITH_AS(compiler::choose_build(o, {1000, 1000, 10000, 0}),
                       doctest::Contains("sorted tiles"), InputError);
}

namespace {

// Runs of 128 rows of 16 nonzeros, each followed by three empty rows: every 2,048-nonzero tile
// fills exactly and ends on empty rows, which start one past its last product.
CsrMatrix full_tiles_then_empty_rows() {
  CsrMatrix a;
  a.nrows = 131 * 40;
  a.ncols = 5000;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    if (r % 131 < 128) {
      for (std::int32_t j = 0; j < 16; ++j) {
        a.col_idx.push_back(static_cast<std::int32_t>((r % 97) * 50 + j * 3));
        a.values.push_back(0.5 + 0.01 * static_cast<double>(j));
      }
    }
    a.row_ptr.push_back(a.nnz());
  }
  validate(a);
  return a;
}

}  // namespace

TEST_CASE("csr_stream: split rows sum a long row in segments of one warp, as plain CSR does") {
  // R-MAT rows reach hundreds of products; awkward() mixes empty, short and tile-long rows.
  for (const CsrMatrix& a : {gen::rmat(13, 16), awkward(20000), full_tiles_then_empty_rows()}) {
    for (const auto& [block, tile] : {std::pair{256, 2048}, {256, 1024}, {64, 512}}) {
      for (const int split : {4, 16, 64}) {
        for (const bool narrow : {false, true}) {
          CsrStreamParams p;
          p.block_size = block;
          p.tile = tile;
          p.split = split;
          p.narrow_columns = narrow;
          CAPTURE(a.nrows);
          CAPTURE(tile);
          CAPTURE(split);
          CHECK(round_trip(a, p, Precision::f64) <= 1e-14);
          CHECK(round_trip(a, p, Precision::f32) <= 1e-6);
        }
      }
    }
  }
  // The descriptors: no lane walks more than its row's segment length, a row's segments sit in
  // one warp, and every row longer than `split` (up to the tile) is cut.
  const CsrMatrix a = gen::rmat(13, 16);
  const CsrStreamFormat unit;
  CsrStreamParams p;
  p.block_size = 256;
  p.tile = 2048;
  p.split = 16;
  const Encoded e = unit.encode(a, p, Precision::f32);
  const auto* rb = reinterpret_cast<const std::int32_t*>(e.array("row_blocks").bytes.data());
  const auto* lanes = reinterpret_cast<const std::uint32_t*>(e.array("lanes").bytes.data());
  const std::int64_t nblocks = e.array("row_blocks").count() - 1;
  REQUIRE(e.array("lanes").count() == nblocks * p.block_size);
  std::int64_t cut = 0, longest_walk = 0, longest_row = 0;
  for (std::int64_t b = 0; b < nblocks; ++b) {
    const std::int64_t start = a.row_ptr[static_cast<std::size_t>(rb[b])];
    for (int t = 0; t < p.block_size; ++t) {
      const std::uint32_t d = lanes[b * p.block_size + t];
      if (((d >> 18) & 1u) == 0) continue;
      const std::int64_t row = rb[b] + (d >> 24);
      const std::int64_t n =
          a.row_ptr[static_cast<std::size_t>(row) + 1] - a.row_ptr[static_cast<std::size_t>(row)];
      const int extra = static_cast<int>((d >> 19) & 31u);
      const int len = static_cast<int>((d >> 11) & 127u);
      CHECK(static_cast<std::int64_t>(d & 0x7ffu) ==
            (n > 0 ? a.row_ptr[static_cast<std::size_t>(row)] - start : 0));
      CHECK(t / 32 == (t + extra) / 32);  // its segments' lanes follow it in its warp
      if (n > p.tile) continue;
      CHECK((extra > 0) == (n > CsrStreamFormat::segments(n, p.split).length));
      if (n > p.split + 1) CHECK(extra > 0);  // cut once longer than split (made odd)
      CHECK(len == CsrStreamFormat::segments(n, p.split).length);
      if (extra > 0) {
        CHECK(len % 2 == 1);  // its lanes start on different banks
        CHECK(len <= 1 + std::max<std::int64_t>(
                             p.split, std::max<std::int64_t>(static_cast<std::int64_t>(
                                                                 std::ceil(std::sqrt(double(n)))),
                                                             (n + 31) / 32)));
      }
      cut += extra > 0 ? 1 : 0;
      longest_walk = std::max<std::int64_t>(longest_walk, len + extra);
      longest_row = std::max(longest_row, n);
    }
  }
  CHECK(cut > 100);
  CHECK(longest_row > 500);
  CHECK(longest_walk < longest_row / 4);

  // A descriptor pointing a head at a place its warp did not fill is caught by the reference.
  Encoded broken = unit.encode(a, p, Precision::f64);
  auto lanes_of = std::find_if(broken.arrays.begin(), broken.arrays.end(),
                               [](const EncodedArray& arr) { return arr.name == "lanes"; });
  REQUIRE(lanes_of != broken.arrays.end());
  auto* d = reinterpret_cast<std::uint32_t*>(lanes_of->bytes.data());
  std::int64_t i = 0;
  while (((d[i] >> 18) & 1u) == 0 || ((d[i] >> 19) & 31u) == 0 || ((d[i] >> 19) & 31u) == 31) ++i;
  d[i] += 1u << 19;  // one more partial sum than its row has
  std::vector<double> x(static_cast<std::size_t>(a.ncols), 1.0),
      y(static_cast<std::size_t>(a.nrows));
  CHECK_THROWS_AS(unit.reference_spmv(broken, p, x, y, 1.0, 0.0), InternalError);
}

TEST_CASE("csr_stream: split rows refuse shapes their descriptor cannot hold") {
  const CsrMatrix a = gen::rmat(10, 8);
  const Profile profile = inspect(a, InspectDepth::rows);
  const CsrStreamFormat unit;
  auto why = [&](int block, int tile, int split, int rows_per_lane) {
    CsrStreamParams p;
    p.block_size = block;
    p.tile = tile;
    p.split = split;
    p.rows_per_lane = rows_per_lane;
    return unit.cannot_implement(profile, p, Precision::f32).value_or("");
  };
  CHECK(why(256, 2048, 16, 1).empty());
  CHECK(why(256, 2048, 3, 1).find("split 3") != std::string::npos);
  CHECK(why(256, 2048, 65, 1).find("split 65") != std::string::npos);
  CHECK(why(512, 2048, 16, 1).find("b=512") != std::string::npos);
  CHECK(why(256, 2048, 16, 2).find("m=2") != std::string::npos);
  CHECK(why(512, 4096, 16, 1).find("tile=4096") != std::string::npos);
}

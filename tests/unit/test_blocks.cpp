// Dense-block inspection and the blocked, bellpack and bcsr formats on the host: the inspector's
// counts on matrices whose block structure is known, encode + reference round trips on every
// generated class and every public matrix, cannot_implement reasons, and cost sanity.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "block_plans.hpp"
#include "formats/bcsr/bcsr_format.hpp"
#include "formats/bellpack/bellpack_format.hpp"
#include "formats/blocked/blocked_format.hpp"
#include "formats/common/block_common.hpp"
#include "formats/csr/csr_format.hpp"
#include "spmvc/blocks.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

namespace {

// [ 1 2 0 0 0 ]
// [ 3 4 0 0 5 ]
// [ 0 0 0 0 0 ]
// [ 0 0 6 7 0 ]
CsrMatrix small() {
  CsrMatrix a;
  a.nrows = 4;
  a.ncols = 5;
  a.row_ptr = {0, 2, 5, 5, 7};
  a.col_idx = {0, 1, 0, 1, 4, 2, 3};
  a.values = {1, 2, 3, 4, 5, 6, 7};
  return a;
}

// Rectangular, with empty rows (every third) and one dense row.
CsrMatrix ragged(std::int64_t nrows, std::int64_t ncols) {
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  for (std::int64_t r = 0; r < nrows; ++r) {
    if (r == 1) {
      for (std::int64_t c = 0; c < ncols; ++c) {
        a.col_idx.push_back(static_cast<std::int32_t>(c));
        a.values.push_back(1.0 / static_cast<double>(c + 1));
      }
    } else if (r % 3 != 0) {
      for (std::int64_t c = r % 7; c < ncols; c += 5 + r % 13) {
        a.col_idx.push_back(static_cast<std::int32_t>(c));
        a.values.push_back(static_cast<double>(r - c) * 0.01 + 0.5);
      }
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// Relative error of the format's reference SpMV over its encoding against the CSR oracle, for
// y = 1.5*A*x - 0.5*y.
double round_trip(const CsrMatrix& a, const FormatParams& params,
                  Precision precision = Precision::f64) {
  const formats::FormatUnit& unit = formats::find_format(format_of(params));
  const Encoded e = unit.encode(a, params, precision);
  std::vector<double> x(static_cast<std::size_t>(a.ncols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + 0.001 * static_cast<double>(i % 97);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  std::vector<double> ref = y;
  CsrMatrix rounded = a;
  if (precision != Precision::f64) {
    for (double& v : rounded.values) v = static_cast<double>(static_cast<float>(v));
  }
  unit.reference_spmv(e, params, x, y, 1.5, -0.5);
  compiler::csr_reference_spmv(rounded, x, ref, 1.5, -0.5);
  return compiler::relative_error(y, ref);
}

std::vector<FormatParams> round_trip_params() {
  return {test::bcsr_params(3, 3, 4),      test::bcsr_params(2, 5, 1),
          test::bellpack_params(3, 3, 32), test::bellpack_params(4, 2, 7),
          test::blocked_params(4, 64, 16), test::blocked_params(3, 16, 4),
          test::blocked_params(7, 32, 1)};
}

const BlockShape& shape(const BlockReport& r, int rows, int cols, BlockPlacement p, int align = 1) {
  const BlockShape* s = r.find(rows, cols, p, align);
  REQUIRE(s != nullptr);
  return *s;
}

}  // namespace

TEST_CASE("block inspection: counts on a matrix checkable by hand") {
  const BlockReport r = inspect_blocks(small());
  CHECK_FALSE(r.sampled);
  CHECK(r.sampled_rows == 4);
  // Aligned 2x2: block row 0 has blocks (0,0) [4 nonzeros] and (0,2) [col 4]; block row 1 has
  // (1,1) [cols 2,3]: 3 blocks, fill 7/12.
  CHECK(shape(r, 2, 2, BlockPlacement::aligned).blocks == 3);
  CHECK(shape(r, 2, 2, BlockPlacement::aligned).fill() == doctest::Approx(7.0 / 12));
  // Aligned 1x2 on row 3 (cols 2,3): one block; unaligned 1x2 too. Aligned 1x3 needs two blocks
  // there (cols 0..2 and 3..5), unaligned one (starting at column 2).
  CHECK(shape(r, 1, 2, BlockPlacement::aligned).blocks == 1 + 2 + 1);
  CHECK(shape(r, 1, 3, BlockPlacement::aligned).blocks == 1 + 2 + 2);
  CHECK(shape(r, 1, 3, BlockPlacement::unaligned).blocks == 1 + 2 + 1);
  // 4x16 unaligned with alignment 4: one block starting at 0; rows padded to 4: row 0 -> 4,
  // row 1 (last col 4) -> 8, row 3 (last col 3) -> 4.
  const BlockShape& wide = shape(r, 4, 16, BlockPlacement::unaligned, 4);
  CHECK(wide.blocks == 1);
  CHECK(wide.stored_row_padded == 16);
  CHECK(r.groups.rows_in[0] == 1);
  CHECK(r.groups.rows_in[1] == 3);
}

TEST_CASE("block inspection finds 3x3 blocks with fill 1.0 aligned in 3D elasticity") {
  const BlockReport r = inspect_blocks(gen::from_spec("elasticity:n=6"));
  CHECK_FALSE(r.sampled);
  CHECK(r.structure == "uniform 3x3, aligned");
  CHECK(r.best.r == 3);
  CHECK(r.best.c == 3);
  CHECK(r.best.fill() == 1.0);
  // Every row of a grid point's 3 unknowns has the same pattern.
  CHECK(r.groups.rows_in[3] == r.nrows);
  // Shapes that cut the 3x3 blocks leave zeros.
  CHECK(shape(r, 4, 4, BlockPlacement::aligned).fill() < 0.8);
  CHECK(shape(r, 2, 2, BlockPlacement::aligned).fill() < 1.0);
  // Sampled on a larger grid (more than exact_max_nnz nonzeros): same finding, said to be
  // sampled, block count within 2% of the exact nnz/9.
  const CsrMatrix big = gen::from_spec("elasticity:n=22");
  REQUIRE(big.nnz() > BlockOptions{}.exact_max_nnz);
  const BlockReport rb = inspect_blocks(big);
  CHECK(rb.sampled);
  CHECK(rb.sampled_rows < rb.nrows);
  CHECK(rb.structure == "uniform 3x3, aligned");
  CHECK(static_cast<double>(shape(rb, 3, 3, BlockPlacement::aligned).blocks) ==
        doctest::Approx(static_cast<double>(big.nnz()) / 9).epsilon(0.02));
  CHECK(to_report(rb).find("Sampled") != std::string::npos);
}

TEST_CASE("block inspection finds no block structure in a random matrix") {
  const BlockReport r = inspect_blocks(gen::from_spec("random:n=3000,per_row=12"));
  CHECK(r.structure == "none");
  CHECK(r.best.r == 0);
  CHECK(shape(r, 3, 3, BlockPlacement::aligned).fill() < 0.2);
  CHECK(shape(r, 1, 1, BlockPlacement::aligned).fill() == 1.0);
  CHECK(r.groups.rows_in[1] == r.nrows);
}

TEST_CASE("block inspection: unaligned placement beats aligned on shifted blocks") {
  // 2x2 dense blocks starting at odd columns: aligned 2x2 splits each in two.
  CsrMatrix a;
  a.nrows = 200;
  a.ncols = 203;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const std::int32_t c0 = static_cast<std::int32_t>(r / 2 * 2 + 1);
    a.col_idx.push_back(c0);
    a.col_idx.push_back(c0 + 1);
    a.values.push_back(1.0);
    a.values.push_back(2.0);
    a.row_ptr.push_back(a.nnz());
  }
  const BlockReport r = inspect_blocks(a);
  CHECK(shape(r, 2, 2, BlockPlacement::unaligned).fill() == 1.0);
  CHECK(shape(r, 2, 2, BlockPlacement::aligned).fill() == doctest::Approx(0.5));
  CHECK(r.structure == "uniform 2x2, unaligned");
}

TEST_CASE("inspect() carries the block shapes at both depths and stays fast") {
  const CsrMatrix a = gen::from_spec("elasticity:n=30");  // 2.1M nonzeros: sampled
  const Profile p = inspect(a, InspectDepth::rows);
  CHECK(p.block_shapes.size() == BlockReport{}.shapes.size() + 8 * (2 * 64 / 8 + 3 * 3));
  const BlockReport r = inspect_blocks(a);
  CHECK(r.seconds < 0.5);  // a sample of ~64k nonzeros, whatever the matrix's size
}

TEST_CASE("bcsr encoding: block rows, block columns and row-major blocks") {
  const Encoded e =
      formats::find_format("bcsr").encode(small(), test::bcsr_params(2, 2, 1), Precision::f64);
  auto i64 = [&](const char* n) {
    const auto& arr = e.array(n);
    std::vector<std::int64_t> v(static_cast<std::size_t>(arr.count()));
    std::memcpy(v.data(), arr.bytes.data(), arr.bytes.size());
    return v;
  };
  auto i32 = [&](const char* n) {
    const auto& arr = e.array(n);
    std::vector<std::int32_t> v(static_cast<std::size_t>(arr.count()));
    std::memcpy(v.data(), arr.bytes.data(), arr.bytes.size());
    return v;
  };
  CHECK(i64("brow_ptr") == std::vector<std::int64_t>{0, 2, 3});
  CHECK(i32("bcol") == std::vector<std::int32_t>{0, 2, 1});
  const auto& v = e.array("values");
  std::vector<double> vals(static_cast<std::size_t>(v.count()));
  std::memcpy(vals.data(), v.bytes.data(), v.bytes.size());
  CHECK(vals == std::vector<double>{1, 2, 3, 4, 0, 0, 5, 0, 0, 0, 6, 7});
}

TEST_CASE("bellpack encoding sorts block rows by block count and writes y through perm") {
  // Block rows (r=1, c=1) of small(): counts 2, 3, 0, 2 -> sorted 1, 0, 3, 2.
  const Encoded e = formats::find_format("bellpack")
                        .encode(small(), test::bellpack_params(1, 1, 2), Precision::f64);
  const auto& p = e.array("perm");
  std::vector<std::int32_t> perm(static_cast<std::size_t>(p.count()));
  std::memcpy(perm.data(), p.bytes.data(), p.bytes.size());
  CHECK(perm == std::vector<std::int32_t>{1, 0, 3, 2});
  const auto& s = e.array("slice_ptr");
  std::vector<std::int64_t> sp(static_cast<std::size_t>(s.count()));
  std::memcpy(sp.data(), s.bytes.data(), s.bytes.size());
  CHECK(sp == std::vector<std::int64_t>{0, 6, 10});  // widths 3 and 2, two block rows each
  CHECK(round_trip(small(), test::bellpack_params(1, 1, 2)) < 1e-15);
}

TEST_CASE("blocked encoding: aligned starts, rows padded to the alignment") {
  const Encoded e = formats::find_format("blocked").encode(small(), test::blocked_params(2, 16, 4),
                                                           Precision::f64);
  CHECK(e.array("block_col").count() == 2);  // one block per block row, both at column 0
  const auto& l = e.array("block_len");
  std::vector<std::uint8_t> len(l.bytes.size());
  std::memcpy(len.data(), l.bytes.data(), l.bytes.size());
  CHECK(len == std::vector<std::uint8_t>{1, 2, 0, 1});  // rows: last cols 1, 4, none, 3
  CHECK(e.array("values").count() == 16);
}

TEST_CASE("block formats: round trips on every generated class, rectangular and ragged") {
  std::vector<CsrMatrix> ms;
  for (const char* spec :
       {"stencil2d:n=30", "stencil7:n=9", "stencil27:n=8", "elasticity:n=4", "rmat:scale=12,ef=16",
        "random:n=3000,per_row=12", "banded:n=2000,hbw=5"})
    ms.push_back(gen::from_spec(spec));
  ms.push_back(gen::random_uniform(700, 2500, 9));
  ms.push_back(gen::random_uniform(2500, 130, 7));
  ms.push_back(ragged(301, 1003));
  ms.push_back(ragged(1, 77));
  ms.push_back(CsrMatrix{});
  CsrMatrix empty_rows;  // 5 x 4, no nonzeros at all
  empty_rows.nrows = 5;
  empty_rows.ncols = 4;
  empty_rows.row_ptr.assign(6, 0);
  ms.push_back(empty_rows);
  for (std::size_t i = 0; i < ms.size(); ++i) {
    for (const FormatParams& p : round_trip_params()) {
      CAPTURE(i);
      CAPTURE(describe(p));
      CAPTURE(format_of(p));
      CHECK(round_trip(ms[i], p) <= 1e-12);
    }
  }
  // fp32 storage: the encoding rounds values to float, and nothing else.
  const CsrMatrix el = gen::from_spec("elasticity:n=4");
  for (const FormatParams& p : round_trip_params()) {
    CHECK(round_trip(el, p, Precision::f32) <= 1e-12);
    CHECK(round_trip(el, p, Precision::f32_acc64) <= 1e-12);
  }
}

TEST_CASE("block formats: round trips on every public matrix under 2M nonzeros") {
  const fs::path dir = test::shared_matrices();
  if (dir.empty() || !fs::exists(dir / "index.csv")) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);
  int tested = 0;
  // One parameter set per format, shaped for FEM blocks; graphs get poor fill but must still
  // round-trip. G3_circuit (7.7M) and the other large ones are left to the GPU tests.
  const std::vector<FormatParams> params = {
      test::bcsr_params(3, 3, 4), test::bellpack_params(2, 2, 32), test::blocked_params(4, 32, 4)};
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 6;) f.push_back(cell);
    if (f.size() < 6 || f[0] == "young1c" || std::stoll(f[5]) >= 2000000) continue;
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    const CsrMatrix a = read_matrix_market(file);
    for (const FormatParams& p : params) {
      CAPTURE(f[0]);
      CAPTURE(format_of(p));
      CHECK(round_trip(a, p) <= 1e-12);
    }
    ++tested;
  }
  MESSAGE("public matrices round-tripped: " << tested);
  CHECK(tested > 50);
}

TEST_CASE("bcsstk16: the inspector sees its 3x3 blocks and the planner uses them") {
  const fs::path file = test::shared_matrices() / "bcsstk16.mtx.xz";
  if (test::shared_matrices().empty() || !fs::exists(file)) return;
  const CsrMatrix a = read_matrix_market(file);
  const BlockReport r = inspect_blocks(a);
  CHECK(r.structure == "uniform 3x3, aligned");
  CHECK(r.best.fill() > 0.95);
  const Plan plan = compiler::make_plan(inspect(a), {});
  CHECK(plan.format != "csr");
}

TEST_CASE("block formats say why parameters cannot implement a matrix") {
  const Profile p = inspect(gen::from_spec("elasticity:n=4"));
  const auto& bcsr = formats::find_format("bcsr");
  const auto& bell = formats::find_format("bellpack");
  const auto& blk = formats::find_format("blocked");
  CHECK(*bcsr.cannot_implement(p, test::bcsr_params(9, 3, 1), Precision::f64) ==
        "block shape 9x3 is outside 1..8 x 1..8");
  CHECK(*bcsr.cannot_implement(p, test::bcsr_params(3, 3, 3), Precision::f64) ==
        "threads per block row 3 is not a power of two in 1..32");
  CHECK(*bcsr.cannot_implement(p, test::bcsr_params(3, 3, 1, 100), Precision::f64) ==
        "block size 100 is not a multiple of 32 in 32..1024");
  CHECK(*bell.cannot_implement(p, test::bellpack_params(3, 0, 32), Precision::f64) ==
        "block shape 3x0 is outside 1..8 x 1..8");
  CHECK(*bell.cannot_implement(p, test::bellpack_params(3, 3, 0), Precision::f64) ==
        "slice height 0 is outside 1..1024");
  CHECK(*blk.cannot_implement(p, test::blocked_params(4, 60, 16), Precision::f64) ==
        "block columns 60 is not a multiple of the alignment 16 in 16..128");
  CHECK(*blk.cannot_implement(p, test::blocked_params(4, 64, 3), Precision::f64) ==
        "column alignment 3 is not a power of two in 1..32");
  CHECK(*blk.cannot_implement(p, test::blocked_params(0, 64, 4), Precision::f64) ==
        "block rows 0 is outside 1..8");
  CHECK_FALSE(blk.cannot_implement(p, test::blocked_params(4, 64, 16), Precision::f64));
  // Sizes: a profile claiming 2^29 nonzeros in 1x1 blocks fits, 8x8 blocks at that count do not.
  Profile huge = p;
  for (BlockShape& s : huge.block_shapes) s.blocks = std::int64_t{1} << 29;
  CHECK_FALSE(bcsr.cannot_implement(huge, test::bcsr_params(1, 1, 1), Precision::f64));
  CHECK(bcsr.cannot_implement(huge, test::bcsr_params(8, 8, 1), Precision::f64)->find("2^31") !=
        std::string::npos);
  // Forcing an impossible set through the planner is an InputError with the reason.
  compiler::PlanOptions o;
  o.format = "bcsr";
  o.params = test::bcsr_params(3, 3, 5);
  CHECK_THROWS_AS(compiler::make_plan(p, o), InputError);
}

TEST_CASE("block cost models weigh zero fill against index savings") {
  const Profile el = inspect(gen::from_spec("elasticity:n=24"));
  const Profile rnd = inspect(gen::from_spec("random:n=20000,per_row=12"));
  const auto& csr = formats::find_format("csr");
  const CsrParams cp = formats::CsrFormat::choose(el);
  for (const char* f : {"bcsr", "bellpack"}) {
    CAPTURE(f);
    const auto& unit = formats::find_format(f);
    const FormatParams p33 = std::string(f) == "bcsr"
                                 ? FormatParams{test::bcsr_params(3, 3, 4)}
                                 : FormatParams{test::bellpack_params(3, 3, 32)};
    // Full 3x3 blocks: 8 bytes per value plus 4/9 of an index, against csr's 12.
    const double el_bytes = unit.cost(el, p33, Precision::f64).matrix_bytes;
    CHECK(el_bytes < 0.75 * csr.cost(el, cp, Precision::f64).matrix_bytes);
    CHECK(el_bytes / static_cast<double>(el.nnz) == doctest::Approx(8.5).epsilon(0.03));
    // Random: 3x3 blocks are ~1/9 full, so the zero fill costs many times csr's bytes.
    CHECK(unit.cost(rnd, p33, Precision::f64).matrix_bytes >
          4 * csr.cost(rnd, formats::CsrFormat::choose(rnd), Precision::f64).matrix_bytes);
    // fp32 halves the value bytes, not the index bytes.
    CHECK(unit.cost(el, p33, Precision::f32).matrix_bytes < 0.6 * el_bytes);
  }
  // blocked: a layout with less row padding costs fewer bytes.
  const auto& blk = formats::find_format("blocked");
  CHECK(blk.cost(el, test::blocked_params(3, 16, 4), Precision::f64).matrix_bytes <
        blk.cost(el, test::blocked_params(3, 16, 16), Precision::f64).matrix_bytes);
  // Proposals: none applicable on random (no shape reaches the fill), some on elasticity.
  for (const char* f : {"bcsr", "bellpack", "blocked"}) {
    CAPTURE(f);
    const auto rc = formats::find_format(f).propose(rnd, Precision::f64);
    CHECK(std::none_of(rc.begin(), rc.end(), [](const Candidate& c) { return c.applicable; }));
    CHECK(rc.back().reason.find("fill") != std::string::npos);
    const auto ec = formats::find_format(f).propose(el, Precision::f64);
    CHECK(std::any_of(ec.begin(), ec.end(), [](const Candidate& c) { return c.applicable; }));
  }
  // The planner: a block format on elasticity, none on random.
  const auto is_block = [](const std::string& f) {
    return f == "bcsr" || f == "bellpack" || f == "blocked";
  };
  // On elasticity the model ranks the best block candidate above csr's best (which format wins
  // overall is the calibrated planner's call).
  const Plan pe = compiler::make_plan(el, {});
  const auto first = [&](auto pred) {
    return std::find_if(pe.candidates.begin(), pe.candidates.end(),
                        [&](const Candidate& c) { return c.applicable && pred(c.format); });
  };
  const auto best_block = first(is_block);
  const auto best_csr = first([](const std::string& f) { return f == "csr"; });
  REQUIRE(best_block != pe.candidates.end());
  REQUIRE(best_csr != pe.candidates.end());
  CHECK(best_block < best_csr);
  CHECK(!is_block(compiler::make_plan(rnd, {}).format));
}

TEST_CASE("bellpack's slices tolerate long block rows that bcsr's row walk does not") {
  // elasticity: 27 blocks of 3x3 per block row. BELLPACK's column-major slices keep their lanes
  // at full speed up to kSlicedStepsPerLane blocks; bcsr with one lane per block row walks
  // them as dependent steps and is charged beyond kStepsPerLane.
  const Profile p = inspect(gen::elasticity_3d(6, 6, 6), InspectDepth::full);
  const auto& bell = formats::find_format("bellpack");
  const auto& bcsr = formats::find_format("bcsr");
  const formats::Cost c_bell = bell.cost(p, test::bellpack_params(3, 3, 32), Precision::f64);
  const formats::Cost c_bcsr = bcsr.cost(p, test::bcsr_params(3, 3, 1), Precision::f64);
  CHECK(c_bell.lane_efficiency == 1.0);
  CHECK(c_bcsr.lane_efficiency < 0.5);
  CHECK(formats::blocks::latency_factor(27, formats::blocks::kSlicedStepsPerLane) == 1.0);
  CHECK(formats::blocks::latency_factor(64, formats::blocks::kSlicedStepsPerLane) == 0.5);
}

TEST_CASE("a forced block format runs on a matrix without dense blocks, with the objection") {
  // A 2D 5-point stencil: no shape has the fill the block formats need to pay, so the planner
  // rejects every candidate of theirs for not paying, none for being unable to represent it.
  const CsrMatrix a = gen::from_spec("stencil2d:n=40");
  const Profile profile = inspect(a);
  for (const char* format : {"blocked", "bcsr", "bellpack"}) {
    CAPTURE(format);
    const auto proposed = formats::find_format(format).propose(profile, Precision::f64);
    REQUIRE_FALSE(proposed.empty());
    CHECK(std::none_of(proposed.begin(), proposed.end(),
                       [](const Candidate& c) { return c.applicable; }));
    CHECK(std::any_of(proposed.begin(), proposed.end(),
                      [](const Candidate& c) { return c.representable; }));
    // Left to itself the planner does not take them.
    CHECK(compiler::make_plan(profile, {}).format != format);

    compiler::PlanOptions o;
    o.format = format;
    const Plan plan = compiler::make_plan(profile, o);
    CHECK(plan.format == format);
    CHECK(format_of(plan.params) == format);
    CHECK(plan.predicted_seconds > 0);
    INFO("why: ", plan.why);
    CHECK(plan.why.rfind(std::string("forced: format ") + format, 0) == 0);
    const std::string marker = "the planner would not choose it: ";
    const std::size_t at = plan.why.find(marker);
    REQUIRE(at != std::string::npos);
    // The objection is the format's own: its shapes store more bytes than csr or are too empty.
    const std::string objection = plan.why.substr(at + marker.size());
    CHECK((objection.find("fewer bytes than csr") != std::string::npos ||
           objection.find("% full") != std::string::npos));
    CHECK(to_report(plan).find("the planner would not choose it") != std::string::npos);
    REQUIRE_FALSE(plan.candidates.empty());
    CHECK(plan.candidates.front().applicable);
    // Its encoding's host reference multiply is the CSR one.
    CHECK(round_trip(a, plan.params) <= 1e-12);
  }
}

TEST_CASE("a forced block format that cannot represent the matrix is still refused") {
  const Profile stencil = inspect(gen::from_spec("stencil2d:n=40"));
  for (const char* format : {"blocked", "bcsr", "bellpack"}) {
    CAPTURE(format);
    compiler::PlanOptions o;
    o.format = format;
    // Every shape claims 2^40 blocks (and stored entries): none fits the formats' 32-bit offsets.
    Profile huge = stencil;
    for (BlockShape& s : huge.block_shapes) {
      s.blocks = std::int64_t{1} << 40;
      s.stored_row_padded = std::int64_t{1} << 40;
    }
    const auto proposed = formats::find_format(format).propose(huge, Precision::f64);
    CHECK(std::none_of(proposed.begin(), proposed.end(),
                       [](const Candidate& c) { return c.representable; }));
    CHECK_THROWS_WITH_AS(compiler::make_plan(huge, o),
                         doctest::Contains("no format can implement this matrix"), InputError);
    // No block statistics at all: nothing to build the blocks from.
    Profile none = stencil;
    none.block_shapes.clear();
    CHECK_THROWS_WITH_AS(compiler::make_plan(none, o),
                         doctest::Contains("no block shapes inspected"), InputError);
  }
}

namespace {

// Symmetric 5 x 5, in 2x2 blocks with a tail (the last block row and column hold one row and
// column of the matrix):
// [ 4 1 0 2 0 ]
// [ 1 5 0 0 3 ]
// [ 0 0 6 0 0 ]
// [ 2 0 0 7 1 ]
// [ 0 3 0 1 8 ]
CsrMatrix small_symmetric() {
  CsrMatrix a;
  a.nrows = a.ncols = 5;
  a.row_ptr = {0, 3, 6, 7, 10, 13};
  a.col_idx = {0, 1, 3, 0, 1, 4, 2, 0, 3, 4, 1, 3, 4};
  a.values = {4, 1, 2, 1, 5, 3, 6, 2, 7, 1, 3, 1, 8};
  return a;
}

template <typename T>
std::vector<T> array_of(const Encoded& e, const char* name) {
  const auto& arr = e.array(name);
  std::vector<T> v(static_cast<std::size_t>(arr.count()));
  std::memcpy(v.data(), arr.bytes.data(), arr.bytes.size());
  return v;
}

}  // namespace

TEST_CASE("bcsr S=1: the blocks on and below the diagonal, and each block row's mirrors") {
  const Encoded e =
      formats::find_format("bcsr").encode(small_symmetric(), test::bcsr_half(2, 1), Precision::f64);
  CHECK(array_of<std::int64_t>(e, "brow_ptr") == std::vector<std::int64_t>{0, 1, 3, 6});
  CHECK(array_of<std::int32_t>(e, "bcol") == std::vector<std::int32_t>{0, 0, 1, 0, 1, 2});
  CHECK(array_of<double>(e, "values") == std::vector<double>{4, 1, 1, 5, 0, 0, 2, 0, 6, 0, 0, 7,
                                                             0, 3, 0, 0, 0, 1, 0, 0, 8, 0, 0, 0});
  // Block row 0 reads the stored (1, 0) and (2, 0) transposed, block row 1 the stored (2, 1).
  CHECK(array_of<std::int64_t>(e, "mptr") == std::vector<std::int64_t>{0, 2, 3, 3});
  CHECK(array_of<std::int32_t>(e, "mrow") == std::vector<std::int32_t>{1, 2, 2});
  CHECK(array_of<std::int32_t>(e, "mpos") == std::vector<std::int32_t>{1, 3, 4});
  CHECK(round_trip(small_symmetric(), test::bcsr_half(2, 1)) < 1e-15);
}

TEST_CASE("bcsr S=1 round trips on symmetric matrices, every shape, both precisions") {
  std::vector<CsrMatrix> ms;
  for (const char* spec :
       {"stencil2d:n=31", "stencil7:n=9", "stencil27:n=7", "elasticity:n=5", "banded:n=2001,hbw=5"})
    ms.push_back(gen::from_spec(spec));
  ms.push_back(small_symmetric());
  CsrMatrix one;  // 1 x 1
  one.nrows = one.ncols = 1;
  one.row_ptr = {0, 1};
  one.col_idx = {0};
  one.values = {3};
  ms.push_back(one);
  for (std::size_t i = 0; i < ms.size(); ++i) {
    for (const FormatParams& p : test::bcsr_half_grid()) {
      CAPTURE(i);
      CAPTURE(describe(p));
      CHECK(round_trip(ms[i], p) <= 1e-12);
      CHECK(round_trip(ms[i], p, Precision::f32) <= 1e-12);
    }
  }
  // Half the off-diagonal blocks: elasticity's 3x3 blocks are all full.
  const CsrMatrix el = gen::from_spec("elasticity:n=5");
  const auto& unit = formats::find_format("bcsr");
  const Encoded full = unit.encode(el, test::bcsr_params(3, 3, 1), Precision::f64);
  const Encoded half = unit.encode(el, test::bcsr_half(3, 1), Precision::f64);
  const std::int64_t blocks = full.array("bcol").count(), nbrows = el.nrows / 3;
  CHECK(half.array("bcol").count() == nbrows + (blocks - nbrows) / 2);
  CHECK(half.array("mrow").count() == (blocks - nbrows) / 2);
}

TEST_CASE("bcsr S=1 on the symmetric public matrices under 2M nonzeros") {
  const auto list = test::public_matrices(0, 1999999);
  if (list.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  int tested = 0;
  for (const auto& [name, file] : list) {
    const CsrMatrix a = read_matrix_market(file);
    if (!inspect(a).numerically_symmetric) continue;
    CAPTURE(name);
    CHECK(round_trip(a, test::bcsr_half(3, 4)) <= 1e-12);
    CHECK(round_trip(a, test::bcsr_half(2, 1), Precision::f32) <= 1e-12);
    ++tested;
  }
  MESSAGE("symmetric public matrices round-tripped: " << tested);
  CHECK(tested > 10);
}

TEST_CASE("bcsr S=1 is refused, with the reason, where the matrix or shape does not allow it") {
  const auto& bcsr = formats::find_format("bcsr");
  const Profile el = inspect(gen::from_spec("elasticity:n=4"));
  CHECK_FALSE(bcsr.cannot_implement(el, test::bcsr_half(3, 4), Precision::f64));
  CHECK(*bcsr.cannot_implement(el, test::bcsr_params(3, 2, 1, 256, true), Precision::f64) ==
        "S=1 (symmetric) needs square blocks, not 3x2");
  const Profile rect = inspect(gen::random_uniform(700, 2500, 9));
  CHECK(*bcsr.cannot_implement(rect, test::bcsr_half(2, 1), Precision::f64) ==
        "S=1 (symmetric) needs a square matrix, not 700 x 2500");
  // Symmetric pattern, one value changed: not symmetric.
  CsrMatrix skew = small_symmetric();
  skew.values[2] = 2.5;  // a(0, 3)
  CHECK(*bcsr.cannot_implement(inspect(skew), test::bcsr_half(2, 1), Precision::f64) ==
        "S=1 needs a matrix equal to its transpose, values compared exactly");
  // Forced past the planner, the encoder names the block that differs from its mirror.
  CHECK_THROWS_WITH_AS(bcsr.encode(skew, test::bcsr_half(2, 1), Precision::f64),
                       doctest::Contains("block at rows 0.., columns 2.. differs from the "
                                         "transpose of its mirror at rows 2.., columns 0.."),
                       InputError);
  // An entry below the diagonal whose mirror block is absent: the half would add it above too.
  CsrMatrix lower_only = small_symmetric();
  lower_only.row_ptr = {0, 2, 4, 5, 8, 11};  // a(0, 3) and a(1, 4) left out
  lower_only.col_idx = {0, 1, 0, 1, 2, 0, 3, 4, 1, 3, 4};
  lower_only.values = {4, 1, 1, 5, 6, 2, 7, 1, 3, 1, 8};
  CHECK_THROWS_WITH_AS(bcsr.encode(lower_only, test::bcsr_half(2, 1), Precision::f64),
                       doctest::Contains("block at rows 2.., columns 0.. has no mirror at rows "
                                         "0.., columns 2.."),
                       InputError);
  CHECK_THROWS_AS(
      bcsr.encode(gen::random_uniform(700, 2500, 9), test::bcsr_half(2, 1), Precision::f64),
      InputError);
}

TEST_CASE("bcsr S=1: offered for a symmetric blocked matrix at full depth, with fewer bytes") {
  const CsrMatrix a = gen::from_spec("elasticity:n=20");
  const Profile full_profile = inspect(a, InspectDepth::full);
  REQUIRE(full_profile.numerically_symmetric);
  const auto& bcsr = formats::find_format("bcsr");
  bool offered = false;
  for (const Candidate& c : bcsr.propose(full_profile, Precision::f64)) {
    const auto& p = std::get<BcsrParams>(c.params);
    if (!p.symmetric) continue;
    offered = true;
    CHECK(c.applicable);
    BcsrParams full = p;
    full.symmetric = false;
    const double half_bytes = bcsr.cost(full_profile, p, Precision::f64).matrix_bytes;
    const double full_bytes = bcsr.cost(full_profile, full, Precision::f64).matrix_bytes;
    CHECK(half_bytes < 0.6 * full_bytes);
    // The model's count is the encoder's: values, both indices and both offset arrays.
    const Encoded e = bcsr.encode(a, p, Precision::f64);
    double encoded = 0;
    for (const EncodedArray& arr : e.arrays) encoded += static_cast<double>(arr.bytes.size());
    CHECK(half_bytes == doctest::Approx(encoded).epsilon(0.01));
  }
  CHECK(offered);
  // Rows depth checks the symmetry of matrices on at most 64 diagonals only: elasticity's
  // half is then refused, and the reason says where the check is made.
  const Profile rows = inspect(a, InspectDepth::rows);
  CHECK(rows.diagonals < 0);
  CHECK_FALSE(rows.numerically_symmetric);
  const auto why = bcsr.cannot_implement(rows, test::bcsr_half(3, 4), Precision::f64);
  REQUIRE(why);
  CHECK(why->find("full inspection checks every matrix") != std::string::npos);
}

TEST_CASE("rank_aligned_shapes: the paying shapes by bytes, the least-bytes other, the best fill") {
  // elasticity's 3x3 blocks fill completely; the made-up cost says r x c stores 10 / (r * c)
  // bytes a nonzero, so larger shapes pay more; shapes whose bytes exceed the bound do not pay.
  const Profile p = inspect(gen::elasticity_3d(6, 6, 6), InspectDepth::full);
  const double nnz = static_cast<double>(p.nnz);
  const auto bytes = [&](const BcsrParams& q) {
    return nnz * 10.0 / (q.block_rows * q.block_cols);
  };
  const auto make = [](const BlockShape& b) {
    BcsrParams q;
    q.block_rows = b.r;
    q.block_cols = b.c;
    return q;
  };
  const auto ranked = formats::blocks::rank_aligned_shapes<BcsrParams>(p, 8.0, make, bytes);
  REQUIRE_FALSE(ranked.paying.empty());
  CHECK(ranked.paying.size() <= static_cast<std::size_t>(formats::blocks::kProposedShapes));
  for (std::size_t i = 1; i < ranked.paying.size(); ++i)
    CHECK(ranked.paying[i - 1].bytes <= ranked.paying[i].bytes);
  double best_fill = 0, least_other = 1e300;
  for (const BlockShape& b : p.block_shapes) {
    if (b.placement != BlockPlacement::aligned || b.c > 8 || b.r * b.c < 2) continue;
    best_fill = std::max(best_fill, b.fill());
    const double by = nnz * 10.0 / (b.r * b.c);
    const bool pays = b.fill() >= formats::blocks::kMinProposedFill &&
                      by <= formats::blocks::kMaxBytesVsCsr * formats::blocks::csr_bytes(p, 8.0);
    if (!pays) least_other = std::min(least_other, by);
    // A paying shape is kept, or stores at least as many bytes as every one kept.
    const bool kept = std::any_of(ranked.paying.begin(), ranked.paying.end(), [&](const auto& o) {
      return o.p.block_rows == b.r && o.p.block_cols == b.c;
    });
    if (pays && !kept) CHECK(by >= ranked.paying.back().bytes);
  }
  CHECK(ranked.best_fill == best_fill);
  REQUIRE(ranked.least_bad.has_value());
  CHECK(ranked.least_bad->bytes == least_other);
  CHECK(ranked.why_none(p).find("stores") != std::string::npos);
  const auto& first = ranked.paying.front();
  CHECK(first.reason(p) == fmt::format("{}x{} blocks {:.0f}% full, {:.2f} matrix bytes per nonzero",
                                       first.p.block_rows, first.p.block_cols, 100.0 * first.fill,
                                       first.bytes / nnz));
  CHECK(ranked.best_shape().block_rows == ranked.best_r);
  CHECK(ranked.best_shape().block_cols == ranked.best_c);
  // No shapes: nothing pays, nothing to fall back on, and the reason says so.
  Profile none = p;
  none.block_shapes.clear();
  const auto empty = formats::blocks::rank_aligned_shapes<BcsrParams>(none, 8.0, make, bytes);
  CHECK(empty.paying.empty());
  CHECK_FALSE(empty.least_bad.has_value());
  CHECK(empty.why_none(none) == "no block shapes inspected");
}

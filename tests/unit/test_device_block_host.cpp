// The host half of building bcsr and bellpack from device arrays: the arithmetic of
// templates/device_block_index.cuh (the kernels' own functions, compiled for the host) run pass
// by pass as the GPU runs them lays out exactly the host encoders' arrays, byte for byte, for
// every block shape and several slice heights; the block inspection's counts give
// inspect_blocks' aligned shapes, exact and sampled; the planner offers bcsr and bellpack for
// device arrays, charges their GPU encode and refuses them, naming why, where the columns are
// not sorted; and the kernel generated from the sizes alone is the host pipeline's. The kernels
// run in tests/gpu/test_device_block_gpu.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "codegen/codegen.hpp"
#include "edge_matrices.hpp"
#include "formats/format.hpp"
#include "spmvc/blocks.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_block.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

#define SPMVC_HD inline
#include "../../templates/device_block_index.cuh"

using namespace spmvc;
namespace db = spmvc::device_block;

namespace {

// The offsets as DeviceCsr holds them (32-bit).
std::vector<int> offsets32(const CsrMatrix& a) { return {a.row_ptr.begin(), a.row_ptr.end()}; }

// block_open then the scan: the open flags' inclusive sums.
std::vector<long long> open_scan(const CsrMatrix& a, const std::vector<int>& rp, int r, int c) {
  std::vector<long long> incl(static_cast<std::size_t>(a.nnz()));
  for (long long k = 0; k < a.nnz(); ++k) {
    const long long row = db::row_of(rp.data(), a.nrows, k);
    const unsigned mask = db::open_mask(rp.data(), a.col_idx.data(), row / r * r, row, k);
    incl[static_cast<std::size_t>(k)] = (mask >> (c - 1)) & 1u;
  }
  std::partial_sum(incl.begin(), incl.end(), incl.begin());
  return incl;
}

// block_row_ptr: the block rows' offsets.
std::vector<std::int64_t> brow_offsets(const CsrMatrix& a, const std::vector<int>& rp,
                                       const std::vector<long long>& incl, int r) {
  const long long nbrows = (a.nrows + r - 1) / r;
  std::vector<std::int64_t> out;
  for (long long br = 0; br <= nbrows; ++br)
    out.push_back(db::opened_before(incl.data(), rp[std::min<long long>(br * r, a.nrows)]));
  return out;
}

// Where nonzero k's block goes: its block row's first row and its index in the block row.
std::pair<long long, long long> block_of(const CsrMatrix& a, const std::vector<int>& rp,
                                         const std::vector<long long>& incl, long long k, int r,
                                         int c) {
  const long long row = db::row_of(rp.data(), a.nrows, k);
  const long long r0 = row / r * r;
  const long long r1 = std::min<long long>(r0 + r, a.nrows);
  return {r0, db::block_rank(rp.data(), a.col_idx.data(), incl.data(), r0, r1,
                             a.col_idx[static_cast<std::size_t>(k)] / c, c)};
}

bool opens(const std::vector<long long>& incl, long long k) {
  return incl[static_cast<std::size_t>(k)] - db::opened_before(incl.data(), k) == 1;
}

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

void check_array(const Encoded& e, const std::string& name, const std::vector<std::byte>& got) {
  CAPTURE(name);
  const EncodedArray& want = e.array(name);
  REQUIRE(got.size() == want.bytes.size());
  CHECK(std::memcmp(got.data(), want.bytes.data(), got.size()) == 0);
}

// The GPU's bcsr passes on the host against BcsrFormat::encode (f64 values).
void check_bcsr(const CsrMatrix& a, int r, int c) {
  CAPTURE(r);
  CAPTURE(c);
  const std::vector<int> rp = offsets32(a);
  const std::vector<long long> incl = open_scan(a, rp, r, c);
  const std::vector<std::int64_t> brow_ptr = brow_offsets(a, rp, incl, r);
  const auto blocks = static_cast<std::size_t>(brow_ptr.back());
  std::vector<std::int32_t> bcol(blocks, -7);
  std::vector<double> values(blocks * static_cast<std::size_t>(r * c), 0.0);
  for (long long k = 0; k < a.nnz(); ++k) {
    const auto [r0, rank] = block_of(a, rp, incl, k, r, c);
    const long long row = db::row_of(rp.data(), a.nrows, k);
    const long long blk = db::opened_before(incl.data(), rp[static_cast<std::size_t>(r0)]) + rank;
    const int col = a.col_idx[static_cast<std::size_t>(k)];
    if (opens(incl, k)) bcol[static_cast<std::size_t>(blk)] = col / c;
    values[static_cast<std::size_t>(db::bcsr_value_slot(
        blk, r, c, static_cast<int>(row - r0), col % c))] = a.values[static_cast<std::size_t>(k)];
  }
  BcsrParams p;
  p.block_rows = r;
  p.block_cols = c;
  const Encoded e = formats::find_format("bcsr").encode(a, p, Precision::f64);
  check_array(e, "brow_ptr", bytes_of(brow_ptr));
  check_array(e, "bcol", bytes_of(bcol));
  check_array(e, "values", bytes_of(values));
}

// The GPU's bellpack passes on the host against BellpackFormat::encode (f64 values).
void check_bellpack(const CsrMatrix& a, int r, int c, int h) {
  CAPTURE(r);
  CAPTURE(c);
  CAPTURE(h);
  const std::vector<int> rp = offsets32(a);
  const std::vector<long long> incl = open_scan(a, rp, r, c);
  const std::vector<std::int64_t> brow_ptr = brow_offsets(a, rp, incl, r);
  const long long nbrows = static_cast<long long>(brow_ptr.size()) - 1;
  auto count = [&](int br) -> long long {
    return brow_ptr[static_cast<std::size_t>(br) + 1] - brow_ptr[static_cast<std::size_t>(br)];
  };
  long long most = 0;
  for (long long br = 0; br < nbrows; ++br) most = std::max(most, count(static_cast<int>(br)));
  // The radix sort, pass by pass.
  std::vector<int> perm(static_cast<std::size_t>(nbrows));
  std::iota(perm.begin(), perm.end(), 0);
  for (int bit = 0; bit < 63 && (most >> bit) != 0; ++bit) {
    std::vector<long long> zeros(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i)
      zeros[i] = ((db::sort_key(count(perm[i]), most) >> bit) & 1) == 0 ? 1 : 0;
    std::vector<long long> scan(zeros.size());
    std::partial_sum(zeros.begin(), zeros.end(), scan.begin());
    const long long total = scan.empty() ? 0 : scan.back();
    std::vector<int> next(perm.size(), -1);
    for (std::size_t i = 0; i < perm.size(); ++i)
      next[static_cast<std::size_t>(
          db::split_position(static_cast<long long>(i), zeros[i] == 1, scan[i], total))] = perm[i];
    perm = next;
  }
  const long long nslices = (nbrows + h - 1) / h;
  std::vector<std::int64_t> slice_ptr(static_cast<std::size_t>(nslices) + 1, 0);
  for (long long s = 0; s < nslices; ++s)
    slice_ptr[static_cast<std::size_t>(s) + 1] =
        slice_ptr[static_cast<std::size_t>(s)] + count(perm[static_cast<std::size_t>(s * h)]) * h;
  std::vector<int> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<int>(i);
  const auto slots = static_cast<std::size_t>(slice_ptr.back());
  std::vector<std::int32_t> bcol(slots, -1);
  std::vector<double> values(slots * static_cast<std::size_t>(r * c), 0.0);
  for (long long k = 0; k < a.nnz(); ++k) {
    const auto [r0, rank] = block_of(a, rp, incl, k, r, c);
    const long long row = db::row_of(rp.data(), a.nrows, k);
    const long long sorted = inverse[static_cast<std::size_t>(r0 / r)];
    const long long base = slice_ptr[static_cast<std::size_t>(sorted / h)], bl = sorted % h;
    const int col = a.col_idx[static_cast<std::size_t>(k)];
    if (opens(incl, k))
      bcol[static_cast<std::size_t>(db::bellpack_slot(base, rank, h, bl))] = col / c;
    values[static_cast<std::size_t>(
        db::bellpack_value_slot(base, rank, h, bl, r, c, static_cast<int>(row - r0), col % c))] =
        a.values[static_cast<std::size_t>(k)];
  }
  BellpackParams p;
  p.block_rows = r;
  p.block_cols = c;
  p.slice_height = h;
  const Encoded e = formats::find_format("bellpack").encode(a, p, Precision::f64);
  check_array(e, "slice_ptr", bytes_of(slice_ptr));
  check_array(e, "bcol", bytes_of(bcol));
  check_array(e, "values", bytes_of(values));
  check_array(e, "perm", bytes_of(perm));
}

// block_inspect on the host: the counters, then the shapes.
std::vector<BlockShape> inspect_counts(const CsrMatrix& a) {
  const std::vector<int> rp = offsets32(a);
  const codegen::BlockSample sample = codegen::block_sample(a.nrows, a.nnz());
  std::array<std::uint64_t, codegen::kBlockCounters> counts{};
  for (long long k = 0; k < a.nnz(); ++k) {
    const long long row = db::row_of(rp.data(), a.nrows, k);
    for (int r = 1; r <= db::kMaxBlock; ++r) {
      const long long r0 = row / r * r;
      if (!db::block_row_visited(r0, r, a.nrows, sample.windows, sample.len)) continue;
      ++counts[static_cast<std::size_t>(db::kShapes + r - 1)];
      const unsigned mask = db::open_mask(rp.data(), a.col_idx.data(), r0, row, k);
      for (int c = 1; c <= db::kMaxBlock; ++c)
        if (mask & (1u << (c - 1))) ++counts[static_cast<std::size_t>((r - 1) * 8 + c - 1)];
    }
  }
  return codegen::block_shapes_from_counts(counts, a.nnz(), sample.sampled);
}

void check_shapes(const CsrMatrix& a) {
  const BlockReport want = inspect_blocks(a);
  const std::vector<BlockShape> got = inspect_counts(a);
  CHECK(codegen::block_sample(a.nrows, a.nnz()).sampled == want.sampled);
  REQUIRE(got.size() == 64);
  for (const BlockShape& s : got) {
    CAPTURE(s.r);
    CAPTURE(s.c);
    const BlockShape* w = want.find(s.r, s.c, BlockPlacement::aligned);
    REQUIRE(w != nullptr);
    CHECK(s.blocks == w->blocks);
    CHECK(s.nnz == w->nnz);
    CHECK(s.col_align == w->col_align);
  }
}

// Matrices with sorted columns: edge cases, blocks, skewed rows, rectangular.
std::vector<std::pair<std::string, CsrMatrix>> matrices() {
  std::vector<std::pair<std::string, CsrMatrix>> all;
  for (auto& [name, m] : test::edge_matrices()) all.emplace_back(name, std::move(m));
  all.emplace_back("elasticity", gen::elasticity_3d(4, 3, 3));
  all.emplace_back("power law", gen::rmat(9, 6));
  all.emplace_back("rectangular", gen::random_uniform(301, 77, 5));
  all.emplace_back("wide", gen::random_uniform(50, 900, 12));
  all.emplace_back("stencil", gen::stencil_2d_5pt(23, 17));
  return all;
}

// The Profile compile(DeviceCsr) hands the planner: row statistics and the aligned shapes.
Profile device_profile(const CsrMatrix& a) {
  Profile p = inspect(a, InspectDepth::rows);
  p.block_shapes = inspect_counts(a);
  return p;
}

Options device_options(Precision p) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  return o;
}

}  // namespace

TEST_CASE("device block: the kernels' arithmetic lays out bcsr's arrays for every shape") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    for (int r = 1; r <= 8; ++r)
      for (int c = 1; c <= 8; ++c) check_bcsr(a, r, c);
  }
}

TEST_CASE("device block: the kernels' arithmetic lays out bellpack's arrays") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    for (int r = 1; r <= 8; ++r)
      for (int c = 1; c <= 8; ++c)
        for (int h : {1, 3, 32}) check_bellpack(a, r, c, h);
  }
}

TEST_CASE("device block: the inspection's counts are inspect_blocks' aligned shapes") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    check_shapes(a);
  }
  // Sampled (more than 2^18 nonzeros): the same windows, the same scaling.
  const CsrMatrix big = gen::elasticity_3d(14, 13, 12);
  REQUIRE(big.nnz() > (std::int64_t{1} << 18));
  CHECK(codegen::block_sample(big.nrows, big.nnz()).sampled);
  check_shapes(big);
  const CsrMatrix skewed = gen::rmat(15, 12);
  check_shapes(skewed);
}

TEST_CASE("device block: a block row is visited as inspect_blocks' windows visit it") {
  // 1000 rows, 64 windows of 10 rows: block rows of 3 wholly inside [15, 25) are 15..17 and
  // 18..20 and 21..23; 24..26 runs past the window.
  const long long n = 1000, w = 64, len = 10;
  CHECK(db::block_row_visited(15, 3, n, w, len));
  CHECK(db::block_row_visited(21, 3, n, w, len));
  CHECK_FALSE(db::block_row_visited(24, 3, n, w, len));
  CHECK_FALSE(db::block_row_visited(12, 3, n, w, len));
  // The last block row of the matrix is short and still inside the last window.
  CHECK(db::block_row_visited(999, 3, 1000, 1, 1000));
  CHECK_FALSE(db::block_row_visited(1002, 3, 1000, 1, 1000));
}

TEST_CASE("device block: a nonzero opens its block only where no earlier one holds it") {
  // Rows 0 and 1 of one block row: row 0 columns {1, 5}, row 1 columns {2, 4, 9}.
  const std::vector<int> rp = {0, 2, 5};
  const std::vector<int> col = {1, 5, 2, 4, 9};
  // Column 2 (k = 2) in width 4: block [0, 4) already holds row 0's column 1.
  CHECK((db::open_mask(rp.data(), col.data(), 0, 1, 2) & (1u << 3)) == 0);
  // ... but in width 1 and 2 its block ([2, 3), [2, 4)) is new.
  CHECK((db::open_mask(rp.data(), col.data(), 0, 1, 2) & 3u) == 3u);
  // Column 4 (k = 3) in width 2: [4, 6) holds row 0's column 5; in width 3 [3, 6) too; width 4
  // [4, 8): 5 again; width 1: new.
  const unsigned m = db::open_mask(rp.data(), col.data(), 0, 1, 3);
  CHECK((m & 1u) == 1u);
  CHECK((m & 2u) == 0);
  CHECK((m & 4u) == 0);
  CHECK((m & 8u) == 0);
}

TEST_CASE("device block: the planner offers bcsr and bellpack for device arrays") {
  const CsrMatrix a = gen::elasticity_3d(10, 10, 10);
  const test::HostDeviceCsr d(a);
  const Profile profile = device_profile(a);
  BuildTarget target;
  const Plan plan =
      compiler::plan_device_csr(d.view, profile, device_options(Precision::f64), target);
  for (const char* format : {"bcsr", "bellpack"}) {
    CAPTURE(format);
    CHECK(std::any_of(plan.candidates.begin(), plan.candidates.end(),
                      [&](const Candidate& c) { return c.format == format && c.applicable; }));
  }
  Options o = device_options(Precision::f32);
  BellpackParams b;
  b.block_rows = 3;
  b.block_cols = 3;
  b.slice_height = 16;
  o.params = b;
  CHECK(compiler::plan_device_csr(d.view, profile, o, target).format == "bellpack");
  o.params.reset();
  o.format = "bcsr";
  CHECK(compiler::plan_device_csr(d.view, profile, o, target).format == "bcsr");
  CHECK_NOTHROW(compiler::check_device_options(o));
}

TEST_CASE("device block: unsorted columns refuse the block formats with the reason") {
  const CsrMatrix a = gen::elasticity_3d(5, 5, 5);
  const test::HostDeviceCsr d(a);
  Profile profile = inspect(a, InspectDepth::rows);
  profile.block_shapes.clear();  // what the GPU's inspection keeps of unsorted columns
  BuildTarget target;
  const Plan plan =
      compiler::plan_device_csr(d.view, profile, device_options(Precision::f64), target);
  CHECK(plan.format != "bcsr");
  CHECK(plan.format != "bellpack");
  Options o = device_options(Precision::f64);
  BcsrParams p;
  p.block_rows = 3;
  p.block_cols = 3;
  o.params = p;
  CHECK_THROWS_WITH_AS(compiler::plan_device_csr(d.view, profile, o, target),
                       doctest::Contains("not strictly increasing"), InputError);
}

TEST_CASE("device block: the GPU encode of the block formats is charged for its passes") {
  const CsrMatrix a = gen::elasticity_3d(10, 10, 10);
  const Profile profile = device_profile(a);
  compiler::PlanOptions po;
  po.gpu = "H100";
  po.cached_kernels = true;
  po.build_path = compiler::BuildPath::device;
  BcsrParams bc;
  bc.block_rows = 3;
  bc.block_cols = 3;
  BellpackParams bp;
  bp.block_rows = 3;
  bp.block_cols = 3;
  const compiler::Prediction pc = compiler::predict(profile, bc, po);
  const compiler::Prediction pb = compiler::predict(profile, bp, po);
  const double nnz = static_cast<double>(a.nnz());
  // The flags and their scan come on top of what the encoder reads and writes; bellpack's sort
  // on top of that.
  CHECK(pc.build.encode > nnz * 48.0 / 1.5e12);
  CHECK(pb.build.encode > pc.build.encode);
  CHECK(pc.build.upload == 0.0);
  // A GPU encode costs far less than the host encoder and its upload.
  compiler::PlanOptions host = po;
  host.build_path = compiler::BuildPath::host;
  CHECK(compiler::predict(profile, bc, host).build.total() > pc.build.total());
}

TEST_CASE("device block: the kernel from the sizes alone is the host pipeline's") {
  const CsrMatrix a = gen::elasticity_3d(4, 4, 5);
  const Profile profile = device_profile(a);
  BcsrParams bc;
  bc.block_rows = 3;
  bc.block_cols = 2;
  bc.threads_per_row = 2;
  BellpackParams bp;
  bp.block_rows = 2;
  bp.block_cols = 4;
  bp.slice_height = 8;
  for (const FormatParams& params : {FormatParams{bc}, FormatParams{bp}}) {
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(describe(params));
      Plan plan;
      plan.format = std::string(format_of(params));
      plan.params = params;
      plan.precision = p;
      const Encoded e = compiler::encode(a, plan);
      const KernelSource want = codegen::generate(plan, e, profile);
      const KernelSource got =
          compiler::generate_device_block(plan, profile, a.nrows, a.ncols, a.nnz());
      CHECK(got.source == want.source);
      CHECK(got.kernel_name == want.kernel_name);
      CHECK(got.grid == want.grid);
    }
  }
  Plan csr;
  csr.format = "csr";
  csr.params = CsrParams{};
  CHECK_THROWS_AS(compiler::generate_device_block(csr, profile, 1, 1, 1), InternalError);
}

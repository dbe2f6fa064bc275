// bcsr and bellpack built on the GPU from device arrays (runtime/device_build_block.cpp): every
// array equals the host encoder's for the same parameters, byte for byte, for every block shape
// (bellpack at several slice heights), in fp64 and fp32, on edge matrices and every public
// matrix of 10k nonzeros or more; the block inspection's aligned shapes equal inspect_blocks'
// (the same sampled windows); unsorted columns are refused; and the operators compile(DeviceCsr)
// makes with them multiply as the host reference does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "device.hpp"
#include "device_block.hpp"
#include "device_csr.hpp"
#include "device_ell.hpp"
#include "edge_matrices.hpp"
#include "formats/format.hpp"
#include "gpu_support.hpp"
#include "spmvc/blocks.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_block.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;
using test::check;
using test::have_device;
using test::tolerance;

namespace {

struct Kernels {
  runtime::KernelCache cache{{}};
  runtime::DeviceEllKernels ell;
  runtime::DeviceBlockKernels block;
  Kernels() {
    const runtime::DeviceInfo device = runtime::probe_device(0);
    ell = runtime::load_device_ell_kernels(cache, device);
    block = runtime::load_device_block_kernels(cache, device);
  }
};

// Every array the GPU builds for `params` against the host encoder's: the same names, in the
// same order, the same bytes.
void check_arrays(const CsrMatrix& a, const runtime::ResidentCsr& r, const FormatParams& params,
                  Precision p, const Kernels& k) {
  CAPTURE(describe(params));
  CAPTURE(to_string(p));
  Plan plan;
  plan.format = std::string(format_of(params));
  plan.params = params;
  plan.precision = p;
  const Encoded want = formats::find_format(plan.format).encode(a, params, p);
  const runtime::DeviceBlockBuild got = runtime::build_block_device(r.view, plan, k.block, k.ell);
  REQUIRE(got.arrays.size() == want.arrays.size());
  for (std::size_t i = 0; i < want.arrays.size(); ++i) {
    const EncodedArray& h = want.arrays[i];
    CAPTURE(h.name);
    CHECK(got.arrays[i].first == h.name);
    std::vector<std::byte> d(got.arrays[i].second.bytes());
    REQUIRE(d.size() == h.bytes.size());
    if (!d.empty()) got.arrays[i].second.download(d.data(), d.size());
    CHECK(std::memcmp(d.data(), h.bytes.data(), d.size()) == 0);
  }
}

// The block inspection on the GPU against inspect_blocks' aligned shapes.
void check_shapes(const CsrMatrix& a, const runtime::ResidentCsr& r, const Kernels& k) {
  const runtime::DeviceBlockInspection got = runtime::inspect_blocks_device(r.view, k.block);
  REQUIRE(got.sorted);
  const BlockReport want = inspect_blocks(a);
  REQUIRE(got.shapes.size() == 64);
  for (const BlockShape& s : got.shapes) {
    CAPTURE(s.r);
    CAPTURE(s.c);
    const BlockShape* w = want.find(s.r, s.c, BlockPlacement::aligned);
    REQUIRE(w != nullptr);
    CHECK(s.blocks == w->blocks);
    CHECK(s.nnz == w->nnz);
  }
}

// The operator compile(DeviceCsr) builds with `params` multiplies as the host reference does
// (skipped where the format cannot implement the matrix).
void check_product(const CsrMatrix& a, const runtime::ResidentCsr& r, const FormatParams& params,
                   Precision p) {
  CAPTURE(describe(params));
  CAPTURE(to_string(p));
  Profile profile = inspect(a, InspectDepth::rows);
  profile.block_shapes = inspect_blocks(a).shapes;
  if (formats::find_format(format_of(params)).cannot_implement(profile, params, p)) return;
  const Operator op = compile(r.view, test::forced(p, params));
  CHECK(op.plan().format == format_of(params));
  CHECK(op.timings().upload == 0.0);
  CHECK(check(a, op) <= tolerance(p));
  CHECK(check(a, op, -0.5, 1.25) <= tolerance(p));
}

BcsrParams bcsr(int r, int c, int t = 1) {
  BcsrParams p;
  p.block_rows = r;
  p.block_cols = c;
  p.threads_per_row = t;
  return p;
}

BellpackParams bellpack(int r, int c, int h) {
  BellpackParams p;
  p.block_rows = r;
  p.block_cols = c;
  p.slice_height = h;
  return p;
}

std::vector<std::pair<std::string, CsrMatrix>> small_matrices() {
  std::vector<std::pair<std::string, CsrMatrix>> all;
  for (auto& [name, m] : test::edge_matrices()) {
    if (m.nrows > 0 && m.ncols > 0) all.emplace_back(name, std::move(m));
  }
  all.emplace_back("elasticity", gen::elasticity_3d(12, 11, 10));
  all.emplace_back("short and long rows", test::short_and_long_rows(30000, true));
  all.emplace_back("power law", gen::rmat(14, 8));
  all.emplace_back("rectangular", gen::random_uniform(30000, 7000, 7));
  all.emplace_back("wide", gen::random_uniform(5000, 90000, 12));
  all.emplace_back("stencil", gen::stencil_2d_5pt(300, 200));
  return all;
}

}  // namespace

TEST_CASE("gpu: bcsr and bellpack built on the GPU equal the host encodings, array by array") {
  if (!have_device()) return;
  const Kernels k;
  for (const auto& [name, a] : small_matrices()) {
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      for (int br = 1; br <= 8; ++br) {
        for (int bc = 1; bc <= 8; ++bc) {
          check_arrays(a, r, bcsr(br, bc), p, k);
          for (int h : {1, 32}) check_arrays(a, r, bellpack(br, bc, h), p, k);
        }
      }
    }
  }
}

TEST_CASE("gpu: the block inspection on the GPU is inspect_blocks', exact and sampled") {
  if (!have_device()) return;
  const Kernels k;
  for (const auto& [name, a] : small_matrices()) {
    CAPTURE(name);
    check_shapes(a, runtime::upload_csr(a, Precision::f64), k);
  }
  // Unsorted columns: no shapes, and the block formats are refused by name.
  CsrMatrix unsorted = gen::elasticity_3d(5, 5, 5);
  for (std::int64_t row = 0; row < unsorted.nrows; ++row)
    std::reverse(unsorted.col_idx.begin() + unsorted.row_ptr[row],
                 unsorted.col_idx.begin() + unsorted.row_ptr[row + 1]);
  const runtime::ResidentCsr r = runtime::upload_csr(unsorted, Precision::f64);
  const runtime::DeviceBlockInspection seen = runtime::inspect_blocks_device(r.view, k.block);
  CHECK_FALSE(seen.sorted);
  CHECK(seen.shapes.empty());
  Options o;
  o.disk_cache = false;
  o.format = "bcsr";
  CHECK_THROWS_WITH_AS(compile(r.view, o), doctest::Contains("do not strictly increase"),
                       InputError);
  o.format = "auto";
  const Operator any = compile(r.view, o);
  CHECK(any.plan().format != "bcsr");
  CHECK(any.plan().format != "bellpack");
  CHECK(check(unsorted, any) <= tolerance(Precision::f64));
}

TEST_CASE("gpu: compile(DeviceCsr) with bcsr and bellpack multiplies right") {
  if (!have_device()) return;
  for (const auto& [name, a] : small_matrices()) {
    CAPTURE(name);
    if (!std::all_of(a.values.begin(), a.values.end(), [](double v) { return std::isfinite(v); }))
      continue;
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      for (const FormatParams& params :
           {FormatParams{bcsr(3, 3, 4)}, FormatParams{bcsr(2, 5)}, FormatParams{bcsr(1, 8, 32)},
            FormatParams{bellpack(3, 3, 32)}, FormatParams{bellpack(4, 2, 7)}})
        check_product(a, r, params, p);
      // Format auto runs no block pass (it costs more than the rest of the build): no shapes,
      // no block candidates. (Forced parameters above ran it: check_product.)
      Options o;
      o.precision = p;
      o.disk_cache = false;
      const Operator op = compile(r.view, o);
      CHECK(check(a, op) <= tolerance(p));
      CHECK(op.profile().block_shapes.empty());
      CHECK_FALSE(codegen::device_block_family(op.plan().format));
    }
  }
}

TEST_CASE("gpu: bcsr and bellpack from device arrays on every public matrix") {
  if (!have_device()) return;
  const auto list = test::public_matrices(10000);
  if (list.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  const Kernels k;
  for (const auto& [name, path] : list) {
    const CsrMatrix a = read_matrix_market(path);
    CAPTURE(name);
    Profile profile = inspect(a, InspectDepth::rows);
    profile.block_shapes = inspect_blocks(a).shapes;
    for (Precision p : {Precision::f64, Precision::f32}) {
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      if (p == Precision::f64) check_shapes(a, r, k);
      // The shapes the planner proposes, and bcsr 2x2 and bellpack 3x3 (where they can implement
      // the matrix).
      std::vector<FormatParams> sets = {bcsr(2, 2), bellpack(3, 3, 32)};
      for (const char* format : {"bcsr", "bellpack"})
        for (const Candidate& c : formats::find_format(format).propose(profile, p)) {
          // bcsr's symmetric half is built on the host only.
          const auto* b = std::get_if<BcsrParams>(&c.params);
          if (c.applicable && (b == nullptr || !b->symmetric)) sets.push_back(c.params);
        }
      for (const FormatParams& params : sets) {
        if (formats::find_format(format_of(params)).cannot_implement(profile, params, p)) continue;
        check_arrays(a, r, params, p, k);
        check_product(a, r, params, p);
      }
    }
  }
}

// bro_ell, bro_coo and bro_hyb built on the GPU from device arrays (runtime/device_build_bro.cpp),
// on edge cases: every array equals the host codec's for the same plan, entry by entry, in every
// width-table mode, symbol length and value storage; the column inspection equals inspect()'s;
// the operators multiply right; unsorted columns are refused for bro_ell, the nonzero named.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "device_bro_support.hpp"

using namespace spmvc;
using namespace spmvc::test::bro_gpu;
using test::check;
using test::have_device;
using test::tolerance;

TEST_CASE("gpu: bro_ell built on the GPU equals the host codec's, edge cases, every mode") {
  if (!have_device()) return;
  const Units u;
  for (const CsrMatrix& a : edge_matrices()) {
    for (const BroEllParams& shape : edge_shapes(true)) {
      for (Precision precision : {Precision::f64, Precision::f32}) {
        for (int coding : {formats::kValuesPlain, formats::kValuesUnit, formats::kValuesTable8,
                           formats::kValuesF32}) {
          if (coding == formats::kValuesF32 && precision != Precision::f64) continue;
          const Profile profile = inspect(a, InspectDepth::rows);
          if (coding != formats::kValuesPlain &&
              formats::value_coding_problem(profile, coding, precision))
            continue;
          BroEllParams p = shape;
          p.values = coding;
          CAPTURE(a.nrows);
          CAPTURE(a.nnz());
          CAPTURE(describe(p));
          CAPTURE(to_string(precision));
          const bool compared = same_as_host(u, a, p, precision);
          CHECK((compared || coding == formats::kValuesTable8));
        }
      }
    }
  }
}

TEST_CASE("gpu: the column inspection on the GPU equals inspect()'s") {
  if (!have_device()) return;
  const Units u;
  std::vector<CsrMatrix> all = edge_matrices();
  all.push_back(gen::stencil_2d_5pt(700, 500));
  // More rows than the pass's 4096 blocks of 256 cover at once: blocks take several tiles.
  all.push_back(gen::stencil_2d_5pt(1500, 1000));
  all.push_back(gen::rmat(17, 16));
  for (const CsrMatrix& a : all) {
    CAPTURE(a.nrows);
    const Profile host = inspect(a, InspectDepth::rows);
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
    Profile device;
    device.nnz = a.nnz();
    CHECK(runtime::inspect_bro_device(r.view, u.bro, device).empty());
    CHECK(device.delta_bits == host.delta_bits);
    CHECK(device.first_col_bits == host.first_col_bits);
    CHECK(device.x_sectors == host.x_sectors);
    CHECK(device.slice_longest == host.slice_longest);
  }
}

TEST_CASE("gpu: compile(DeviceCsr) multiplies right with bro_ell in every mode") {
  if (!have_device()) return;
  for (const CsrMatrix& a : edge_matrices()) {
    for (const BroEllParams& shape : edge_shapes(false)) {
      for (Precision precision : {Precision::f64, Precision::f32}) {
        const Profile profile = inspect(a, InspectDepth::rows);
        BroEllParams p = shape;
        p.values = formats::best_value_coding(profile, precision);
        if (p.values == formats::kValuesTable16) p.values = formats::kValuesPlain;
        const formats::BroEllFormat unit;
        if (unit.cannot_implement(profile, p, precision)) continue;
        CAPTURE(a.nrows);
        CAPTURE(describe(p));
        CAPTURE(to_string(precision));
        const runtime::ResidentCsr r = runtime::upload_csr(a, precision);
        const Operator op = compile(r.view, test::forced(precision, p));
        CHECK(op.plan().format == "bro_ell");
        CHECK(check(a, op) <= tolerance(precision));
        CHECK(check(a, op, 2.0, -1.0) <= tolerance(precision));
      }
    }
  }
}

TEST_CASE("gpu: bro_ell from device arrays with unsorted columns is refused, naming the nonzero") {
  if (!have_device()) return;
  CsrMatrix a = gen::stencil_2d_5pt(100, 80);
  // Inside row 250 (5 nonzeros): its third no longer exceeds its second.
  const std::int64_t k = a.row_ptr[250] + 2;
  REQUIRE(a.row_length(250) == 5);
  std::swap(a.col_idx[static_cast<std::size_t>(k - 1)], a.col_idx[static_cast<std::size_t>(k)]);
  const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
  Options o;
  o.disk_cache = false;
  o.format = "bro_ell";
  try {
    (void)compile(r.view, o);
    FAIL("bro_ell on unsorted columns was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(fmt::format("1 nonzeros do not exceed the one before them "
                                                 "in their row, the first at nonzero {}",
                                                 k)) != std::string::npos);
  }
  // The planner's own choice: no BRO, and a right product.
  o.format = "auto";
  const Operator op = compile(r.view, o);
  CHECK(op.plan().format != "bro_ell");
  CHECK(check(a, op) <= tolerance(Precision::f64));
}

TEST_CASE("gpu: bro_coo built on the GPU equals the host codec's on edge cases") {
  if (!have_device()) return;
  const Units u;
  for (const CsrMatrix& a : edge_matrices()) check_bro_coo(u, a);
}

TEST_CASE("gpu: bro_hyb built on the GPU equals the host codec's on edge cases") {
  if (!have_device()) return;
  const Units u;
  for (const CsrMatrix& a : edge_matrices()) check_bro_hyb(u, a);
}

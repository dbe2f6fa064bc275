// csr_stream: every shape the planner proposes, in every precision, with 32- and 64-bit offsets
// and 16-bit columns, compiles with NVRTC to an sm_90 CUBIN without spills (no GPU needed).
#include <doctest/doctest.h>

#include <algorithm>
#include <utility>

#include "formats/csr_stream/csr_stream_format.hpp"
#include "nvrtc_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

TEST_CASE("csr_stream: every proposed shape and precision compiles without spills") {
  const CsrMatrix a = gen::rmat(10, 8);
  const formats::CsrStreamFormat unit;
  int compiled = 0;
  for (const Candidate& c : unit.propose(inspect(a, InspectDepth::rows), Precision::f64)) {
    if (!c.applicable) continue;
    for (int columns : {0, 1, 2}) {  // 32-bit columns and offsets, 64-bit offsets, 16-bit columns
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        CsrStreamParams params = std::get<CsrStreamParams>(c.params);
        params.offsets64 = columns == 1;
        params.narrow_columns = columns == 2;
        const Encoded e = unit.encode(a, params, p);
        test::check_compiles(unit.generate(e, params, ""));
        ++compiled;
      }
    }
  }
  CHECK(compiled >= 3 * 3 * 3);
}

TEST_CASE("csr_stream: two rows a lane compiles without spills") {
  const CsrMatrix a = gen::stencil_2d_5pt(200, 100);
  const formats::CsrStreamFormat unit;
  for (const auto& [block, tile] :
       {std::pair{256, 2048}, std::pair{128, 1024}, std::pair{512, 4096}}) {
    for (const bool narrow : {false, true}) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        CsrStreamParams params;
        params.block_size = block;
        params.tile = tile;
        params.rows_per_lane = 2;
        params.narrow_columns = narrow;
        const Encoded e = unit.encode(a, params, p);
        const KernelSource k = unit.generate(e, params, "");
        CHECK(k.kernel_name.find("_m2") != std::string::npos);
        test::check_compiles(k);
      }
    }
  }
}

TEST_CASE(
    "csr_stream: sorted tiles compile without spills in every proposed one-row-a-lane shape") {
  const CsrMatrix a = gen::rmat(10, 8);
  const formats::CsrStreamFormat unit;
  int compiled = 0;
  for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    for (const Candidate& c : unit.propose(inspect(a, InspectDepth::rows), p)) {
      CsrStreamParams params = std::get<CsrStreamParams>(c.params);
      if (!c.applicable || params.rows_per_lane != 1) continue;
      params.sorted = true;
      const Encoded e = unit.encode(a, params, p);
      const KernelSource k = unit.generate(e, params, "");
      CHECK(k.kernel_name.find("_srt") != std::string::npos);
      test::check_compiles(k);
      ++compiled;
    }
  }
  CHECK(compiled >= 3 * 3);
}

TEST_CASE("csr_stream: split rows compile without spills wherever they are allowed") {
  // Every one-row-a-lane shape the planner proposes, with 32- and 16-bit columns, plain and
  // sorted tiles, in fp64 and fp32; the codings and precision split rows refuse are refused.
  const CsrMatrix a = gen::rmat(10, 8);
  const formats::CsrStreamFormat unit;
  const Profile profile = inspect(a, InspectDepth::rows);
  int compiled = 0, refused = 0;
  for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    for (const Candidate& c : unit.propose(profile, p)) {
      CsrStreamParams params = std::get<CsrStreamParams>(c.params);
      if (!c.applicable || params.rows_per_lane != 1 || params.block_size > 256 ||
          params.tile > 2048)
        continue;
      for (const bool sorted : {false, true}) {
        params.split = 16;
        params.sorted = sorted;
        if (unit.cannot_implement(profile, params, p)) {
          CHECK((p == Precision::f32_acc64 || params.values == formats::kValuesTable8 ||
                 params.values == formats::kValuesTable16));
          ++refused;
          continue;
        }
        const Encoded e = unit.encode(a, params, p);
        const KernelSource k = unit.generate(e, params, "");
        CHECK(k.kernel_name.find("_s16") != std::string::npos);
        test::check_compiles(k);
        ++compiled;
      }
    }
  }
  CHECK(compiled >= 2 * 3 * 2);
  CHECK(refused >= 3 * 2);
}

TEST_CASE(
    "csr_stream: 256-thread units keep eight blocks a multiprocessor with either long-row loop") {
  // The long-row loop eight loads deep (16-bit columns, one row a lane, no value table) is taken
  // only where the unit stays at 32 registers: at 34 a multiprocessor holds seven 256-thread
  // blocks, and at 40 (fp32 with the deep loop, unbounded) six, which measured slower than the
  // loop it replaces (bench/results/2026-12-03-h200-long-rows/). fp32's deep units are compiled
  // at eight blocks a multiprocessor, which holds them at 32. 16-bit columns (the planner's
  // csr_stream picks), every coding, each precision, one and two rows a lane. (32-bit-column
  // units are not all at 32 registers with either loop: fp32 plain at 40, a 16-bit value table
  // with two rows a lane at 34 in fp32 and spilling in fp64.)
  CsrMatrix a = gen::rmat(10, 8);
  CsrMatrix ones = a;
  std::fill(ones.values.begin(), ones.values.end(), 1.0);
  const formats::CsrStreamFormat unit;
  int compiled = 0;
  for (const int values : {formats::kValuesPlain, formats::kValuesUnit, formats::kValuesTable16}) {
    for (const int rows_per_lane : {1, 2}) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        CAPTURE(values);
        CAPTURE(rows_per_lane);
        CAPTURE(to_string(p));
        CsrStreamParams params;
        params.block_size = 256;
        params.tile = 2048;
        params.narrow_columns = true;
        params.rows_per_lane = rows_per_lane;
        params.values = values;
        const CsrMatrix& m = values == formats::kValuesUnit ? ones : a;
        if (unit.cannot_implement(inspect(m, InspectDepth::rows), params, p)) continue;
        const Encoded e = unit.encode(m, params, p);
        const KernelSource k = unit.generate(e, params, "");
        const bool deep_fp32 =
            p == Precision::f32 && rows_per_lane == 1 && values != formats::kValuesTable16;
        CHECK((k.source.find("__launch_bounds__(kBlockSize, 2048 / kBlockSize)") !=
               std::string::npos) == deep_fp32);
        CHECK((k.source.find("Acc, true>(") != std::string::npos) == deep_fp32);
        const runtime::Cubin cubin = runtime::compile_cubin(k, "sm_90");
        CHECK(cubin.registers <= 32);
        CHECK(cubin.spill_store_bytes == 0);
        ++compiled;
      }
    }
  }
  CHECK(compiled >= 12);
}

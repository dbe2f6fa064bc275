// The BRO formats on the GPU: compile() with bro_ell / bro_coo / bro_hyb forced, apply() against
// the fp64 host reference, on the generated classes, alpha/beta, empty rows, a dense row,
// rectangular shapes, every parameter corner and every public matrix with >= 10k nonzeros.
// Skipped without a GPU. Filter: -tc='gpu: bro*'.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "formats/arrays.hpp"
#include "formats/format.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

using test::check;
using test::forced;
using test::have_device;
using test::tolerance;

namespace {

Options planned(Precision p, const std::string& format) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  o.format = format;
  return o;
}

int split(const CsrMatrix& a) {
  return static_cast<int>(formats::hyb_split_width(inspect(a, InspectDepth::rows)));
}

const char* const kClasses[] = {"stencil2d:n=300",      "stencil7:n=40",
                                "stencil27:n=40",       "elasticity:n=14",
                                "rmat:scale=16,ef=16",  "random:n=50000,per_row=16",
                                "banded:n=60000,hbw=10"};

}  // namespace

TEST_CASE("gpu: bro_ell planner's pick is correct on every generated class and precision") {
  if (!have_device()) return;
  for (const std::string spec : kClasses) {
    const CsrMatrix a = gen::from_spec(spec);
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(spec);
      CAPTURE(to_string(p));
      const Operator op = compile(a, planned(p, "bro_ell"));
      CAPTURE(op.source().kernel_name);
      CHECK(check(a, op) <= tolerance(p));
      CHECK(op.timings().spill_bytes == 0);
    }
  }
}

TEST_CASE("gpu: bro_ell every slice shape, symbol length, unroll, prefetch and table mode") {
  if (!have_device()) return;
  // Skewed rows (R-MAT, empty rows included) bigger than a warp, and a 27-point stencil whose
  // slices share one width pattern.
  for (const char* spec : {"rmat:scale=12,ef=8", "stencil27:n=20"}) {
    const CsrMatrix a = gen::from_spec(spec);
    struct Shape {
      int h, t;
    };
    for (Shape s : {Shape{256, 1}, Shape{32, 1}, Shape{64, 2}, Shape{8, 4}, Shape{1, 32}}) {
      for (int sym : {32, 64}) {
        for (int tables : {0, 1, 2}) {
          for (int u : {1, 2, 4}) {
            for (bool pf : {false, true}) {
              if (tables == 2 && (u != 1 || pf)) continue;
              for (Precision p : {Precision::f64, Precision::f32}) {
                const BroEllParams bp{s.h, sym, s.t, 256, u, pf, tables};
                const auto& unit = formats::find_format("bro_ell");
                if (unit.cannot_implement(inspect(a, InspectDepth::rows), bp, p)) continue;
                const Operator op = compile(a, forced(p, bp));
                CAPTURE(spec);
                CAPTURE(op.source().kernel_name);
                CHECK(check(a, op) <= tolerance(p));
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("gpu: bro_coo and bro_hyb every interval and symbol length") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=13,ef=8");
  for (int interval : {32, 256, 1024, 4096}) {
    for (int sym : {32, 64}) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        const Operator coo = compile(a, forced(p, BroCooParams{interval, sym, 256}));
        CAPTURE(coo.source().kernel_name);
        CHECK(check(a, coo) <= tolerance(p));
        const Operator hyb =
            compile(a, forced(p, BroHybParams{split(a), 32, sym, 1, 256, 2, true, 0, interval}));
        CAPTURE(hyb.source().kernel_name);
        CHECK(check(a, hyb) <= tolerance(p));
      }
    }
  }
  // ELL width 0 (everything in COO) and a width past the longest row (COO empty).
  for (int k : {0, 100000}) {
    const Operator op =
        compile(a, forced(Precision::f64, BroHybParams{k, 8, 32, 4, 256, 1, false, 0, 256}));
    CAPTURE(k);
    CHECK(check(a, op, 0.5, 2.0) <= tolerance(Precision::f64));
  }
  // The hyb ELL part with constant and baked tables.
  for (int tables : {1, 2}) {
    const Operator op = compile(
        a, forced(Precision::f32, BroHybParams{split(a), 32, 32, 1, 256, 1, false, tables, 1024}));
    CAPTURE(op.source().kernel_name);
    CHECK(check(a, op) <= tolerance(Precision::f32));
  }
}

TEST_CASE("gpu: bro formats' planner picks on every generated class") {
  if (!have_device()) return;
  for (const std::string spec : kClasses) {
    const CsrMatrix a = gen::from_spec(spec);
    for (const char* format : {"bro_coo", "bro_hyb"}) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        const Operator op = compile(a, planned(p, format));
        CAPTURE(spec);
        CAPTURE(op.source().kernel_name);
        CHECK(check(a, op) <= tolerance(p));
        CHECK(op.timings().spill_bytes == 0);
      }
    }
  }
}

TEST_CASE("gpu: bro formats follow y = alpha*A*x + beta*y") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=20");
  for (const char* format : {"bro_ell", "bro_coo", "bro_hyb"}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      const Operator op = compile(a, planned(p, format));
      CAPTURE(op.source().kernel_name);
      CHECK(check(a, op, 2.5, 0.0) <= tolerance(p));
      CHECK(check(a, op, -1.0, 0.75) <= tolerance(p));
      CHECK(check(a, op, 0.0, 1.5) <= tolerance(p));
    }
  }
}

TEST_CASE("gpu: bro formats on rectangular matrices, empty rows and a single dense row") {
  if (!have_device()) return;
  const CsrMatrix a = test::dense_row_rectangular();
  const CsrMatrix wide = gen::from_spec("random:nrows=2000,ncols=70000,per_row=9");
  const CsrMatrix tall = gen::from_spec("random:nrows=70000,ncols=300,per_row=5");
  for (const CsrMatrix* m : {&a, &wide, &tall}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      for (const FormatParams& params :
           {FormatParams{BroEllParams{32, 32, 1, 256, 2, true, 0}},
            FormatParams{BroEllParams{256, 32, 1, 256, 1, false, 0}},
            FormatParams{BroEllParams{1, 64, 32, 256, 1, true, 0}},
            FormatParams{BroCooParams{1024, 32, 256}},
            FormatParams{BroHybParams{split(*m), 32, 64, 1, 256, 2, true, 0, 1024}}}) {
        const Operator op = compile(*m, forced(p, params));
        CAPTURE(m->nrows);
        CAPTURE(op.source().kernel_name);
        CHECK(check(*m, op) <= tolerance(p));
        CHECK(check(*m, op, -2.0, 0.5) <= tolerance(p));
      }
    }
  }
}

TEST_CASE("gpu: bro formats on every public matrix with at least 10k nonzeros, fp64 and fp32") {
  if (!have_device()) return;
  fs::path dir = test::shared_matrices();
  if (const char* env = std::getenv("SPMVC_MATRIX_DIR")) dir = env;
  if (dir.empty() || !fs::exists(dir / "index.csv")) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);  // header
  int tested = 0;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 6;) f.push_back(cell);
    if (f.size() < 6 || f[0] == "young1c" || std::stoll(f[5]) < 10000) continue;
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    const CsrMatrix a = read_matrix_market(file);
    for (const char* format : {"bro_ell", "bro_coo", "bro_hyb"}) {
      for (Precision p : {Precision::f64, Precision::f32}) {
        CAPTURE(f[0]);
        CAPTURE(format);
        CAPTURE(to_string(p));
        // bro_ell may refuse a matrix whose slices pad too far (a very long row): then the
        // planner says so, and the other two still run.
        try {
          const Operator op = compile(a, planned(p, format));
          CAPTURE(op.source().kernel_name);
          CHECK(check(a, op) <= tolerance(p));
        } catch (const InputError& e) {
          CHECK(std::string(format) == "bro_ell");
          MESSAGE("bro_ell refused " << f[0] << ": " << e.what());
        }
      }
    }
    ++tested;
  }
  MESSAGE("public matrices tested: " << tested);
  CHECK(tested > 0);
}

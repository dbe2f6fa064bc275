// ell, sell and hyb on the GPU: compile() -> apply() against the fp64 host CSR reference, on the
// generated classes, parameter sweeps over skewed rows, alpha/beta, rectangular matrices with
// empty rows and a dense row, and every public matrix with at least 10k nonzeros. Skipped
// without a GPU. Filter one format with -tc='gpu: ell*', -tc='gpu: sell*' or -tc='gpu: hyb*'.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "formats/arrays.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

using test::check;
using test::have_device;
using test::tolerance;

namespace {

constexpr Precision kPrecisions[] = {Precision::f64, Precision::f32, Precision::f32_acc64};

Options with(Precision p, const std::string& format,
             std::optional<FormatParams> params = std::nullopt) {
  Options o;
  o.precision = p;
  o.format = format;
  o.params = std::move(params);
  o.disk_cache = false;
  return o;
}

// Row lengths drawn from [0, max_len] independently of the row: skewed, with empty rows.
CsrMatrix random_lengths(std::int64_t nrows, std::int64_t ncols, int max_len, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len_dist(0, max_len);
  std::uniform_int_distribution<std::int64_t> col_dist(0, ncols - 1);
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  for (std::int64_t r = 0; r < nrows; ++r) {
    const int len = static_cast<int>(std::min<std::int64_t>(len_dist(rng), ncols));
    std::vector<std::int32_t> cols;
    while (static_cast<int>(cols.size()) < len) {
      const auto c = static_cast<std::int32_t>(col_dist(rng));
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    std::sort(cols.begin(), cols.end());
    for (std::int32_t c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(static_cast<double>((r * 7 + c) % 13) / 8.0 - 0.7);
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// nrows x ncols: row 0 dense, every third row empty, the rest sparse.
CsrMatrix dense_row(std::int64_t nrows, std::int64_t ncols) {
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    if (r == 0) {
      for (std::int64_t c = 0; c < ncols; ++c) {
        a.col_idx.push_back(static_cast<std::int32_t>(c));
        a.values.push_back(1.0 / static_cast<double>(c + 1));
      }
    } else if (r % 3 != 0) {
      for (std::int64_t c = r % 7; c < ncols; c += 97 + r % 13) {
        a.col_idx.push_back(static_cast<std::int32_t>(c));
        a.values.push_back(static_cast<double>(r - c) * 0.01);
      }
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// Calls `each(name, matrix)` for every public matrix with at least 10k stored nonzeros; returns
// how many there were (0 when the matrices are absent).
int for_public_matrices(const std::function<void(const std::string&, const CsrMatrix&)>& each) {
  fs::path dir = test::shared_matrices();
  if (const char* env = std::getenv("SPMVC_MATRIX_DIR")) dir = env;
  if (dir.empty() || !fs::exists(dir / "index.csv")) {
    MESSAGE("public matrices not present: skipped");
    return 0;
  }
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);  // header
  int tested = 0;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 7;) f.push_back(cell);
    if (f.size() < 7 || f[6] == "complex" || std::stoll(f[5]) < 10000) continue;
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    each(f[0], read_matrix_market(file));
    ++tested;
  }
  MESSAGE("public matrices tested: " << tested);
  return tested;
}

const char* const kClasses[] = {
    "stencil2d:n=300",       "stencil7:n=40",
    "stencil27:n=40",        "elasticity:n=14",
    "rmat:scale=16,ef=16",   "random:n=50000,per_row=16",
    "banded:n=60000,hbw=10", "random:nrows=20000,ncols=50000,per_row=9"};

}  // namespace

// ---- ell ----

TEST_CASE("gpu: ell planner's kernel on every generated class and precision") {
  if (!have_device()) return;
  for (const char* spec : kClasses) {
    const CsrMatrix a = gen::from_spec(spec);
    CAPTURE(spec);
    if (std::string(spec).rfind("rmat", 0) == 0) {
      // Power-law rows: ELL refuses the padding, with the reason.
      CHECK_THROWS_WITH_AS(compile(a, with(Precision::f64, "ell")), doctest::Contains("pads to"),
                           InputError);
      continue;
    }
    for (Precision p : kPrecisions) {
      CAPTURE(to_string(p));
      const Operator op = compile(a, with(p, "ell"));
      CHECK(op.plan().format == "ell");
      CHECK(check(a, op) <= tolerance(p));
      CHECK(op.timings().spill_bytes == 0);
    }
  }
}

TEST_CASE("gpu: ell every lane count, unroll depth and variant on skewed rows") {
  if (!have_device()) return;
  const CsrMatrix a = random_lengths(5000, 4000, 40, 1);  // ~2.5% empty rows, K = 40
  for (int t : {1, 2, 4, 8, 16, 32}) {
    for (int u : {1, 2, 4}) {
      for (bool r : {true, false}) {
        for (Precision p : {Precision::f64, Precision::f32}) {
          EllParams e;
          e.threads_per_row = t;
          e.unroll = u;
          e.row_lengths = r;
          e.block_size = t == 32 ? 128 : 256;
          const Operator op = compile(a, with(p, "ell", e));
          CAPTURE(op.source().kernel_name);
          CHECK(check(a, op) <= tolerance(p));
        }
      }
    }
  }
}

TEST_CASE("gpu: ell alpha and beta follow y = alpha*A*x + beta*y") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=20");
  for (bool r : {true, false}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      EllParams e;
      e.row_lengths = r;
      e.threads_per_row = 4;
      const Operator op = compile(a, with(p, "ell", e));
      CHECK(check(a, op, 2.5, 0.0) <= tolerance(p));
      CHECK(check(a, op, -1.0, 0.75) <= tolerance(p));
      CHECK(check(a, op, 0.0, 2.0) <= tolerance(p));
    }
  }
}

TEST_CASE("gpu: ell rectangular, empty rows and a single dense row") {
  if (!have_device()) return;
  // Small enough that padding every row to the dense one stays within ELL's limit.
  const CsrMatrix a = dense_row(100, 400);
  for (int t : {1, 32}) {
    for (bool r : {true, false}) {
      for (Precision p : {Precision::f64, Precision::f32}) {
        EllParams e;
        e.threads_per_row = t;
        e.row_lengths = r;
        const Operator op = compile(a, with(p, "ell", e));
        CAPTURE(op.source().kernel_name);
        CHECK(check(a, op) <= tolerance(p));
        CHECK(check(a, op, 1.5, -0.5) <= tolerance(p));
      }
    }
  }
  // The 1000 x 3000 version pads past the limit and is refused.
  CHECK_THROWS_AS(compile(dense_row(1000, 3000), with(Precision::f64, "ell")), InputError);
}

TEST_CASE("gpu: ell every public matrix with at least 10k nonzeros, fp64 and fp32") {
  if (!have_device()) return;
  int refused = 0;
  const int tested = for_public_matrices([&](const std::string& name, const CsrMatrix& a) {
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(to_string(p));
      std::optional<Operator> op;
      try {
        op.emplace(compile(a, with(p, "ell")));
      } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("pads to") != std::string::npos);
        ++refused;
        continue;
      }
      CHECK(check(a, *op) <= tolerance(p));
    }
  });
  MESSAGE("ELL refused " << refused / 2 << " matrices for padding");
  if (tested > 0) CHECK(refused < 2 * tested);
}

// ---- sell ----

TEST_CASE("gpu: sell planner's kernel on every generated class and precision") {
  if (!have_device()) return;
  for (const char* spec : kClasses) {
    const CsrMatrix a = gen::from_spec(spec);
    for (Precision p : kPrecisions) {
      CAPTURE(spec);
      CAPTURE(to_string(p));
      const Operator op = compile(a, with(p, "sell"));
      CHECK(op.plan().format == "sell");
      CHECK(check(a, op) <= tolerance(p));
      CHECK(op.timings().spill_bytes == 0);
    }
  }
}

TEST_CASE("gpu: sell every slice height, window and lane count on power-law rows") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=8");  // skewed, with empty rows
  for (int c : {8, 16, 32, 64}) {
    for (int sigma : {1, 4 * c, 1024}) {
      for (int t : {1, 4, 32}) {
        for (Precision p : {Precision::f64, Precision::f32}) {
          SellParams s;
          s.slice_height = c;
          s.sigma = sigma;
          s.threads_per_row = t;
          const Operator op = compile(a, with(p, "sell", s));
          CAPTURE(op.source().kernel_name);
          CHECK(check(a, op) <= tolerance(p));
        }
      }
    }
  }
}

TEST_CASE("gpu: sell alpha and beta follow y = alpha*A*x + beta*y through the permutation") {
  if (!have_device()) return;
  const CsrMatrix a = random_lengths(20000, 20000, 30, 2);
  for (int sigma : {1, 512}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      SellParams s;
      s.sigma = sigma;
      s.threads_per_row = 2;
      const Operator op = compile(a, with(p, "sell", s));
      CHECK(check(a, op, 2.5, 0.0) <= tolerance(p));
      CHECK(check(a, op, -1.0, 0.75) <= tolerance(p));
    }
  }
}

TEST_CASE("gpu: sell rectangular, empty rows and a single dense row") {
  if (!have_device()) return;
  const CsrMatrix a = dense_row(1000, 3000);
  for (int sigma : {1, 256}) {
    for (int t : {1, 32}) {
      for (Precision p : {Precision::f64, Precision::f32}) {
        SellParams s;
        s.sigma = sigma;
        s.threads_per_row = t;
        const Operator op = compile(a, with(p, "sell", s));
        CAPTURE(op.source().kernel_name);
        CHECK(check(a, op) <= tolerance(p));
      }
    }
  }
}

TEST_CASE("gpu: sell every public matrix with at least 10k nonzeros, fp64 and fp32") {
  if (!have_device()) return;
  const int tested = for_public_matrices([&](const std::string& name, const CsrMatrix& a) {
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(to_string(p));
      const Operator op = compile(a, with(p, "sell"));
      CHECK(check(a, op) <= tolerance(p));
    }
  });
  if (test::shared_matrices().empty()) return;
  CHECK(tested > 0);
}

// ---- hyb ----

TEST_CASE("gpu: hyb planner's kernel on every generated class and precision") {
  if (!have_device()) return;
  for (const char* spec : kClasses) {
    const CsrMatrix a = gen::from_spec(spec);
    for (Precision p : kPrecisions) {
      CAPTURE(spec);
      CAPTURE(to_string(p));
      const Operator op = compile(a, with(p, "hyb"));
      CHECK(op.plan().format == "hyb");
      CHECK(check(a, op) <= tolerance(p));
      CHECK(op.timings().spill_bytes == 0);
    }
  }
}

TEST_CASE("gpu: hyb every split, lane count, interval and variant on power-law rows") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=14,ef=16");
  const int split = static_cast<int>(formats::hyb_split_width(inspect(a)));
  for (int k : {0, 2, split}) {
    for (int t : {1, 4}) {
      for (bool r : {false, true}) {
        for (int interval : {32, 256, 4096}) {
          for (Precision p : {Precision::f64, Precision::f32}) {
            HybParams h;
            h.width = k;
            h.threads_per_row = t;
            h.row_lengths = r;
            h.coo_interval = interval;
            const Operator op = compile(a, with(p, "hyb", h));
            CAPTURE(op.source().kernel_name);
            CHECK(op.source().post_launches.size() == 1);
            CHECK(check(a, op) <= tolerance(p));
          }
        }
      }
    }
  }
}

TEST_CASE("gpu: hyb with 16-bit COO rows, narrow and wide intervals") {
  if (!have_device()) return;
  // Power-law rows at three intervals, and a matrix whose seventh interval of 32 reaches from
  // row 96 to row 199999 (its rows stay 32-bit beside the narrow ones).
  const CsrMatrix far = test::rows_far_apart();
  const CsrMatrix graph = gen::from_spec("rmat:scale=14,ef=16");
  const int split = static_cast<int>(formats::hyb_split_width(inspect(graph)));
  struct Case {
    const CsrMatrix* a;
    int width, interval;
  };
  for (const Case& c :
       {Case{&graph, 0, 32}, Case{&graph, split, 256}, Case{&graph, 2, 4096}, Case{&far, 1, 32}}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      HybParams h;
      h.width = c.width;
      h.coo_interval = c.interval;
      h.narrow_rows = true;
      const Operator op = compile(*c.a, with(p, "hyb", h));
      CAPTURE(op.source().kernel_name);
      CHECK(op.source().kernel_name.find("_r16") != std::string::npos);
      CHECK(check(*c.a, op) <= tolerance(p));
      CHECK(check(*c.a, op, -0.5, 1.25) <= tolerance(p));
    }
  }
}

TEST_CASE("gpu: hyb alpha and beta: beta in the ELL launch, alpha in both") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=13,ef=8");
  for (Precision p : {Precision::f64, Precision::f32}) {
    const Operator op = compile(a, with(p, "hyb"));
    CHECK(check(a, op, 2.5, 0.0) <= tolerance(p));
    CHECK(check(a, op, -1.0, 0.75) <= tolerance(p));
    CHECK(check(a, op, 0.0, 2.0) <= tolerance(p));
  }
}

TEST_CASE("gpu: hyb rectangular, empty rows and a single dense row") {
  if (!have_device()) return;
  // The dense row's 3000 nonzeros cross many COO intervals: the carried and atomic sums meet.
  const CsrMatrix a = dense_row(1000, 3000);
  for (int interval : {32, 1024}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      HybParams h;
      h.width = 4;
      h.coo_interval = interval;
      const Operator op = compile(a, with(p, "hyb", h));
      CAPTURE(op.source().kernel_name);
      CHECK(check(a, op) <= tolerance(p));
      CHECK(check(a, op, 0.5, 1.0) <= tolerance(p));
    }
  }
  // No COO part: one launch.
  HybParams whole;
  whole.width = 1000;
  const CsrMatrix b = dense_row(20, 1000);
  const Operator op = compile(b, with(Precision::f64, "hyb", whole));
  CHECK(op.source().post_launches.empty());
  CHECK(check(b, op) <= 1e-12);
}

TEST_CASE("gpu: hyb every public matrix with at least 10k nonzeros, fp64 and fp32") {
  if (!have_device()) return;
  const int tested = for_public_matrices([&](const std::string& name, const CsrMatrix& a) {
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(to_string(p));
      const Operator op = compile(a, with(p, "hyb"));
      CHECK(check(a, op) <= tolerance(p));
    }
  });
  if (test::shared_matrices().empty()) return;
  CHECK(tested > 0);
}

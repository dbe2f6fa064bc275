// ell, sell and hyb on every public matrix under 2M stored nonzeros (all but G3_circuit; young1c
// is complex and skipped): each format's reference over its own encoding equals plain CSR, or
// the format says why it cannot store the matrix.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "formats/ell/ell_format.hpp"
#include "formats/hyb/hyb_format.hpp"
#include "formats/sell/sell_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/matrix.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

namespace {

/// Stored nonzeros above which a public matrix is left to the GPU tests (keeps this label fast).
constexpr std::int64_t kMaxNonzeros = 2'000'000;

double error_of(const CsrMatrix& a, const formats::FormatUnit& unit, const FormatParams& params,
                const std::vector<double>& x, const std::vector<double>& ref) {
  const Encoded e = unit.encode(a, params, Precision::f64);
  std::vector<double> y(ref.size(), 0.25);
  unit.reference_spmv(e, params, x, y, 1.5, 0.5);
  return compiler::relative_error(y, ref);
}

}  // namespace

TEST_CASE("ell, sell, hyb: the reference equals CSR on every public matrix under 2M nonzeros") {
  const fs::path dir = test::shared_matrices();
  if (dir.empty() || !fs::exists(dir / "index.csv")) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);  // header
  int tested = 0, ell_rejected = 0;
  const formats::EllFormat ell;
  const formats::SellFormat sell;
  const formats::HybFormat hyb;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 7;) f.push_back(cell);
    if (f.size() < 7 || f[6] == "complex" || std::stoll(f[5]) > kMaxNonzeros) continue;
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    CAPTURE(f[0]);
    const CsrMatrix a = read_matrix_market(file);
    const Profile p = inspect(a, InspectDepth::rows);
    std::vector<double> x(static_cast<std::size_t>(a.ncols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5 + static_cast<double>(i % 11) / 10;
    std::vector<double> ref(static_cast<std::size_t>(a.nrows), 0.25);
    compiler::csr_reference_spmv(a, x, ref, 1.5, 0.5);

    for (int t : {1, 4}) {
      for (bool r : {true, false}) {
        EllParams e;
        e.threads_per_row = t;
        e.row_lengths = r;
        if (auto why = ell.cannot_implement(p, e, Precision::f64)) {
          CHECK(why->find("pads to") != std::string::npos);
          ++ell_rejected;
        } else {
          CHECK(error_of(a, ell, e, x, ref) <= 1e-12);
        }
      }
    }
    for (const auto& [c, sigma, t] :
         {std::tuple{32, 1, 1}, std::tuple{32, 1024, 4}, std::tuple{8, 64, 2}}) {
      SellParams s;
      s.slice_height = c;
      s.sigma = sigma;
      s.threads_per_row = t;
      REQUIRE_FALSE(sell.cannot_implement(p, s, Precision::f64));
      CHECK(error_of(a, sell, s, x, ref) <= 1e-12);
    }
    for (const Candidate& c : hyb.propose(p, Precision::f64)) {
      REQUIRE(c.applicable);
      CHECK(error_of(a, hyb, c.params, x, ref) <= 1e-12);
    }
    ++tested;
  }
  MESSAGE("public matrices tested: " << tested << " (ELL refused " << ell_rejected
                                     << " parameter sets for padding)");
  CHECK(tested > 50);
}

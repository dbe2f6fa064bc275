#include "formats/bro/bro_eta.hpp"

#include <cstdint>
#include <limits>

#include "formats/bro_coo/bro_coo_codec.hpp"
#include "formats/bro_ell/bro_ell_codec.hpp"

namespace spmvc::formats {

namespace {

constexpr std::int64_t kWholeRow = std::numeric_limits<std::int64_t>::max();

double eta_of(double compressed_bits, double original_bits) {
  return original_bits > 0 ? 1.0 - compressed_bits / original_bits : 0.0;
}

}  // namespace

double bro_eta(const CsrMatrix& a, const BroEllParams& p) {
  const bro::EllSizes z = bro::measure_ell(a, kWholeRow, bro::shape_of(p));
  return eta_of(8.0 * static_cast<double>(z.index_bytes(p.symbol_bits)),
                32.0 * static_cast<double>(z.entries));
}

double bro_eta(const CsrMatrix& a, const BroCooParams& p) {
  const bro::CooSizes z = bro::measure_coo(a, 0, p.interval, p.symbol_bits);
  const double col_bytes = 4.0 * static_cast<double>(z.intervals * p.interval);
  return eta_of(8.0 * (static_cast<double>(z.row_index_bytes(p.symbol_bits)) + col_bytes),
                64.0 * static_cast<double>(z.entries));
}

double bro_eta(const CsrMatrix& a, const BroHybParams& p) {
  const bro::EllSizes ell = bro::measure_ell(a, p.width, bro::shape_of(p));
  const bro::CooSizes coo = bro::measure_coo(a, p.width, p.interval, p.symbol_bits);
  const double c = 8.0 * static_cast<double>(ell.index_bytes(p.symbol_bits) +
                                             coo.row_index_bytes(p.symbol_bits) +
                                             4 * coo.intervals * p.interval);
  const double o =
      32.0 * static_cast<double>(ell.entries) + 64.0 * static_cast<double>(coo.entries);
  return eta_of(c, o);
}

}  // namespace spmvc::formats

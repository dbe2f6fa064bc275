#include "formats/format.hpp"

#include <fmt/format.h>

#include "formats/csr/csr_format.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/hyb/hyb_format.hpp"
#include "formats/sell/sell_format.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

const std::vector<const FormatUnit*>& registry() {
  static const CsrFormat kCsr;
  static const EllFormat kEll;
  static const SellFormat kSell;
  static const HybFormat kHyb;
  static const std::vector<const FormatUnit*> kFormats = {&kCsr, &kEll, &kSell, &kHyb};
  return kFormats;
}

const FormatUnit& find_format(std::string_view name) {
  std::string known;
  for (const FormatUnit* f : registry()) {
    if (f->name() == name) return *f;
    known += (known.empty() ? "" : ", ") + std::string(f->name());
  }
  throw InputError("--format", 0, fmt::format("unknown format '{}' (known: {})", name, known));
}

}  // namespace spmvc::formats

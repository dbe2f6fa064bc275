#include "formats/format.hpp"

#include <fmt/format.h>

#include "formats/amb/amb_format.hpp"
#include "formats/bcsr/bcsr_format.hpp"
#include "formats/bellpack/bellpack_format.hpp"
#include "formats/blocked/blocked_format.hpp"
#include "formats/bro_coo/bro_coo_format.hpp"
#include "formats/bro_ell/bro_ell_format.hpp"
#include "formats/bro_hyb/bro_hyb_format.hpp"
#include "formats/cci/cci_format.hpp"
#include "formats/csr/csr_format.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "formats/csr_warp/csr_warp_format.hpp"
#include "formats/dia/dia_format.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/hyb/hyb_format.hpp"
#include "formats/sell/sell_format.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

const std::vector<const FormatUnit*>& registry() {
  static const CsrFormat kCsr;
  static const BroEllFormat kBroEll;
  static const BroCooFormat kBroCoo;
  static const BroHybFormat kBroHyb;
  static const CciFormat kCci;
  static const AmbFormat kAmb;
  static const EllFormat kEll;
  static const SellFormat kSell;
  static const HybFormat kHyb;
  static const BlockedFormat kBlocked;
  static const BellpackFormat kBellpack;
  static const BcsrFormat kBcsr;
  static const CsrStreamFormat kCsrStream;
  static const DiaFormat kDia;
  static const CsrWarpFormat kCsrWarp;
  static const std::vector<const FormatUnit*> kFormats = {
      &kCsr, &kEll,     &kSell,     &kHyb,  &kBroEll,    &kBroCoo, &kBroHyb, &kCci,
      &kAmb, &kBlocked, &kBellpack, &kBcsr, &kCsrStream, &kDia,    &kCsrWarp};
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

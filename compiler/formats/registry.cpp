#include "formats/format.hpp"

#include <fmt/format.h>

#include "formats/bcsr/bcsr_format.hpp"
#include "formats/bellpack/bellpack_format.hpp"
#include "formats/blocked/blocked_format.hpp"
#include "formats/csr/csr_format.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

const std::vector<const FormatUnit*>& registry() {
  static const CsrFormat kCsr;
  static const BlockedFormat kBlocked;
  static const BellpackFormat kBellpack;
  static const BcsrFormat kBcsr;
  static const std::vector<const FormatUnit*> kFormats = {&kCsr, &kBlocked, &kBellpack, &kBcsr};
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

#include "build_units.hpp"

#include <charconv>
#include <string>

#include <fmt/format.h>

#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

#ifdef SPMVC_HAVE_BUILD_UNITS
// bin2c's arrays of the units' fatbins (see CMakeLists.txt).
#include "device_bro_fatbin.inc"
#include "device_csr_fatbin.inc"
#include "device_ell_fatbin.inc"
#endif

std::string_view name_of(BuildUnit unit) {
  switch (unit) {
    case BuildUnit::device_csr:
      return "device_csr";
    case BuildUnit::device_ell:
      return "device_ell";
    case BuildUnit::device_bro:
      return "device_bro";
  }
  throw InternalError("unknown build unit");
}

// The embedded image as the cache's record of it, so shared_kernel loads each entry point once
// per device for the whole process.
const CachedKernel& embedded_image(BuildUnit unit) {
  static const auto make = [](BuildUnit u) {
    CachedKernel k;
    const std::span<const unsigned char> bytes = build_unit_fatbin(u);
    k.cubin.image.assign(bytes.begin(), bytes.end());
    k.origin = CacheOrigin::memory;
    k.key = fmt::format("{} (nvcc)", name_of(u));
    return k;
  };
  static const CachedKernel csr = make(BuildUnit::device_csr);
  static const CachedKernel ell = make(BuildUnit::device_ell);
  static const CachedKernel bro = make(BuildUnit::device_bro);
  switch (unit) {
    case BuildUnit::device_csr:
      return csr;
    case BuildUnit::device_ell:
      return ell;
    case BuildUnit::device_bro:
      return bro;
  }
  throw InternalError("unknown build unit");
}

}  // namespace

std::span<const unsigned char> build_unit_fatbin(BuildUnit unit) {
#ifdef SPMVC_HAVE_BUILD_UNITS
  switch (unit) {
    case BuildUnit::device_csr:
      return {spmvc_device_csr_fatbin, sizeof spmvc_device_csr_fatbin};
    case BuildUnit::device_ell:
      return {spmvc_device_ell_fatbin, sizeof spmvc_device_ell_fatbin};
    case BuildUnit::device_bro:
      return {spmvc_device_bro_fatbin, sizeof spmvc_device_bro_fatbin};
  }
  throw InternalError("unknown build unit");
#else
  (void)unit;
  return {};
#endif
}

std::vector<int> build_unit_archs() {
#ifdef SPMVC_HAVE_BUILD_UNITS
  // SPMVC_GENERIC_ARCHS joined by commas ("90", "80,90"), as CMake passes it.
  const std::string_view list = SPMVC_BUILD_UNIT_ARCHS;
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    out.push_back(sm_number(fmt::format("sm_{}", list.substr(at, end - at))));
    at = end + 1;
  }
  return out;
#else
  return {};
#endif
}

int sm_number(std::string_view arch) {
  int n = 0;
  const std::string_view digits = arch.starts_with("sm_") ? arch.substr(3) : std::string_view{};
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc() || n <= 0)
    throw InternalError(fmt::format("not an SM architecture: '{}'", arch));
  (void)end;  // an arch-specific suffix ("sm_90a") names the same SM number
  return n;
}

bool embedded_image_serves(const std::vector<int>& sass, int arch) {
  if (sass.empty()) return false;
  for (const int s : sass)
    if (s / 10 == arch / 10 && s % 10 <= arch % 10) return true;
  return sass.back() <= arch;  // the PTX
}

BuildUnitImage obtain_build_unit(BuildUnit unit, KernelSource (*source)(), KernelCache& cache,
                                 const DeviceInfo& device) {
  BuildUnitImage out;
  if (!build_unit_fatbin(unit).empty() &&
      embedded_image_serves(build_unit_archs(), sm_number(device.arch()))) {
    // A static's address, owned by no one.
    out.image = std::shared_ptr<const CachedKernel>(std::shared_ptr<void>(), &embedded_image(unit));
    out.nvcc = true;
    return out;
  }
  out.image = std::make_shared<const CachedKernel>(cache.get(source(), device.arch()));
  return out;
}

}  // namespace spmvc::runtime

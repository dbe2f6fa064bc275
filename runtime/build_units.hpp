// The GPU build's own units (inspection and encoders: compiler/codegen/device_csr, device_ell,
// device_bro), compiled by nvcc when the library is built and embedded as fatbins (SASS for each
// SPMVC_GENERIC_ARCHS architecture, PTX of the last), so the first GPU build of a fresh install
// compiles nothing. Where the library was built without them (SPMVC_NVCC_BUILD_UNITS off), or
// the GPU is one neither the SASS nor the PTX serves, the unit's source goes through NVRTC and
// the kernel cache as before.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "device.hpp"
#include "kernel_cache.hpp"

namespace spmvc::runtime {

enum class BuildUnit { device_csr, device_ell, device_bro };

/// The unit's fatbin as nvcc made it (uncompressed); empty when the library has none.
std::span<const unsigned char> build_unit_fatbin(BuildUnit unit);

/// The SM numbers the embedded units hold SASS for, in SPMVC_GENERIC_ARCHS order (their PTX is
/// the last one's); empty when the library has no embedded units.
std::vector<int> build_unit_archs();

/// Whether an image with SASS for `sass` (PTX of the last) runs on a GPU of SM number `arch`
/// (e.g. 90) without NVRTC: SASS of the same major version and a minor no newer than the GPU's,
/// or PTX of an architecture no newer than the GPU's, which the driver compiles.
bool embedded_image_serves(const std::vector<int>& sass, int arch);

/// The SM number of a DeviceInfo::arch() string ("sm_90" -> 90); InternalError otherwise.
int sm_number(std::string_view arch);

/// What a loader of the GPU build loads `unit` from: the embedded fatbin where it serves
/// `device` (`nvcc` true), else `source` compiled through `cache` (NVRTC, or its memory or disk
/// level). `source` is only called for the latter.
/// The embedded image is the process's own (not copied: the three units' fatbins are 0.2-0.3 MB
/// each, which a copy per compile() paid in allocation and page faults).
struct BuildUnitImage {
  std::shared_ptr<const CachedKernel> image;
  bool nvcc = false;
};
BuildUnitImage obtain_build_unit(BuildUnit unit, KernelSource (*source)(), KernelCache& cache,
                                 const DeviceInfo& device);

}  // namespace spmvc::runtime

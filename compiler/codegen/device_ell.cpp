#include "spmvc/compiler/device_ell.hpp"

#include <array>
#include <variant>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/dia/dia_format.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/hyb/hyb_format.hpp"
#include "formats/sell/sell_format.hpp"
#include "spmvc/error.hpp"

namespace spmvc::codegen {

static_assert(kEllLevelRows == kNarrowSliceRows,
              "slice_longest covers the tallest slice Profile::slice_longest measures");
static_assert(std::tuple_size_v<decltype(Profile::slice_longest)> == 9,
              "slice_longest measures heights 2^0 .. 2^8");
static_assert(kEllScanChunk == kEllScanBlock * 8, "a scan thread takes 8 elements");

bool device_ell_family(std::string_view format) {
  return format == "ell" || format == "sell" || format == "hyb";
}

static_assert(kDiaSlots >= 2 * kMaxDiagonals + 2 && (kDiaSlots & (kDiaSlots - 1)) == 0,
              "the diagonal set holds every key up to the cap, with room");

KernelSource device_ell_source() {
  KernelSource k =
      device_unit(kEllFillEntry, "device_ell", kEllFillBlock,
                  "builds ell, sell and hyb on the GPU from a CSR matrix in device memory.");
  k.source += fmt::format(
      R"(namespace de = spmvc::device_ell;
static_assert(de::kLevelBlock == {} && de::kFillBlock == {} && de::kSortBlock == {} &&
              de::kScanBlock == {} && de::kScanChunk == {} && de::kScanTopBlock == {},
              "block sizes differ from the host's");
static_assert(de::kLevelRows == {} && de::kSliceLevels == 9 && de::kMaxSortWindow == {} &&
              de::kPitchAlign == {}, "slices, sorting window or pitch differ from the host's");

extern "C" __global__ void __launch_bounds__(de::kLevelBlock)
{}(const int* __restrict__ row_ptr, long long nrows, unsigned long long* __restrict__ out) {{
  de::slice_longest(row_ptr, nrows, out);
}}

extern "C" __global__ void __launch_bounds__(de::kFillBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ src, int elem_bytes, long long nrows, long long width, int t,
    int* __restrict__ lens, int* __restrict__ col, void* __restrict__ values) {{
  de::ell_fill(row_ptr, col_idx, src, elem_bytes, nrows, width, t, lens, col, values);
}}

extern "C" __global__ void __launch_bounds__(de::kSortBlock)
{}(const int* __restrict__ row_ptr, long long nrows, int sigma, int* __restrict__ perm) {{
  de::sell_sort(row_ptr, nrows, sigma, perm);
}}

extern "C" __global__ void __launch_bounds__(de::kFillBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ perm, long long nrows, int c, int t,
    long long* __restrict__ slice_ptr) {{
  de::sell_widths(row_ptr, perm, nrows, c, t, slice_ptr);
}}

extern "C" __global__ void __launch_bounds__(de::kFillBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ src, int elem_bytes, const int* __restrict__ perm, long long nrows,
    int c, int t, const long long* __restrict__ slice_ptr, int* __restrict__ col,
    void* __restrict__ values) {{
  de::sell_fill(row_ptr, col_idx, src, elem_bytes, perm, nrows, c, t, slice_ptr, col, values);
}}

extern "C" __global__ void __launch_bounds__(de::kFillBlock)
{}(const int* __restrict__ row_ptr, long long nrows, long long width,
    long long* __restrict__ offsets) {{
  de::hyb_tails(row_ptr, nrows, width, offsets);
}}

extern "C" __global__ void __launch_bounds__(de::kFillBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ src, int elem_bytes, long long nrows, long long width,
    const long long* __restrict__ offsets, int* __restrict__ coo_row, int* __restrict__ coo_col,
    void* __restrict__ values) {{
  de::hyb_coo_fill(row_ptr, col_idx, src, elem_bytes, nrows, width, offsets, coo_row, coo_col,
                   values);
}}

static_assert(de::kDiaBlock == {} && de::kDiaSlots == {} && de::kDiaMaxDiagonals == {},
              "dia's block, set size or diagonal cap differ from the host's");
extern "C" __global__ void __launch_bounds__(de::kDiaBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, long long nrows,
    unsigned long long* __restrict__ keys, int* __restrict__ count) {{
  de::dia_offsets(row_ptr, col_idx, nrows, keys, count);
}}
extern "C" __global__ void __launch_bounds__(de::kDiaBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ values, int elem_bytes, long long nrows, int* __restrict__ flags,
    unsigned long long* __restrict__ counts) {{
  de::dia_symmetry(row_ptr, col_idx, values, elem_bytes, nrows, flags, counts);
}}
extern "C" __global__ void __launch_bounds__(de::kDiaBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ src, int elem_bytes, long long nrows,
    const int* __restrict__ offsets, int noffsets, int symmetric, void* __restrict__ values) {{
  de::dia_fill(row_ptr, col_idx, src, elem_bytes, nrows, offsets, noffsets, symmetric, values);
}}
extern "C" __global__ void __launch_bounds__(de::kScanBlock)
{}(const long long* __restrict__ data, long long n, long long* __restrict__ partials) {{
  de::scan_partials(data, n, partials);
}}

extern "C" __global__ void __launch_bounds__(de::kScanTopBlock)
{}(long long* __restrict__ partials, long long n) {{
  de::scan_top(partials, n);
}}

extern "C" __global__ void __launch_bounds__(de::kScanBlock)
{}(long long* __restrict__ data, long long n, const long long* __restrict__ partials) {{
  de::scan_apply(data, n, partials);
}}
)",
      kEllLevelBlock, kEllFillBlock, kEllSortBlock, kEllScanBlock, kEllScanChunk, kEllScanTopBlock,
      kEllLevelRows, kDeviceSortWindow, formats::EllFormat::kPitchAlign, kSliceLongestEntry,
      kEllFillEntry, kSellSortEntry, kSellWidthsEntry, kSellFillEntry, kHybTailsEntry,
      kHybCooFillEntry, kDiaBlock, kDiaSlots, kMaxDiagonals, kDiaOffsetsEntry, kDiaSymmetryEntry,
      kDiaFillEntry, kScanPartialsEntry, kScanTopEntry, kScanApplyEntry);
  return k;
}

}  // namespace spmvc::codegen

namespace spmvc::compiler {

KernelSource generate_device_ell(const Plan& plan, const Profile& profile, std::int64_t width,
                                 std::int64_t coo_entries) {
  const std::string banner = codegen::banner(plan, profile);
  if (const auto* p = std::get_if<EllParams>(&plan.params))
    return formats::EllFormat::generate_kernel(*p, plan.precision, profile.nrows, width, banner);
  if (const auto* p = std::get_if<SellParams>(&plan.params))
    return formats::SellFormat::generate_kernel(*p, plan.precision, profile.nrows, banner);
  if (const auto* p = std::get_if<HybParams>(&plan.params)) {
    KernelSource k = formats::HybFormat::generate_kernel(*p, plan.precision, profile.nrows, width,
                                                         coo_entries, banner);
    codegen::chain_launches(k);  // as codegen::generate does for the host pipeline's units
    return k;
  }
  throw InternalError("generate_device_ell: plan format " + plan.format +
                      " is not built by the ell-family device build");
}

}  // namespace spmvc::compiler

namespace spmvc::compiler {

std::vector<std::int32_t> dia_stored_offsets(const Plan& plan,
                                             const std::vector<std::int32_t>& occupied) {
  const auto* p = std::get_if<DiaParams>(&plan.params);
  if (p == nullptr) throw InternalError("dia_stored_offsets: plan format " + plan.format);
  return formats::DiaFormat::stored_offsets(occupied, p->symmetric);
}

KernelSource generate_device_dia(const Plan& plan, const Profile& profile,
                                 const std::vector<std::int32_t>& offsets) {
  const auto* p = std::get_if<DiaParams>(&plan.params);
  if (p == nullptr) throw InternalError("generate_device_dia: plan format " + plan.format);
  return formats::DiaFormat::generate_kernel(*p, plan.precision, profile.nrows, offsets,
                                             codegen::banner(plan, profile));
}

}  // namespace spmvc::compiler

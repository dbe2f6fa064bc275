// 16-bit value codes on the GPU (device_values.hpp): the set pass, its patterns packed on the GPU
// and read back (8 bytes a pattern, not the set's 1 MiB of slots), the sorted table made from them
// on the host, and the code pass.
#include "device_values.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include <fmt/format.h>

#include "spmvc/compiler/device_values.hpp"
#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

std::int64_t stride_grid(std::int64_t n) {
  const int block = codegen::kValuesBlock;
  return std::clamp<std::int64_t>((n + block - 1) / block, 1, 4096);
}

}  // namespace

DeviceValueKernels load_device_value_kernels(KernelCache& cache, const DeviceInfo& device) {
  const auto t0 = std::chrono::steady_clock::now();
  const CachedKernel cached = cache.get(codegen::device_values_source(), device.arch());
  DeviceValueKernels k;
  k.sketch = shared_kernel(cached, codegen::kValueSketchEntry, device.ordinal);
  k.set = shared_kernel(cached, codegen::kValueSetEntry, device.ordinal);
  k.gather = shared_kernel(cached, codegen::kValueGatherEntry, device.ordinal);
  k.code16 = shared_kernel(cached, codegen::kValueCode16Entry, device.ordinal);
  k.ordinal = device.ordinal;
  k.origin = cached.origin;
  k.disk_note = cached.disk_note;
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

namespace {

// The distinct patterns of a sample of kValueSketchSample values spread over the matrix, as
// value_sketch's registers estimate them.
double sampled_distinct(const DeviceCsr& a, Precision precision,
                        const DeviceValueKernels& kernels) {
  constexpr int kRegisters = codegen::kValueSketchRegisters;
  DeviceBuffer registers(kRegisters * sizeof(std::uint32_t));
  registers.fill_bytes(0);
  const void* values = a.values;
  int value_bytes = spmvc::value_bytes(precision);
  long long nnz = a.nnz;
  long long sample = codegen::kValueSketchSample;
  void* registers_ptr = registers.get();
  void* args[] = {&values, &value_bytes, &nnz, &sample, &registers_ptr};
  // A few blocks per multiprocessor's worth, each merging its registers once.
  const std::int64_t samples = std::min<std::int64_t>(a.nnz, sample);
  kernels.sketch->launch(std::clamp<std::int64_t>(samples / (16 * codegen::kValuesBlock), 1, 512),
                         codegen::kValuesBlock, 0, args, nullptr);
  check_last_launch(codegen::kValueSketchEntry);
  std::vector<std::uint32_t> host(kRegisters);
  registers.download(host.data(), host.size() * sizeof(std::uint32_t));
  return codegen::estimate_distinct(host);
}

}  // namespace

std::optional<std::vector<std::uint64_t>> value_patterns16_device(
    const DeviceCsr& a, Precision precision, const DeviceValueKernels& kernels) {
  if (a.nnz == 0) return std::vector<std::uint64_t>{};
  // Far more patterns in a sample than a 16-bit table holds: the matrix has more too, and the
  // exact set below is not needed. The set stops past the cap only after inserting that many
  // patterns: 0.35 ms on the H200 for the 27-point stencil with variable coefficients (53M
  // nonzeros).
  if (static_cast<double>(a.nnz) > codegen::kValueSketchDecides &&
      sampled_distinct(a, precision, kernels) > codegen::kValueSketchDecides)
    return std::nullopt;
  const std::size_t slot_bytes = static_cast<std::size_t>(codegen::kValueSetSlots) * 8;
  DeviceBuffer slots(slot_bytes);
  slots.fill_bytes(0xff, 0, slot_bytes);  // every slot empty (all ones)
  std::array<std::uint64_t, 3> out{};
  DeviceBuffer counters(sizeof out);
  counters.fill_bytes(0, 0, sizeof out);
  const void* values = a.values;
  int value_bytes = spmvc::value_bytes(precision);
  long long nnz = a.nnz;
  void* slots_ptr = slots.get();
  void* out_ptr = counters.get();
  void* args[] = {&values, &value_bytes, &nnz, &slots_ptr, &out_ptr};
  kernels.set->launch(stride_grid(a.nnz), codegen::kValuesBlock, 0, args, nullptr);
  check_last_launch(codegen::kValueSetEntry);
  counters.download(out.data(), sizeof out);
  const bool all_ones = out[2] != 0;
  if (out[1] != 0 || out[0] + (all_ones ? 1 : 0) > codegen::kValues16Cap) return std::nullopt;
  // The patterns packed after a count: out[0] + 1 words read back.
  const auto found = static_cast<std::size_t>(out[0]);
  DeviceBuffer packed((found + 1) * 8);
  packed.fill_bytes(0, 0, 8);
  void* packed_ptr = packed.get();
  unsigned long long capacity = found;
  void* gather_args[] = {&slots_ptr, &capacity, &packed_ptr};
  kernels.gather->launch(stride_grid(codegen::kValueSetSlots), codegen::kValuesBlock, 0,
                         gather_args, nullptr);
  check_last_launch(codegen::kValueGatherEntry);
  std::vector<std::uint64_t> host(found + 1);
  packed.download(host.data(), host.size() * 8);
  if (host[0] != found)
    throw InternalError(
        fmt::format("value set on the GPU: {} patterns in the slots, {} counted", host[0], found));
  host.erase(host.begin());
  std::vector<std::uint64_t> patterns = codegen::patterns_from_slots(host, all_ones);
  return patterns;
}

DeviceValueCodes code_values16_device(const DeviceCsr& a, Precision precision,
                                      const std::vector<std::uint64_t>& patterns,
                                      const DeviceValueKernels& kernels) {
  // No stored value (no nonzeros): one entry, 0, keeps the table valid.
  const std::vector<std::uint64_t> table =
      patterns.empty() ? std::vector<std::uint64_t>{0} : patterns;
  if (table.size() > static_cast<std::size_t>(codegen::kValues16Cap))
    throw InternalError(
        fmt::format("code_values16_device: {} value patterns for a 16-bit table", table.size()));
  const int vb = value_bytes(precision);
  DeviceValueCodes out;
  // Padded so that vector loads of codes stay inside the buffer; the padding holds code 0.
  const auto elements = static_cast<std::size_t>((a.nnz + 7) / 8 * 8 + 8);
  out.codes = DeviceBuffer(elements * 2);
  const auto coded = static_cast<std::size_t>(a.nnz) * 2;
  out.codes.fill_bytes(0, coded, out.codes.bytes() - coded);
  out.table = DeviceBuffer(table.size() * static_cast<std::size_t>(vb));
  if (vb == 8) {
    out.table.upload(table.data(), table.size() * 8);
  } else {
    std::vector<std::uint32_t> narrow(table.begin(), table.end());
    out.table.upload(narrow.data(), narrow.size() * 4);
  }
  // The code pass searches the patterns as 64-bit words (a float's zero-extended).
  DeviceBuffer search(table.size() * 8);
  search.upload(table.data(), table.size() * 8);
  DeviceBuffer missed(8);
  missed.fill_bytes(0, 0, 8);
  const void* values = a.values;
  int value_bytes_arg = vb;
  long long nnz = a.nnz;
  const void* table_ptr = search.get();
  int n = static_cast<int>(table.size());
  void* codes = out.codes.get();
  void* missed_ptr = missed.get();
  void* args[] = {&values, &value_bytes_arg, &nnz, &table_ptr, &n, &codes, &missed_ptr};
  kernels.code16->launch(stride_grid(a.nnz), codegen::kValuesBlock, 0, args, nullptr);
  check_last_launch(codegen::kValueCode16Entry);
  std::uint64_t misses = 0;
  missed.download(&misses, sizeof misses);
  if (misses > 0)
    throw InputError("DeviceCsr", 0,
                     fmt::format("{} values were not among those inspected: the values changed "
                                 "while compiling",
                                 misses));
  return out;
}

}  // namespace spmvc::runtime

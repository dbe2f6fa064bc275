#include "generic_tier.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "kernel_cache.hpp"
#include "spmvc/error.hpp"
#include "upload.hpp"

namespace spmvc::runtime {

namespace {

// bin2c's array of generic_csr.fatbin (see CMakeLists.txt).
#include "generic_csr_fatbin.inc"

// Block size of every generic entry point (generic_csr.cu's kBlock).
constexpr int kGenericBlock = 256;

// The embedded image as the cache's record of it, so shared_kernel loads each entry point once
// per device for the whole process.
const CachedKernel& generic_image() {
  static const CachedKernel image = [] {
    CachedKernel k;
    const std::span<const unsigned char> bytes = generic_csr_fatbin();
    k.cubin.image.assign(bytes.begin(), bytes.end());
    k.origin = CacheOrigin::memory;
    k.key = "generic_csr";
    return k;
  }();
  return image;
}

std::string_view precision_tag(Precision p) {
  switch (p) {
    case Precision::f64:
      return "f64";
    case Precision::f32:
      return "f32";
    case Precision::f32_acc64:
      return "f32acc64";
  }
  throw InternalError("generic tier: unknown precision");
}

}  // namespace

std::span<const unsigned char> generic_csr_fatbin() {
  return {spmvc_generic_csr_fatbin, sizeof spmvc_generic_csr_fatbin};
}

std::string generic_csr_entry(int threads_per_row, Precision precision, bool offsets64) {
  return fmt::format("spmvc_generic_csr_t{}_{}_{}", threads_per_row, precision_tag(precision),
                     offsets64 ? "i64" : "i32");
}

int generic_threads_per_row(std::int64_t nnz, std::int64_t nrows) {
  const std::int64_t mean = nrows > 0 ? (nnz + nrows - 1) / nrows : 0;
  int t = 1;
  while (t < 32 && t < mean) t *= 2;
  return t;
}

std::int64_t GenericCsr::copy_bytes(const CsrMatrix& a, Precision precision) {
  return (a.nrows + 1) * 8 + a.nnz() * (4 + (precision == Precision::f64 ? 8 : 4));
}

GenericCsr::GenericCsr(const CsrMatrix& a, Precision precision, int ordinal)
    : precision_(precision), nrows_(a.nrows) {
  const std::size_t nnz = a.col_idx.size();
  const std::size_t offsets_bytes = a.row_ptr.size() * sizeof(std::int64_t);
  row_ptr_buffer_ = DeviceBuffer(offsets_bytes);
  col_idx_buffer_ = DeviceBuffer(std::max<std::size_t>(nnz * sizeof(std::int32_t), 1));
  std::vector<UploadPart> parts{
      upload_part(row_ptr_buffer_.get(), a.row_ptr.data(), a.row_ptr.size()),
      upload_part(col_idx_buffer_.get(), a.col_idx.data(), nnz)};
  if (precision == Precision::f64) {
    values_buffer_ = DeviceBuffer(std::max<std::size_t>(nnz * sizeof(double), 1));
    parts.push_back(upload_part(values_buffer_.get(), a.values.data(), nnz));
  } else {
    values_buffer_ = DeviceBuffer(std::max<std::size_t>(nnz * sizeof(float), 1));
    parts.push_back(converting_part<float>(values_buffer_.get(), a.values.data(), nnz));
  }
  staged_upload(parts);
  row_ptr_ = row_ptr_buffer_.get();
  col_idx_ = col_idx_buffer_.get();
  values_ = values_buffer_.get();
  owned_bytes_ = static_cast<std::int64_t>(row_ptr_buffer_.bytes() + col_idx_buffer_.bytes() +
                                           values_buffer_.bytes());
  load(ordinal, /*offsets64=*/true, a.nnz());
}

GenericCsr::GenericCsr(const DeviceCsr& a, Precision precision, int ordinal)
    : precision_(precision),
      nrows_(a.nrows),
      row_ptr_(a.row_ptr),
      col_idx_(a.col_idx),
      values_(a.values) {
  load(ordinal, /*offsets64=*/false, a.nnz);
}

void GenericCsr::preload(std::int64_t nrows, std::int64_t nnz, Precision precision, int ordinal) {
  (void)shared_kernel(generic_image(),
                      generic_csr_entry(generic_threads_per_row(nnz, nrows), precision, false),
                      ordinal);
}

void GenericCsr::preload(Precision precision, int ordinal) {
  for (int threads_per_row = 1; threads_per_row <= 32; threads_per_row *= 2)
    (void)shared_kernel(generic_image(), generic_csr_entry(threads_per_row, precision, false),
                        ordinal);
}

void GenericCsr::load(int ordinal, bool offsets64, std::int64_t nnz) {
  threads_per_row_ = generic_threads_per_row(nnz, nrows_);
  kernel_ = shared_kernel(generic_image(),
                          generic_csr_entry(threads_per_row_, precision_, offsets64), ordinal);
}

void GenericCsr::apply(const void* x, void* y, double alpha, double beta, void* stream) const {
  if (nrows_ == 0) return;
  long long nrows = nrows_;
  double alpha64 = alpha, beta64 = beta;
  float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
  const bool acc64 = precision_ != Precision::f32;
  const void* row_ptr = row_ptr_;
  const void* col_idx = col_idx_;
  const void* values = values_;
  void* args[] = {&nrows,
                  &row_ptr,
                  &col_idx,
                  &values,
                  &x,
                  &y,
                  acc64 ? static_cast<void*>(&alpha64) : static_cast<void*>(&alpha32),
                  acc64 ? static_cast<void*>(&beta64) : static_cast<void*>(&beta32)};
  const long long threads = nrows_ * threads_per_row_;
  kernel_->launch((threads + kGenericBlock - 1) / kGenericBlock, kGenericBlock, 0, args, stream);
  check_last_launch(kernel_->name());
}

void permute_vector(const std::int32_t* map, std::int64_t n, const void* in, void* out,
                    int element_bytes, bool scatter, void* stream, int ordinal) {
  if (element_bytes != 4 && element_bytes != 8)
    throw InternalError(fmt::format("permute_vector: {}-byte elements", element_bytes));
  if (n <= 0) return;
  const std::string entry =
      element_bytes == 8 ? "spmvc_permute_vector_b64" : "spmvc_permute_vector_b32";
  const std::shared_ptr<const LoadedKernel> kernel = shared_kernel(generic_image(), entry, ordinal);
  long long count = n;
  int mode = scatter ? 1 : 0;
  void* args[] = {&count, &map, &in, &out, &mode};
  kernel->launch((n + kGenericBlock - 1) / kGenericBlock, kGenericBlock, 0, args, stream);
  check_last_launch(entry);
}

}  // namespace spmvc::runtime

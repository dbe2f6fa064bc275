#include "spmvc/bench/cusparse.hpp"

#include <cusparse.h>
#include <library_types.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cusparse_common.hpp"
#include "device.hpp"
#include "spmvc/error.hpp"
#include "upload.hpp"

namespace spmvc::bench {

// The runtime's device layer (device.hpp, nvrtc_compiler.hpp) does the CUDA work.
using namespace spmvc::runtime;
using detail::check_sparse;
using detail::upload;

namespace {

cusparseSpMVAlg_t to_cusparse(CusparseAlg a) {
  switch (a) {
    case CusparseAlg::csr_alg1:
      return CUSPARSE_SPMV_CSR_ALG1;
    case CusparseAlg::csr_alg2:
      return CUSPARSE_SPMV_CSR_ALG2;
    case CusparseAlg::sell_alg1:
      return CUSPARSE_SPMV_SELL_ALG1;
  }
  return CUSPARSE_SPMV_ALG_DEFAULT;
}

// Elements of the Sliced ELL layout: each slice of kCusparseSellSlice rows padded to its longest
// row.
std::int64_t sell_elements(const CsrMatrix& a) {
  std::int64_t total = 0;
  for (std::int64_t s = 0; s < a.nrows; s += kCusparseSellSlice) {
    const std::int64_t end = std::min(a.nrows, s + kCusparseSellSlice);
    std::int64_t width = 0;
    for (std::int64_t r = s; r < end; ++r)
      width = std::max(width, a.row_ptr[static_cast<std::size_t>(r) + 1] -
                                  a.row_ptr[static_cast<std::size_t>(r)]);
    total += width * kCusparseSellSlice;
  }
  return total;
}

}  // namespace

std::string_view to_string(CusparseAlg a) {
  switch (a) {
    case CusparseAlg::csr_alg1:
      return "csr_alg1";
    case CusparseAlg::csr_alg2:
      return "csr_alg2";
    case CusparseAlg::sell_alg1:
      return "sell_alg1";
  }
  return "?";
}

struct CusparseCsr::Impl {
  // What one algorithm needs. Each gets its own matrix descriptor because
  // cusparseSpMV_preprocess attaches its analysis to the descriptor, and ALG1 and ALG2 must not
  // see each other's.
  struct PerAlg {
    cusparseSpMatDescr_t mat = nullptr;
    cusparseConstDnVecDescr_t x_vec = nullptr;
    cusparseDnVecDescr_t y_vec = nullptr;
    const void* x = nullptr;
    void* y = nullptr;
    DeviceBuffer work;
    bool prepared = false;
    std::string note;  // why preprocessing was skipped
  };

  cusparseHandle_t handle = nullptr;
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  cusparseIndexType_t index_type = CUSPARSE_INDEX_32I;
  cudaDataType value_type = CUDA_R_64F;
  DeviceBuffer row_ptr, col_idx, values;
  // Sliced ELL (sell_alg1): uploaded on its first prepare, from the host copy kept until then.
  const CsrMatrix* host = nullptr;
  std::int64_t sell_size = -1;  // padded elements; -1 until counted
  DeviceBuffer sell_offsets, sell_cols, sell_values;
  std::array<PerAlg, 3> algs;

  ~Impl() {
    for (auto& p : algs) destroy_vectors(p);
    for (auto& p : algs) {
      if (p.mat != nullptr) cusparseDestroySpMat(p.mat);
    }
    if (handle != nullptr) cusparseDestroy(handle);
  }

  PerAlg& per(CusparseAlg a) { return algs[static_cast<std::size_t>(a)]; }

  // Column-major within each slice: row r's j-th entry of slice s sits at
  // offsets[s] + j * kCusparseSellSlice + (r - s * kCusparseSellSlice); padding has column -1
  // and value 0 (the layout cusparseCreateSlicedEll documents).
  void upload_sell() {
    const CsrMatrix& a = *host;
    const std::int64_t nslices = (nrows + kCusparseSellSlice - 1) / kCusparseSellSlice;
    std::vector<std::int32_t> offsets(static_cast<std::size_t>(nslices) + 1, 0);
    std::vector<std::int32_t> cols(static_cast<std::size_t>(sell_size), -1);
    std::vector<double> vals(static_cast<std::size_t>(sell_size), 0.0);
    std::int64_t at = 0;
    for (std::int64_t s = 0; s < nslices; ++s) {
      const std::int64_t first = s * kCusparseSellSlice;
      const std::int64_t end = std::min(nrows, first + kCusparseSellSlice);
      std::int64_t width = 0;
      for (std::int64_t r = first; r < end; ++r) {
        const std::int64_t b = a.row_ptr[static_cast<std::size_t>(r)];
        const std::int64_t len = a.row_ptr[static_cast<std::size_t>(r) + 1] - b;
        width = std::max(width, len);
        for (std::int64_t j = 0; j < len; ++j) {
          const auto e = static_cast<std::size_t>(at + j * kCusparseSellSlice + (r - first));
          cols[e] = a.col_idx[static_cast<std::size_t>(b + j)];
          vals[e] = a.values[static_cast<std::size_t>(b + j)];
        }
      }
      at += width * kCusparseSellSlice;
      offsets[static_cast<std::size_t>(s) + 1] = static_cast<std::int32_t>(at);
    }
    sell_offsets = upload(offsets);
    sell_cols = upload(cols);
    if (value_type == CUDA_R_64F) {
      sell_values = upload(vals);
    } else {
      sell_values = upload(std::vector<float>(vals.begin(), vals.end()));
    }
  }

  static void destroy_vectors(PerAlg& p) {
    if (p.x_vec != nullptr) cusparseDestroyDnVec(p.x_vec);
    if (p.y_vec != nullptr) cusparseDestroyDnVec(p.y_vec);
    p.x_vec = nullptr;
    p.y_vec = nullptr;
  }

  void create_matrix(CusparseAlg alg, PerAlg& p) {
    if (alg == CusparseAlg::sell_alg1) {
      if (sell_values.get() == nullptr) upload_sell();
      check_sparse(cusparseCreateSlicedEll(&p.mat, nrows, ncols, nnz, sell_size, kCusparseSellSlice,
                                           sell_offsets.get(), sell_cols.get(), sell_values.get(),
                                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                           CUSPARSE_INDEX_BASE_ZERO, value_type),
                   "cusparseCreateSlicedEll");
      return;
    }
    check_sparse(
        cusparseCreateCsr(&p.mat, nrows, ncols, nnz, row_ptr.get(), col_idx.get(), values.get(),
                          index_type, index_type, CUSPARSE_INDEX_BASE_ZERO, value_type),
        "cusparseCreateCsr");
  }

  // Scalars are passed by host pointer in the compute type (double for f64, float otherwise).
  template <class F>
  void with_scalars(double alpha, double beta, F&& f) {
    detail::with_scalars(value_type, alpha, beta, std::forward<F>(f));
  }

  std::optional<std::string> not_applicable(CusparseAlg alg) {
    if (alg != CusparseAlg::sell_alg1) return std::nullopt;
    if (index_type != CUSPARSE_INDEX_32I) return "Sliced ELL baseline uses 32-bit indices";
    if (sell_size < 0) sell_size = sell_elements(*host);
    // Small matrices always qualify: their padding costs nothing worth guarding.
    if ((sell_size > nnz * kCusparseSellMaxPadding && sell_size > (std::int64_t{1} << 20)) ||
        sell_size > INT_MAX) {
      return fmt::format("Sliced ELL pads {} nonzeros to {} elements (over {}x)", nnz, sell_size,
                         kCusparseSellMaxPadding);
    }
    return std::nullopt;
  }

  void prepare(CusparseAlg alg, const void* x, void* y) {
    if (const auto why = not_applicable(alg)) {
      throw InputError("<matrix>", 0, fmt::format("cuSPARSE {}: {}", to_string(alg), *why));
    }
    PerAlg& p = per(alg);
    // cuSPARSE has no setter for a const vector's pointer, so new pointers mean new descriptors.
    // The matrix descriptor is renewed with them (it holds no data, only pointers) so that
    // preprocessing never runs twice on one descriptor, which the documentation does not allow
    // for.
    if (p.mat == nullptr || p.x != x || p.y != y) {
      destroy_vectors(p);
      if (p.mat != nullptr) cusparseDestroySpMat(p.mat);
      p.mat = nullptr;
      p.prepared = false;
      create_matrix(alg, p);
      check_sparse(cusparseCreateConstDnVec(&p.x_vec, ncols, x, value_type),
                   "cusparseCreateConstDnVec(x)");
      check_sparse(cusparseCreateDnVec(&p.y_vec, nrows, y, value_type), "cusparseCreateDnVec(y)");
      p.x = x;
      p.y = y;
    }
    if (p.prepared) return;
    const cusparseSpMVAlg_t a = to_cusparse(alg);
    std::size_t bytes = 0;
    with_scalars(1.0, 0.0, [&](const void* alpha, const void* beta) {
      check_sparse(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, p.mat,
                                           p.x_vec, beta, p.y_vec, value_type, a, &bytes),
                   "cusparseSpMV_bufferSize");
    });
    if (p.work.bytes() < bytes || p.work.get() == nullptr) {
      p.work = DeviceBuffer(std::max<std::size_t>(bytes, 1));
    }
    with_scalars(1.0, 0.0, [&](const void* alpha, const void* beta) {
      const cusparseStatus_t st =
          cusparseSpMV_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, p.mat, p.x_vec,
                                  beta, p.y_vec, value_type, a, p.work.get());
      // Preprocessing is an optional speed-up; an algorithm without one may decline it.
      if (st == CUSPARSE_STATUS_SUCCESS || st == CUSPARSE_STATUS_NOT_SUPPORTED) return;
      // cuSPARSE 12.6 fails it on matrices past 2^31 nonzeros with an internal error: time the
      // multiply without it, on a fresh descriptor, and say so.
      p.note = fmt::format("cusparseSpMV_preprocess failed ({}: {}); timed without preprocessing",
                           static_cast<int>(st), cusparseGetErrorString(st));
      cusparseDestroySpMat(p.mat);
      p.mat = nullptr;
      create_matrix(alg, p);
    });
    p.prepared = true;
  }
};

CusparseCsr::CusparseCsr(const CsrMatrix& a, Precision precision, CusparseUpload how)
    : impl_(std::make_unique<Impl>()) {
  if (static_cast<std::int64_t>(a.row_ptr.size()) != a.nrows + 1 ||
      static_cast<std::int64_t>(a.values.size()) != a.nnz() || a.row_ptr.back() != a.nnz()) {
    throw InputError("<matrix>", 0, "CSR arrays do not match nrows and nnz");
  }
  // Without a device cusparseCreate fails with a bare NOT_INITIALIZED; probing first gives the
  // caller NoDeviceError with the reason.
  (void)probe_device();
  Impl& m = *impl_;
  m.host = &a;
  check_sparse(cusparseCreate(&m.handle), "cusparseCreate");
  m.nrows = a.nrows;
  m.ncols = a.ncols;
  m.nnz = a.nnz();
  m.value_type = precision == Precision::f64 ? CUDA_R_64F : CUDA_R_32F;

  // cuSPARSE's 32-bit indices are signed, so offsets up to nnz fit only below 2^31. Above that
  // both arrays go 64-bit: SpMV documents one index type per matrix, not a mix.
  if (how == CusparseUpload::staged) {
    // Converted in the staging buffers on the way up, as upload_csr does.
    const auto nnz = a.col_idx.size();
    const std::size_t ib = m.nnz <= INT_MAX ? 4 : 8;
    m.index_type = ib == 4 ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I;
    m.row_ptr = runtime::DeviceBuffer(a.row_ptr.size() * ib);
    m.col_idx = runtime::DeviceBuffer(std::max<std::size_t>(nnz * ib, 1));
    m.values = runtime::DeviceBuffer(
        std::max<std::size_t>(nnz * (precision == Precision::f64 ? 8 : 4), 1));
    std::vector<runtime::UploadPart> parts;
    if (ib == 4) {
      parts.push_back(runtime::converting_part<std::int32_t>(m.row_ptr.get(), a.row_ptr.data(),
                                                             a.row_ptr.size()));
      parts.push_back(runtime::upload_part(m.col_idx.get(), a.col_idx.data(), nnz));
    } else {
      parts.push_back(runtime::upload_part(m.row_ptr.get(), a.row_ptr.data(), a.row_ptr.size()));
      parts.push_back(
          runtime::converting_part<std::int64_t>(m.col_idx.get(), a.col_idx.data(), nnz));
    }
    if (precision == Precision::f64) {
      parts.push_back(runtime::upload_part(m.values.get(), a.values.data(), nnz));
    } else {
      parts.push_back(runtime::converting_part<float>(m.values.get(), a.values.data(), nnz));
    }
    runtime::staged_upload(parts);
    return;
  }
  if (m.nnz <= INT_MAX) {
    m.index_type = CUSPARSE_INDEX_32I;
    std::vector<std::int32_t> offsets(a.row_ptr.begin(), a.row_ptr.end());
    m.row_ptr = upload(offsets);
    m.col_idx = upload(a.col_idx);
  } else {
    m.index_type = CUSPARSE_INDEX_64I;
    m.row_ptr = upload(a.row_ptr);
    m.col_idx = upload(std::vector<std::int64_t>(a.col_idx.begin(), a.col_idx.end()));
  }
  if (precision == Precision::f64) {
    m.values = upload(a.values);
  } else {
    std::vector<float> v(a.values.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(a.values[i]);
    m.values = upload(v);
  }
}

CusparseCsr::~CusparseCsr() = default;

std::optional<std::string> CusparseCsr::not_applicable(CusparseAlg alg) const {
  return impl_->not_applicable(alg);
}

void CusparseCsr::prepare(CusparseAlg alg, const void* x, void* y) { impl_->prepare(alg, x, y); }

std::string CusparseCsr::note(CusparseAlg alg) const { return impl_->per(alg).note; }

void CusparseCsr::spmv(CusparseAlg alg, const void* x, void* y, double alpha, double beta,
                       void* stream) {
  Impl& m = *impl_;
  // Redoes descriptors and preprocessing only when the vectors moved (or prepare was skipped).
  m.prepare(alg, x, y);
  Impl::PerAlg& p = m.per(alg);
  check_sparse(cusparseSetStream(m.handle, static_cast<cudaStream_t>(stream)), "cusparseSetStream");
  m.with_scalars(alpha, beta, [&](const void* a, const void* b) {
    check_sparse(cusparseSpMV(m.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, a, p.mat, p.x_vec, b,
                              p.y_vec, m.value_type, to_cusparse(alg), p.work.get()),
                 "cusparseSpMV");
  });
}

std::string CusparseCsr::version() {
  int major = 0, minor = 0, patch = 0;
  // cusparseGetProperty reads the library's own version and needs no handle or device.
  if (cusparseGetProperty(MAJOR_VERSION, &major) != CUSPARSE_STATUS_SUCCESS ||
      cusparseGetProperty(MINOR_VERSION, &minor) != CUSPARSE_STATUS_SUCCESS ||
      cusparseGetProperty(PATCH_LEVEL, &patch) != CUSPARSE_STATUS_SUCCESS) {
    return fmt::format("{}.{}.{}", CUSPARSE_VER_MAJOR, CUSPARSE_VER_MINOR, CUSPARSE_VER_PATCH);
  }
  return fmt::format("{}.{}.{}", major, minor, patch);
}

}  // namespace spmvc::bench

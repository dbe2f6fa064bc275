// What the mixed-precision GPU tests share (test_mixed_precision_gpu.cpp, test_mixed_bf16_gpu.cpp):
// device bytes, the product on the device, the check of y against the plan's bound, and every
// coded format in one mode on the public matrices.
#pragma once

#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "formats/values/values.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace spmvc::test::mixed {

// Bytes copied to device memory for the test's lifetime.
class DeviceBytes {
 public:
  explicit DeviceBytes(const std::vector<unsigned char>& bytes) {
    REQUIRE(cudaMalloc(&ptr_, std::max<std::size_t>(bytes.size(), 8)) == cudaSuccess);
    REQUIRE(cudaMemcpy(ptr_, bytes.data(), bytes.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceBytes() { (void)cudaFree(ptr_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  const void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

inline const char* const kCodedFormats[] = {"csr",     "ell",     "hyb",       "bro_ell",
                                            "bro_coo", "bro_hyb", "csr_stream"};

// y = A x on the device, x the precision's test vector, y poisoned with NaN first.
inline std::vector<double> product(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows), std::nan(""));
  op.apply_host(x, y);
  return y;
}

// Checks op's y against the fp64 reference within the plan's bound; returns y.
inline std::vector<double> check_within_bound(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  const std::vector<double> y = product(a, op);
  REQUIRE(op.plan().rounding.has_value());
  const compiler::MixedError err = compiler::mixed_error(a, x, y, ref);
  const double bound = compiler::mixed_error_tolerance(op.plan());
  CAPTURE(err.componentwise);
  CAPTURE(bound);
  CHECK(err.componentwise <= bound);
  return y;
}

inline Options mixed_options(const char* format, Precision p, MixedPrecision mode) {
  Options o;
  o.format = format;
  o.precision = p;
  o.mixed_precision = mode;
  o.disk_cache = false;
  // No value tables: every format stores the values rounded (or exactly where the narrower type
  // holds them all), so the rounded kernels run on every matrix.
  o.value_coding = false;
  return o;
}

// Every coded format in `mode` on every public matrix of >= 10k nonzeros.
inline void public_matrices_in(Precision p, MixedPrecision mode) {
  const auto matrices = public_matrices(10000);
  if (matrices.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  int tested = 0, compared = 0;
  for (const auto& [name, path] : matrices) {
    const CsrMatrix a = read_matrix_market(path);
    for (const char* format : kCodedFormats) {
      CAPTURE(name);
      CAPTURE(format);
      CAPTURE(to_string(p));
      std::optional<Operator> op;
      try {
        op.emplace(compile(a, mixed_options(format, p, mode)));
      } catch (const InputError& e) {
        MESSAGE(name << " " << format << ": " << e.detail());  // cannot implement the matrix
        continue;
      }
      const Plan& plan = op->plan();
      CAPTURE(describe(plan.params));
      const std::vector<double> y = check_within_bound(a, *op);
      ++tested;
      const int coding = formats::value_coding_of(plan.params);
      if (!formats::is_rounded_coding(coding) || plan.rounding->value_error == 0) continue;
      CHECK(op->source().kernel_name.find(formats::value_coding_tag(coding)) != std::string::npos);
      // The same parameters with full-precision values: a different y, bit for bit.
      Options full = forced(p, formats::with_value_coding(plan.params, formats::kValuesPlain));
      const Operator plain = compile(a, full);
      const std::vector<double> y_full = product(a, plain);
      CHECK(std::memcmp(y.data(), y_full.data(), y.size() * sizeof(double)) != 0);
      ++compared;
    }
  }
  MESSAGE("mixed " << to_string(mode) << ": " << tested << " kernels within the bound, " << compared
                   << " differing from full precision");
  CHECK(tested >= 7 * 20);
  CHECK(compared >= 20);
}

}  // namespace spmvc::test::mixed

// Opt-in mixed precision on the device (Options::mixed_precision): every format with a value
// coding, in both modes (fp64 operators storing fp32 values, fp32 operators storing bf16), on
// every public matrix with at least 10k nonzeros: y within the bound the plan states against the
// fp64 host reference, and, where the values are inexact in the narrower type, not bitwise the
// full-precision plan's y (so an ignored option fails). update_values on a rounded plan gives
// bitwise what a fresh compile of the new values gives (the GPU's rounding is the encoder's).
// Skipped without a GPU.
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
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;
using test::have_device;

namespace {

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

const char* const kCodedFormats[] = {"csr",     "ell",     "hyb",       "bro_ell",
                                     "bro_coo", "bro_hyb", "csr_stream"};

// y = A x on the device, x the precision's test vector, y poisoned with NaN first.
std::vector<double> product(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows), std::nan(""));
  op.apply_host(x, y);
  return y;
}

// Checks op's y against the fp64 reference within the plan's bound; returns y.
std::vector<double> check_within_bound(const CsrMatrix& a, const Operator& op) {
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

Options mixed_options(const char* format, Precision p, MixedPrecision mode) {
  Options o;
  o.format = format;
  o.precision = p;
  o.mixed_precision = mode;
  o.disk_cache = false;
  return o;
}

// Every coded format in `mode` on every public matrix of >= 10k nonzeros.
void public_matrices_in(Precision p, MixedPrecision mode) {
  const auto matrices = test::public_matrices(10000);
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
      Options full =
          test::forced(p, formats::with_value_coding(plan.params, formats::kValuesPlain));
      const Operator plain = compile(a, full);
      const std::vector<double> y_full = product(a, plain);
      CHECK(std::memcmp(y.data(), y_full.data(), y.size() * sizeof(double)) != 0);
      ++compared;
    }
  }
  MESSAGE("mixed " << to_string(mode) << ": " << tested << " kernels within the bound, " << compared
                   << " differing from full precision");
  CHECK(tested >= 7 * 20);
  CHECK(compared >= 7 * 5);
}

}  // namespace

TEST_CASE("gpu: mixed precision f32, every coded format on the public matrices") {
  if (!have_device()) return;
  public_matrices_in(Precision::f64, MixedPrecision::f32);
}

TEST_CASE("gpu: mixed precision bf16, every coded format on the public matrices") {
  if (!have_device()) return;
  public_matrices_in(Precision::f32, MixedPrecision::bf16);
}

TEST_CASE("gpu: mixed precision update_values rounds as the encoder does") {
  if (!have_device()) return;
  // Inexact values, then new inexact values (each times 1 + (k mod 3) / 4 and shifted).
  CsrMatrix a = gen::random_uniform(20000, 20000, 12, 3);
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1.0 + std::sin(0.37 * static_cast<double>(k)) / 3;
  CsrMatrix b = a;
  for (std::size_t k = 0; k < b.values.size(); ++k)
    b.values[k] = a.values[k] * (1.0 + static_cast<double>(k % 3) / 4) + 0.01;
  int tested = 0;
  for (const char* format : kCodedFormats) {
    for (const auto& [p, mode] : {std::pair{Precision::f64, MixedPrecision::f32},
                                  std::pair{Precision::f32, MixedPrecision::bf16}}) {
      CAPTURE(format);
      CAPTURE(to_string(p));
      std::optional<Operator> op;
      try {
        op.emplace(compile(a, mixed_options(format, p, mode)));
      } catch (const InputError&) {
        continue;
      }
      const FormatParams params = op->plan().params;
      CAPTURE(describe(params));
      REQUIRE(formats::is_rounded_coding(formats::value_coding_of(params)));
      // From host values: no re-plan, and what a fresh compile of b gives.
      const ValueUpdate u = op->update_values(b.values);
      CHECK_FALSE(u.replanned);
      Options again = test::forced(p, params);
      again.mixed_precision = mode;
      const Operator fresh = compile(b, again);
      const std::vector<double> want = product(b, fresh);
      const std::vector<double> got = product(b, *op);
      const bool atomics = std::string(format) == "hyb" || std::string(format) == "bro_coo" ||
                           std::string(format) == "bro_hyb";
      if (atomics) {
        // Atomics may add in another order: within the bound, as the fresh compile is.
        check_within_bound(b, *op);
      } else {
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0);
      }
      // From device values (the precision's type): the GPU's rounding gather.
      const std::size_t vb = p == Precision::f64 ? 8 : 4;
      std::vector<unsigned char> bytes(b.values.size() * vb);
      if (p == Precision::f64) {
        std::memcpy(bytes.data(), b.values.data(), bytes.size());
      } else {
        const std::vector<float> f(b.values.begin(), b.values.end());
        std::memcpy(bytes.data(), f.data(), bytes.size());
      }
      op->update_values(a.values);  // back to the old values first
      const DeviceBytes d(bytes);
      CHECK_FALSE(op->update_values(d.get()).replanned);
      const std::vector<double> from_device = product(b, *op);
      if (atomics) {
        check_within_bound(b, *op);
      } else {
        CHECK(std::memcmp(from_device.data(), want.data(), want.size() * sizeof(double)) == 0);
      }
      ++tested;
    }
  }
  CHECK(tested >= 12);
}

// The argument slots of one kernel launch, bound by each parameter's kind (spmvc::KernelParam):
// what apply() and the SpMM launch pass to the driver. Everything lives in this object, on the
// caller's stack: no allocation on the hot path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spmvc/kernel.hpp"

namespace spmvc::runtime {

class LaunchArgs {
 public:
  /// Kernel parameters are few (csr has 8); a unit with more is refused when it is built.
  static constexpr std::size_t kMaxParams = 24;

  /// The scalars every launch of one multiply shares: the matrix's sizes, and alpha and beta in
  /// the accumulation type (double where `acc64`, else float).
  LaunchArgs(std::int64_t rows, std::int64_t cols, bool acc64, double alpha, double beta)
      : rows_(rows),
        cols_(cols),
        alpha64_(alpha),
        beta64_(beta),
        alpha32_(static_cast<float>(alpha)),
        beta32_(static_cast<float>(beta)),
        acc64_(acc64) {}
  // The slots point into this object.
  LaunchArgs(const LaunchArgs&) = delete;
  LaunchArgs& operator=(const LaunchArgs&) = delete;

  /// Binds the slots of a launch whose parameters are `params`: array parameter i to
  /// array_args[i] (device pointers resolved when the unit was built), x and y to the vectors.
  /// Returns what the driver's launch takes; valid until the next bind.
  void** bind(const std::vector<KernelParam>& params, const std::vector<const void*>& array_args,
              const void* x, void* y) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      switch (params[i].kind) {
        case KernelParam::Kind::rows:
          args_[i] = &rows_;
          continue;
        case KernelParam::Kind::cols:
          args_[i] = &cols_;
          continue;
        case KernelParam::Kind::alpha:
          args_[i] = acc64_ ? static_cast<void*>(&alpha64_) : static_cast<void*>(&alpha32_);
          continue;
        case KernelParam::Kind::beta:
          args_[i] = acc64_ ? static_cast<void*>(&beta64_) : static_cast<void*>(&beta32_);
          continue;
        case KernelParam::Kind::array:
          pointers_[i] = array_args[i];
          break;
        case KernelParam::Kind::x:
          pointers_[i] = x;
          break;
        case KernelParam::Kind::y:
          pointers_[i] = y;
          break;
      }
      args_[i] = &pointers_[i];
    }
    return args_.data();
  }

 private:
  long long rows_, cols_;  // the kernels take 64-bit sizes
  double alpha64_, beta64_;
  float alpha32_, beta32_;
  bool acc64_;
  std::array<const void*, kMaxParams> pointers_{};
  std::array<void*, kMaxParams> args_{};
};

}  // namespace spmvc::runtime

// Value coding: what the `values` parameter of csr, csr_stream, ell, hyb, bro_ell, bro_coo and
// bro_hyb means. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/values.hpp for the parameter headers that refer to it; the coding itself is
// compiler/formats/values/values.hpp.
#pragma once

namespace spmvc::formats {

/// How a format stores its nonzeros' values (the int `values` field of its parameters).
enum ValueCoding : int {
  kValuesPlain = 0,    ///< one Value per stored nonzero
  kValuesUnit = 1,     ///< every value is 1: no array; the kernel multiplies by 1
  kValuesTable8 = 2,   ///< an 8-bit index per stored nonzero into a table of <= 256 values
  kValuesTable16 = 3,  ///< a 16-bit index into a table of <= 65536 values
  kValuesF32 = 4,      ///< fp64 values stored as fp32, each exactly (fp64 precision only)
  /// Mixed precision, only when the caller asks (Options::mixed_precision): fp64 values stored
  /// as fp32, each rounded to nearest; the products and sums stay fp64 (fp64 precision only).
  kValuesF32Rounded = 5,
  /// Mixed precision, only when the caller asks: fp32 values stored as bf16 words, each rounded
  /// to nearest even, widened to fp32 for the products (f32 and f32acc64 precisions).
  kValuesBf16 = 6,
};

}  // namespace spmvc::formats

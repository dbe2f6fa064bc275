// Value coding: how a format stores its nonzeros' values. Most formats keep one Value (8 or 4
// bytes) per stored nonzero; a matrix with few distinct values can keep a small index into a
// table of them instead, and a pattern matrix (every value 1) needs no values at all. On a
// bandwidth-bound kernel that is the largest part of the bytes a multiply moves: csr in fp64
// reads 12 bytes a nonzero, of which 8 are the value. An fp64 matrix whose values are all exact
// in fp32 (integer weights below 2^24, values read from single-precision data) keeps them as
// fp32: half the bytes, and every product the same as with the fp64 array.
//
// A format that supports coding has an int `values` parameter (ValueCoding, defined in
// formats/values/params.hpp) and
//   - propose(): adds the coded variant of its candidates when the profile allows one;
//   - cost(): counts value_code_bytes() a stored value plus value_table_bytes();
//   - encode(): builds its plain Value array, then code_values() rewrites it;
//   - reference_spmv(): reads stored_values() instead of the Value array;
//   - generate(): passes the values through value_args() (its launch parameters declare them).
// The kernel templates read value k as load_ro(values + k) whatever the coding
// (templates/common.cuh: UnitValues, TableValues), and mask padding slots by their indices, so a
// padding slot's code may name any table entry.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/params/values.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats {

/// Distinct values a table of `coding` holds at most.
std::int64_t value_table_capacity(int coding);
/// Bytes one stored value takes under `coding` (the table not included).
double value_code_bytes(int coding, Precision precision);
/// Bytes of the table the kernel reads (every entry once, at most).
double value_table_bytes(int coding, const Profile& profile, Precision precision);
/// Why `coding` cannot store this matrix's values in `precision`, or nullopt when it can.
std::optional<std::string> value_coding_problem(const Profile& profile, int coding,
                                                Precision precision);
/// The most compact coding the profile allows: unit, then 8-bit, then 16-bit tables, then fp32
/// storage of fp64 values, else plain.
int best_value_coding(const Profile& profile, Precision precision);
/// The value coding of `params` (kValuesPlain for a format that has none).
int value_coding_of(const FormatParams& params);
/// `params` with its value coding set to `coding`; InternalError for a format that has none.
FormatParams with_value_coding(FormatParams params, int coding);

/// Lane efficiency a coding leaves (1 for plain and unit): a table read per value adds to each
/// lane's dependent work, more when the table outgrows L1.
double value_coding_efficiency(int coding, const Profile& profile, Precision precision);
/// Appends the coded twin of every applicable candidate in `candidates` (their `values` set to
/// best_value_coding(profile, precision)), when the profile allows a coding; when that coding
/// is a 16-bit table and fp32 storage also applies, a second twin with fp32 values (a table the
/// size of L2 can cost more in lookups than the two bytes it saves).
void add_value_coded(std::vector<Candidate>& candidates, const Profile& profile,
                     Precision precision);
/// Whether a format's parameters have a value coding (a `values` field).
bool has_value_coding(const FormatParams& params);
/// The rounded coding of mixed precision `mode` (kValuesF32Rounded, kValuesBf16).
int mixed_value_coding(MixedPrecision mode);
/// Why `mode` does not apply to an operator of `precision`, or nullopt when it does.
std::optional<std::string> mixed_precision_problem(MixedPrecision mode, Precision precision);
/// Whether `coding` stores rounded values (mixed precision).
bool is_rounded_coding(int coding);
/// The coding a candidate of coding `coding` takes under mixed precision `mode`: exact codings
/// of no more bytes stay (all ones, an 8-bit table, fp32 values exact, and a 16-bit table,
/// whose lookups the planner weighs against the rounded twin of the plain candidate); plain
/// values become the rounded coding, or exact fp32 storage where fp32 holds every value.
int mixed_coding_for(int coding, MixedPrecision mode, const Profile& profile, Precision precision);
/// Rewrites each representable candidate with a value coding as mixed_coding_for says (one left
/// where two become the same), rejecting those whose values overflow the rounded type.
/// Candidates of formats without a value coding are left for the planner to reject.
void apply_mixed_precision(std::vector<Candidate>& candidates, const Profile& profile,
                           Precision precision, MixedPrecision mode);
/// The rounding a plan of value coding `coding` under mixed precision `mode` brings: the
/// values' largest relative error (0 for an exact coding) and the bound on y's error for the
/// profile's longest row, in `precision`'s arithmetic.
ValueRounding value_rounding(const Profile& profile, MixedPrecision mode, Precision precision,
                             int coding);
/// Short name for kernel names and reports: "", "_ones", "_vt8", "_vt16", "_f32v", "_f32r",
/// "_bf16".
std::string value_coding_tag(int coding);
/// One line on what `coding` does, for candidate reasons.
std::string value_coding_summary(int coding);

/// Rewrites the Value array `name` of `arrays` (f64 or f32) as `coding`: unit removes it (after
/// checking that every value of `a` is 1), a table replaces it by a u8/u16 code array of the
/// same name followed by `name + "_table"`, fp32 storage replaces an f64 array by an f32 one of
/// the same name. InputError when the values do not fit the coding.
void code_values(std::vector<EncodedArray>& arrays, const std::string& name, int coding,
                 const CsrMatrix& a);
/// Appends what value_array(name, precision, src, count) followed by code_values(arrays, name,
/// coding, a) would leave, without building the plain array when the values are coded: the
/// arrays of a format whose stored values are `src` in order, zero-padded to `count`.
void append_values(std::vector<EncodedArray>& arrays, const std::string& name, Precision precision,
                   std::span<const double> src, std::size_t count, int coding, const CsrMatrix& a);

/// The `count` stored values of array `name` in `e`, decoded from `coding`, as Value.
template <typename Value>
std::vector<Value> stored_values(const Encoded& e, const std::string& name, int coding,
                                 std::int64_t count);

/// Element type of `precision`'s stored values (f64 or f32): plain value arrays and tables.
ElemType value_elem_type(Precision precision);
/// Element type of the per-nonzero array `coding` stores at `precision` (for a kernel declared
/// before its arrays exist, as the device build's is).
ElemType value_code_type(int coding, Precision precision);

/// How a generated entry point passes the values of array `array` under the parameter name
/// `name`: `pass` the argument expression handed to the template, `params` the launch
/// parameters, in order (the table array is `array + "_table"`, its parameter `name + "_table"`);
/// codegen::entry_signature declares them from `params`.
struct ValueArgs {
  std::string pass;
  std::vector<KernelParam> params;
};
ValueArgs value_args(int coding, const std::string& name, const std::string& array);
inline ValueArgs value_args(int coding, const std::string& name) {
  return value_args(coding, name, name);
}

}  // namespace spmvc::formats

// New values for the same pattern (Operator::update_values): where each stored value of a plan's
// encoding comes from in the caller's CSR order, so that new values are re-encoded by a gather
// instead of a rebuild, and whether they still fit the plan's value coding.
//
// The gather is found by encoding a trace: the caller's pattern with each nonzero's value set to
// its own CSR index (plus one), through the build's ordering and the plan's encoder with plain
// values. Every stored value slot then holds the index of the nonzero it came from, or 0 for a
// padding slot, whatever the format does to the order (slices, sorting, blocks, splits into two
// parts). fp64 holds every index below 2^53 exactly; an fp32 encoding is traced twice, with the
// low and the high 23 bits of the index.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/options.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc::compiler {

/// One stored value array of an encoding and the caller's nonzero behind each slot.
struct ValueGather {
  /// The array's name in the Encoded (a value-coded plan stores its codes under the same name).
  std::string array;
  /// Per slot: the index of the caller's nonzero (CSR order) it holds, or -1 for padding.
  std::vector<std::int64_t> source;
  /// True when slot k holds nonzero k for every k and there is no padding past nnz.
  bool identity = false;
};

/// The gathers that rebuild the value arrays of `plan` (of the caller's matrix `a`, whose values
/// are not read (they may be empty), through the
/// build's reordering `map`, nullptr when not reordered) from new values in `a`'s CSR order.
/// Empty for a format that stores no values.
std::vector<ValueGather> value_gathers(const CsrMatrix& a, const RowColumnMap* map,
                                       const Plan& plan);

/// `options` for planning again for new values that did not fit the plan: forced parameters
/// (Options::params or Options::csr) keep everything but a value coding, which becomes plain (the
/// planner is free to code the new values only when nothing was forced), and forced dia
/// parameters store every diagonal rather than a symmetric half. `note` gets what changed ("" when
/// nothing did).
Options replan_options(Options options, std::string* note);

/// The plain Value array (f64 or f32 by `precision`) `g` makes of `values` (CSR order): what the
/// plan's encoder writes for them with plain values, padding slots 0.
EncodedArray gather_values(const ValueGather& g, std::span<const double> values,
                           Precision precision);

/// Why `values` (CSR order) cannot be stored under value coding `coding` at `precision` by a
/// gather into the existing arrays (a value other than 1 under unit coding, more distinct values
/// than the table holds, a value fp32 does not hold exactly), or nullopt when they can.
std::optional<std::string> value_update_problem(int coding, std::span<const double> values,
                                                Precision precision);

/// Whether `plan` stores one entry for each pair a(i,j), a(j,i) of a symmetric matrix (dia's
/// and bcsr's symmetric forms): new values must keep the matrix symmetric to be gathered into it.
bool stores_symmetric_half(const Plan& plan);

/// Why `values` (CSR order, over `a`'s pattern, which is square with sorted columns) do not
/// make a symmetric matrix, naming the first entry that differs from its mirror; nullopt when
/// they do.
std::optional<std::string> symmetry_problem(const CsrMatrix& a, std::span<const double> values);

/// Table coding of values in CSR order: a code per nonzero (u8 or u16 by `coding`) and the table
/// of distinct values in the order they first occur (at `precision`'s type), at least one entry.
/// InputError when they do not fit (value_update_problem).
struct TableCodes {
  EncodedArray codes;
  EncodedArray table;
};
TableCodes table_codes(int coding, std::span<const double> values, Precision precision);

/// The unit of the gather kernels (templates/value_gather.cuh): entry points
/// spmvc_gather_<index>_<in>_<out> (index i32 or i64; in and out f64, f32, u8 or u16, as
/// value_gather_entry names them), spmvc_round_<index>_<f64_f32|f32_u16> (value_round_entry)
/// and spmvc_check_ones_<f64|f32>.
KernelSource value_gather_source();
/// The entry point that gathers `in` into `out` through `index`-typed sources.
std::string value_gather_entry(ElemType index, ElemType in, ElemType out);
/// The entry point that gathers `in` into `out` rounding each value (mixed precision: f64 into
/// f32, f32 into u16 bf16 words), flagging a finite value that rounds to an infinity.
std::string value_round_entry(ElemType index, ElemType in, ElemType out);
/// The entry point that flags values other than 1 (f64 or f32).
std::string check_ones_entry(ElemType in);

}  // namespace spmvc::compiler

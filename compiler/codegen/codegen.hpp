// Codegen: a Plan and its encoded matrix -> a small, deterministic CUDA translation unit.
//
// The unit is a banner (plan and profile summary), the template includes, the chosen constants
// one per line with a comment, static_asserts that repeat the host's assumptions, and extern "C"
// entry points that call the template, each declared by entry_signature from the parameter list
// the runtime binds. The same matrix and options always give byte-identical
// source: no timestamps, addresses or hash-order iteration.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc::codegen {

/// CUDA spelling of the stored value type ("double" or "float").
std::string value_type(Precision p);
/// CUDA spelling of the accumulation type.
std::string accumulate_type(Precision p);
/// Tag used in kernel names: the precision's own name ("f64", "f32" or "f32acc64").
std::string precision_tag(Precision p);
/// NVRTC options every generated unit is compiled with (the architecture is added by the runtime).
std::vector<std::string> base_options();
/// The embedded templates `names` (e.g. {"spmvc/csr.cuh"}) plus everything they include.
std::vector<std::pair<std::string, std::string>> template_headers(
    const std::vector<std::string>& names);
/// The start of a unit that builds on the GPU (device_csr, device_ell, device_bro, device_block,
/// device_values): entry point `entry`, file spmvc_<name>.cu including the template
/// spmvc/<name>.cuh, `block` threads, and a first comment line saying what it `builds`; the
/// caller appends its static_asserts and entry points to `source`.
KernelSource device_unit(std::string entry, const std::string& name, int block,
                         std::string_view builds);
/// The comment block at the top of every generated unit.
std::string banner(const Plan& plan, const Profile& profile);

/// The compile-time constants of a unit, one per line with its comment aligned, inside an
/// anonymous namespace: {declaration, comment} pairs.
std::string constants_block(const std::vector<std::pair<std::string, std::string>>& constants);

/// The CUDA spelling of an element type ("int", "unsigned char", "double", ...).
std::string c_type(ElemType type);

/// How an entry point declares an array parameter.
struct ArrayDecl {
  ElemType type = ElemType::i32;
  bool written = false;  ///< the kernels write it (scratch): a pointer to non-const
};

/// The `extern "C"` entry point `entry` declared from its launch parameters, up to and including
/// the opening brace of its body: one C parameter per KernelParam, in the order the runtime binds
/// them, so the signature and the binding have one source. rows and cols are `long long`; an
/// array is a `__restrict__` pointer to the element type `array(name)` gives (const unless the
/// kernels write it), named after the array less `array_prefix` (a hybrid's part prefix); x and
/// y point to `precision`'s value type, alpha and beta are its accumulation type.
/// `launch_bounds` is the __launch_bounds__ argument. Parameters fill lines of up to 100
/// columns, continuation lines indented by four.
std::string entry_signature(const std::string& entry, const std::vector<KernelParam>& params,
                            Precision precision,
                            const std::function<ArrayDecl(const std::string&)>& array,
                            std::string_view launch_bounds, std::string_view array_prefix = "");
/// entry_signature with each array's element type from `encoded` (written when scratch).
std::string entry_signature(const std::string& entry, const std::vector<KernelParam>& params,
                            const Encoded& encoded, std::string_view launch_bounds,
                            std::string_view array_prefix = "");

/// Chains a unit's launches (KernelSource::chained): each entry but the last starts with
/// spmvc::allow_next_launch() and each but the first with spmvc::wait_for_previous_launch()
/// (templates/common.cuh), so that the runtime may launch each before the previous one ends.
/// Idempotent: lines from an earlier call are replaced. A unit with one launch is left as it is.
void chain_launches(KernelSource& source);

/// The kernel translation unit for `plan` over `encoded`, its launches chained.
KernelSource generate(const Plan& plan, const Encoded& encoded, const Profile& profile);

/// How a reordered matrix maps back to the caller's numbering (spmvc/reorder.hpp).
using RowColumnMap = spmvc::RowColumnMap;

/// Where `map` renumbered the columns and names hub columns (RowColumnMap::hub_columns), and the
/// format of `encoded` stores plain column indices (FormatUnit::plain_column_arrays): renumbers
/// those arrays so that hub j (the j-th column of the new order) is column ncols + j and every
/// other column is the caller's own, and adds the workspace "x_hub" (one element a hub). The
/// kernels generated then read x in place and only the hubs are gathered (attach_reordering).
/// Does nothing otherwise, or where ncols + hubs would pass a 32-bit index. Call it between
/// encode and generate.
void split_x_reads(Encoded& encoded, const RowColumnMap& map);

/// Whether split_x_reads split `encoded`'s reads of x (it holds "x_hub").
bool splits_x(const Encoded& encoded);

/// How a format's entry points take x: the parameters, the expression passed to the template
/// (`x` itself or, where the reads are split, spmvc::SplitX{x, x_hub, ncols}), and what the
/// entry points that read x add to their names ("_xhub" where split, so that a profiler trace or
/// a cache listing tells the unit from the one that reads x whole; "" otherwise).
struct XArgs {
  std::string pass;
  std::vector<KernelParam> params;
  std::string name_suffix;
};
XArgs x_args(bool split);

/// Makes `source` (generated for a reordered matrix) take x and give y in the caller's order:
/// defines SPMVC_ROW_MAP so every y write goes through the row map (array "row_map", appended to
/// `encoded`; the runtime points spmvc_row_map at it) unless the rows kept their order (an
/// identity row map: y written in place), and, when columns were renumbered, adds a
/// pre-launch gathering x into a scratch array "x_perm" that every launch then reads for x
/// (chained to them); where split_x_reads split the reads, the pre-launch gathers the hubs
/// alone into "x_hub". `read`, where given, lists the columns (of the new order, ascending) that
/// the stored entries read (spmvc::columns_read of the reordered matrix): where they are at most
/// half of x (spmvc::columns_gathered), only they are gathered (arrays "col_map" and "col_slot",
/// one element a read column) and the rest of x_perm is never written or read. A map whose read
/// columns lead its order (RowColumnMap::packed_columns) gathers those alone into x_perm's first
/// elements, with "col_map" of one element a read column and no "col_slot"; `read` is not used.
void attach_reordering(KernelSource& source, Encoded& encoded, const RowColumnMap& map,
                       std::span<const std::int32_t> read = {});

}  // namespace spmvc::codegen

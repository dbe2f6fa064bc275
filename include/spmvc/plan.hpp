// What the planner decided and why: the format, its parameters, and every alternative considered.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace spmvc {

/// Value precision. `f32_acc64` stores values and vectors in fp32 and accumulates in fp64.
enum class Precision { f64, f32, f32_acc64 };
std::string_view to_string(Precision p);
/// Parses "f64", "f32" or "f32acc64"; InputError otherwise.
Precision parse_precision(std::string_view text);
/// Bytes of one stored value (8 or 4).
int value_bytes(Precision p);

// Format parameters. Each format has one struct with named fields and a `fields` function that
// lists them (name, short label, member) in a fixed order: describe(), to_json(), the CLI's
// `--param name=value` and the golden banners all read parameters through it. Integer and bool
// fields only.

/// Parameters of the `csr` format (Baskaran–Bordawekar): T threads cooperate on each row,
/// reading its nonzeros cyclically (V at a time) from an aligned start, then reduce with warp
/// shuffles.
struct CsrParams {
  static constexpr std::string_view kFormat = "csr";
  int threads_per_row = 1;  ///< T: 1, 2, 4, 8, 16 or 32
  int vector_width = 1;     ///< V: nonzeros each lane loads with one vector load (1, 2 or 4)
  int block_size = 256;     ///< threads per block
  int unroll = 1;           ///< nonzeros each thread loads before it accumulates (1, 2 or 4)
  bool aligned = true;      ///< start each row's sweep at the T-aligned offset below its start
  bool offsets64 = false;   ///< 64-bit row offsets (needed when nnz >= 2^31)
  static void fields(auto& p, auto&& f) {
    f("threads_per_row", "T", p.threads_per_row);
    f("vector_width", "V", p.vector_width);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("aligned", "aligned", p.aligned);
    f("offsets64", "o64", p.offsets64);
  }
};

/// `ell`: column-major ELLPACK padded to the longest row; with row_lengths, ELL-R (each row's
/// length stored, padding never read).
struct EllParams {
  static constexpr std::string_view kFormat = "ell";
  int width = 0;            ///< K: stored entries per row (the longest row)
  int threads_per_row = 1;  ///< lanes per row
  int block_size = 256;
  int unroll = 1;
  bool row_lengths = true;  ///< ELL-R
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("row_lengths", "R", p.row_lengths);
  }
};

/// `sell`: SELL-C-sigma; slices of C rows, rows sorted by length within windows of sigma rows,
/// each slice padded to its own longest row.
struct SellParams {
  static constexpr std::string_view kFormat = "sell";
  int slice_height = 32;  ///< C
  int sigma = 1;          ///< sorting window in rows (1: no sorting)
  int threads_per_row = 1;
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("slice_height", "C", p.slice_height);
    f("sigma", "s", p.sigma);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
  }
};

/// `hyb`: ELL part of width K plus the remainder in COO (Bell–Garland split).
struct HybParams {
  static constexpr std::string_view kFormat = "hyb";
  int width = 0;  ///< K of the ELL part
  int threads_per_row = 1;
  int block_size = 256;
  int coo_interval = 256;  ///< COO entries per warp in the segmented reduction
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("coo_interval", "I", p.coo_interval);
  }
};

/// `bro_ell`: BRO-ELL (Tang et al., SC13): delta-coded column indices bit-packed per slice of
/// h rows, one bit width per column position per slice, streams multiplexed in symbols.
struct BroEllParams {
  static constexpr std::string_view kFormat = "bro_ell";
  int slice_height = 32;    ///< h
  int symbol_bits = 32;     ///< 32 or 64
  int threads_per_row = 1;  ///< 1: the paper's kernel
  int block_size = 256;
  int unroll = 1;
  bool prefetch = false;         ///< load the next symbol before decoding the current one
  bool constant_tables = false;  ///< bit-width tables in constant memory
  static void fields(auto& p, auto&& f) {
    f("slice_height", "h", p.slice_height);
    f("symbol_bits", "sym", p.symbol_bits);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("prefetch", "pf", p.prefetch);
    f("constant_tables", "const", p.constant_tables);
  }
};

/// `bro_coo`: BRO-COO: delta-coded, bit-packed row indices in intervals, one warp per interval.
struct BroCooParams {
  static constexpr std::string_view kFormat = "bro_coo";
  int interval = 1024;  ///< entries per interval (one warp)
  int symbol_bits = 32;
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("interval", "I", p.interval);
    f("symbol_bits", "sym", p.symbol_bits);
    f("block_size", "b", p.block_size);
  }
};

/// `bro_hyb`: the hyb split, each part in its BRO form.
struct BroHybParams {
  static constexpr std::string_view kFormat = "bro_hyb";
  int width = 0;  ///< K of the ELL part
  int slice_height = 32;
  int symbol_bits = 32;
  int threads_per_row = 1;
  int block_size = 256;
  int interval = 1024;
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("slice_height", "h", p.slice_height);
    f("symbol_bits", "sym", p.symbol_bits);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("interval", "I", p.interval);
  }
};

/// `blocked`: Baskaran–Bordawekar's block storage (section 4.2): constant br x bc blocks whose
/// start rows are multiples of br and start columns multiples of A; each row of a block stores
/// the prefix up to its last nonzero, padded to a multiple of A; x of a block is staged in shared
/// memory once and reused by the block's rows. One warp per block row.
struct BlockedParams {
  static constexpr std::string_view kFormat = "blocked";
  int block_rows = 4;   ///< br: 1..8
  int block_cols = 64;  ///< bc: a multiple of col_align, 16..256 (the paper: a multiple of 16)
  int col_align = 4;    ///< A: start-column alignment and row padding (paper: 16, half a warp)
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("block_rows", "br", p.block_rows);
    f("block_cols", "bc", p.block_cols);
    f("col_align", "A", p.col_align);
    f("block_size", "b", p.block_size);
  }
};

/// `bellpack`: r x c dense blocks, block rows sorted by block count and sliced ELL-style (Choi).
/// One thread per matrix row; y written through the sort's permutation.
struct BellpackParams {
  static constexpr std::string_view kFormat = "bellpack";
  int block_rows = 3;     ///< r: 1..8
  int block_cols = 3;     ///< c: 1..8
  int slice_height = 32;  ///< C: block rows per slice (each slice padded to its widest)
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("block_rows", "r", p.block_rows);
    f("block_cols", "c", p.block_cols);
    f("slice_height", "C", p.slice_height);
    f("block_size", "b", p.block_size);
  }
};

/// `bcsr`: plain block CSR with aligned r x c dense blocks; T lanes share a block row.
struct BcsrParams {
  static constexpr std::string_view kFormat = "bcsr";
  int block_rows = 3;       ///< r: 1..8
  int block_cols = 3;       ///< c: 1..8
  int threads_per_row = 1;  ///< T: lanes per block row (power of two, 1..32)
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("block_rows", "r", p.block_rows);
    f("block_cols", "c", p.block_cols);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
  }
};

/// `cci`: compressed column indices (opcode + immediate codes, table-driven decode).
struct CciParams {
  static constexpr std::string_view kFormat = "cci";
  int threads_per_row = 4;
  int block_size = 256;
  bool paper_table = false;  ///< the paper's fixed opcode classes instead of per-matrix ones
  static void fields(auto& p, auto&& f) {
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("paper_table", "paper", p.paper_table);
  }
};

/// `amb`: adaptive multi-level blocking (column segments, SELL-C-sigma per segment, column
/// blocking).
struct AmbParams {
  static constexpr std::string_view kFormat = "amb";
  int segment_bits = 16;  ///< column segments of width 2^segment_bits
  int slice_height = 32;  ///< C
  int sigma = 32768;
  int column_block = 1;  ///< b: contiguous columns per block (1..10)
  int block_size = 256;
  bool deterministic = false;  ///< bit-identical results run to run (no atomics)
  static void fields(auto& p, auto&& f) {
    f("segment_bits", "seg", p.segment_bits);
    f("slice_height", "C", p.slice_height);
    f("sigma", "s", p.sigma);
    f("column_block", "cb", p.column_block);
    f("block_size", "b", p.block_size);
    f("deterministic", "det", p.deterministic);
  }
};

/// One alternative per format.
using FormatParams =
    std::variant<CsrParams, EllParams, SellParams, HybParams, BroEllParams, BroCooParams,
                 BroHybParams, BlockedParams, BellpackParams, BcsrParams, CciParams, AmbParams>;

/// The format a parameter set belongs to ("csr", "ell", ...).
std::string_view format_of(const FormatParams& params);
/// Default parameters of `format` (InputError for an unknown name).
FormatParams default_params(std::string_view format);
/// Sets fields of `params` from "name=value,name=value" (names or short labels; bools take
/// 0/1/true/false). InputError naming the field when a name or value is wrong.
void set_params(FormatParams& params, std::string_view assignments);

/// One plan the planner considered, ranked by predicted time.
struct Candidate {
  std::string format;
  FormatParams params;
  std::string label;  ///< short parameter summary, e.g. "T=8 b=256 u=2"
  bool applicable = true;
  std::string reason;          ///< why rejected, or what recommends it
  double predicted_bytes = 0;  ///< compulsory bytes moved per multiply
  double predicted_seconds = 0;
};

struct Plan {
  std::string format;
  FormatParams params;
  Precision precision = Precision::f64;
  std::string reorder = "none";
  double predicted_bytes = 0;
  double predicted_seconds = 0;
  std::string why;                    ///< the reason this candidate won
  std::vector<Candidate> candidates;  ///< everything considered, best first; rejected last
};

std::string to_json(const Plan& plan);
std::string to_report(const Plan& plan);
/// Short parameter summary of `params`, as in Candidate::label.
std::string describe(const FormatParams& params);

}  // namespace spmvc

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
  /// Value coding (compiler/formats/values/values.hpp): 0 plain, 1 every value 1 (no array),
  /// 2 8-bit and 3 16-bit indices into a table of the distinct values.
  int values = 0;
  static void fields(auto& p, auto&& f) {
    f("threads_per_row", "T", p.threads_per_row);
    f("vector_width", "V", p.vector_width);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("aligned", "aligned", p.aligned);
    f("offsets64", "o64", p.offsets64);
    f("values", "val", p.values);
  }
};

/// `csr_stream`: CSR with row blocks balanced by nonzeros (templates/csr_stream.cuh): a block
/// streams the products of up to `tile` nonzeros of consecutive rows into shared memory with
/// coalesced loads, then reduces each row there; a longer row gets a block of its own.
struct CsrStreamParams {
  static constexpr std::string_view kFormat = "csr_stream";
  int block_size = 256;    ///< threads per block (a multiple of 32 in 64..1024)
  int tile = 1024;         ///< nonzeros staged per block: a multiple of block_size, <= 8 per thread
  bool offsets64 = false;  ///< 64-bit row offsets (needed when nnz >= 2^31)
  /// 16-bit columns: each block stores a base column and column - base per nonzero when its
  /// columns span less than 2^16 (blocks that span more keep 32-bit columns in a side array)
  bool narrow_columns = false;
  /// Value coding (compiler/formats/values/values.hpp): 0 plain, 1 every value 1 (no array),
  /// 2 8-bit and 3 16-bit indices into a table of the distinct values.
  int values = 0;
  static void fields(auto& p, auto&& f) {
    f("block_size", "b", p.block_size);
    f("tile", "tile", p.tile);
    f("offsets64", "o64", p.offsets64);
    f("narrow_columns", "c16", p.narrow_columns);
    f("values", "val", p.values);
  }
};

/// `ell`: column-major ELLPACK padded to the longest row (Bell & Garland; BRO paper section
/// 2.1.2); with row_lengths, ELLPACK-R (section 2.1.4: each row's length stored, padding never
/// read). T lanes share a row, each taking every T-th slot; the slots are interleaved so a warp's
/// loads stay contiguous (layout in compiler/formats/ell/ell_format.hpp).
struct EllParams {
  static constexpr std::string_view kFormat = "ell";
  int width = 0;            ///< K: slots per row, >= the longest row; 0: the longest row
  int threads_per_row = 1;  ///< T: lanes per row (1, 2, 4, ..., 32); 1 is the paper's kernel
  int block_size = 256;     ///< threads per block
  int unroll = 1;           ///< slots each lane loads before it gathers x (1..8)
  bool row_lengths = true;  ///< ELL-R: loop to the stored row length instead of a -1 sentinel
  /// Value coding (compiler/formats/values/values.hpp): 0 plain, 1 every value 1 (no array),
  /// 2 8-bit and 3 16-bit indices into a table of the distinct values.
  int values = 0;
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("row_lengths", "R", p.row_lengths);
    f("values", "val", p.values);
  }
};

/// `sell`: SELL-C-sigma (Kreutzer et al.; the AMB slides' level 2): slices of C rows, rows sorted
/// by decreasing length within windows of sigma rows, each slice padded to its own longest row
/// and stored column-major; y is written through the row permutation.
struct SellParams {
  static constexpr std::string_view kFormat = "sell";
  int slice_height = 32;    ///< C: rows per slice, a power of two in 1..256
  int sigma = 1;            ///< sorting window in rows: 1 (no sorting) or a multiple of C
  int threads_per_row = 1;  ///< T: lanes per row (1, 2, 4, ..., 32)
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("slice_height", "C", p.slice_height);
    f("sigma", "s", p.sigma);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
  }
};

/// `hyb`: ELL part of width K plus the remainder in COO (Bell & Garland's split; BRO paper
/// section 2.1.3): one launch for the ELL part (it also applies beta), one for the COO part
/// (a warp per interval, segmented reduction, atomic adds into y).
struct HybParams {
  static constexpr std::string_view kFormat = "hyb";
  int width = 0;             ///< K of the ELL part (formats::hyb_split_width at propose time)
  int threads_per_row = 1;   ///< T: lanes per row in the ELL part
  int block_size = 256;      ///< threads per block, both launches
  int coo_interval = 256;    ///< COO entries per warp, a multiple of 32
  bool row_lengths = false;  ///< ELL part as ELL-R (stored lengths) instead of -1 sentinels
  /// Value coding (compiler/formats/values/values.hpp): 0 plain, 1 every value 1 (no array),
  /// 2 8-bit and 3 16-bit indices into a table of the distinct values.
  int values = 0;
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("coo_interval", "I", p.coo_interval);
    f("row_lengths", "R", p.row_lengths);
    f("values", "val", p.values);
  }
};

/// `bro_ell`: BRO-ELL (Tang et al., SC13, section 3.1): column indices delta-coded within each
/// row, cut into slices of h rows; per slice one bit width per column position (the widest delta
/// of the slice there), the rows' bit streams multiplexed in 32- or 64-bit symbols so a slice's
/// lanes read consecutive symbols. With T > 1, T lanes share a row: lane t takes the row's
/// nonzeros t, t+T, ... as its own delta-coded stream.
struct BroEllParams {
  static constexpr std::string_view kFormat = "bro_ell";
  int slice_height = 32;    ///< h: rows per slice (h*T lanes, a multiple of 32)
  int symbol_bits = 32;     ///< 32 or 64
  int threads_per_row = 1;  ///< T: 1 is the paper's kernel; 2..32 lanes share a row
  int block_size = 256;     ///< threads per block (a multiple of h*T)
  int unroll = 1;           ///< indices each lane decodes before its x gathers (1, 2, 4, 8)
  bool prefetch = false;    ///< load the next symbol as soon as the current one is taken
  /// Where the bit widths live: 0 per-slice tables in global memory, 1 the same tables as
  /// __constant__ data in the unit (<= 64 KiB), 2 one width pattern for every slice baked into
  /// the unit as template arguments (the decode schedule becomes compile-time).
  int tables = 0;
  /// Value coding (compiler/formats/values/values.hpp): 0 plain, 1 every value 1 (no array),
  /// 2 8-bit and 3 16-bit indices into a table of the distinct values.
  int values = 0;
  static void fields(auto& p, auto&& f) {
    f("slice_height", "h", p.slice_height);
    f("symbol_bits", "sym", p.symbol_bits);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("prefetch", "pf", p.prefetch);
    f("tables", "tab", p.tables);
    f("values", "val", p.values);
  }
};

/// `bro_coo`: BRO-COO (section 3.2): entries sorted by row, cut into intervals of I entries, one
/// warp per interval, each lane a run of I/32 consecutive entries; row indices delta-coded and
/// bit-packed (one width for the lanes' first deltas, one for the rest), column indices plain.
struct BroCooParams {
  static constexpr std::string_view kFormat = "bro_coo";
  int interval = 1024;  ///< I: entries per interval (one warp), a multiple of 32
  int symbol_bits = 32;
  int block_size = 256;
  /// Value coding (compiler/formats/values/values.hpp): 0 plain, 1 every value 1 (no array),
  /// 2 8-bit and 3 16-bit indices into a table of the distinct values.
  int values = 0;
  static void fields(auto& p, auto&& f) {
    f("interval", "I", p.interval);
    f("symbol_bits", "sym", p.symbol_bits);
    f("block_size", "b", p.block_size);
    f("values", "val", p.values);
  }
};

/// `bro_hyb`: BRO-HYB (section 3.3): the hyb split at width K, the first K nonzeros of each row
/// in BRO-ELL, the rest in BRO-COO.
struct BroHybParams {
  static constexpr std::string_view kFormat = "bro_hyb";
  int width = 0;  ///< K of the ELL part
  int slice_height = 32;
  int symbol_bits = 32;  ///< both parts
  int threads_per_row = 1;
  int block_size = 256;
  int unroll = 1;
  bool prefetch = false;
  int tables = 0;  ///< as BroEllParams::tables, for the ELL part
  int interval = 1024;
  /// Value coding (compiler/formats/values/values.hpp): 0 plain, 1 every value 1 (no array),
  /// 2 8-bit and 3 16-bit indices into a table of the distinct values.
  int values = 0;
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("slice_height", "h", p.slice_height);
    f("symbol_bits", "sym", p.symbol_bits);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("prefetch", "pf", p.prefetch);
    f("tables", "tab", p.tables);
    f("interval", "I", p.interval);
    f("values", "val", p.values);
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

/// `cci`: compressed column indices (Lawlor, IA^3 2013): each row's columns split over T slices
/// (nonzeros j, j+T, j+2T, ... of the row), each slice's column deltas coded as a variable-length
/// opcode plus an immediate, decoded branch-free through an 8-entry table baked into the kernel.
struct CciParams {
  static constexpr std::string_view kFormat = "cci";
  int threads_per_row = 4;   ///< T: slices (lanes) per row, a power of two in 1..32
  int block_size = 256;      ///< threads per block
  bool paper_table = false;  ///< the paper's fixed opcode classes instead of per-matrix ones
  /// Slice streams of a row interleaved word by word (one code start per row, streams padded to
  /// the row's longest); false: the paper's layout, one code start per slice.
  bool interleaved = true;
  static void fields(auto& p, auto&& f) {
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("paper_table", "paper", p.paper_table);
    f("interleaved", "il", p.interleaved);
  }
};

/// `amb`: adaptive multi-level blocking (Nagasaka et al.): column segments of 2^segment_bits
/// columns, SELL-C-sigma per segment with 16-bit column offsets and row permutation, blocks of
/// column_block contiguous columns, one thread per chunk row accumulating into y by atomicAdd
/// (or, deterministic, into per-segment partial sums reduced in a fixed order).
struct AmbParams {
  static constexpr std::string_view kFormat = "amb";
  int segment_bits = 16;  ///< column segments of width 2^segment_bits (1..16)
  int slice_height = 32;  ///< C: rows per chunk (8, 16, 32, 64 or 128; divides block_size)
  int sigma = 32768;      ///< sorting window in rows: a multiple of C, at most 2^15
  int column_block = 1;   ///< b: contiguous columns per block (1..10)
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
using FormatParams = std::variant<CsrParams, EllParams, SellParams, HybParams, BroEllParams,
                                  BroCooParams, BroHybParams, BlockedParams, BellpackParams,
                                  BcsrParams, CciParams, AmbParams, CsrStreamParams>;

/// The format a parameter set belongs to ("csr", "ell", ...).
std::string_view format_of(const FormatParams& params);
/// Default parameters of `format` (InputError for an unknown name).
FormatParams default_params(std::string_view format);
/// Sets fields of `params` from "name=value,name=value" (names or short labels; bools take
/// 0/1/true/false). InputError naming the field when a name or value is wrong.
void set_params(FormatParams& params, std::string_view assignments);
/// Every field as "name=value,..." (bools as 0/1): set_params' input.
std::string to_assignments(const FormatParams& params);

/// One plan the planner considered, ranked by predicted time.
struct Candidate {
  std::string format;
  FormatParams params;
  std::string label;  ///< short parameter summary, e.g. "T=8 b=256 u=2"
  bool applicable = true;
  std::string reason;  ///< why rejected, or what recommends it
  /// Bytes moved per multiply under the planner's cost model (compulsory unless
  /// compiler::PlanOptions::cost_model asks for the traffic model).
  double predicted_bytes = 0;
  double predicted_seconds = 0;
};

struct Plan {
  std::string format;
  FormatParams params;
  Precision precision = Precision::f64;
  std::string reorder = "none";
  std::string reorder_why;  ///< why an ordering was or was not chosen (reorder "auto")
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

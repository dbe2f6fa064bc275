// cci: compressed column indices (Lawlor, "In-memory Data Compression for Sparse Matrices",
// IA^3 2013, section 2 and the GPU appendix).
//
// T lanes share a row; lane (slice) s takes the row's nonzeros s, s+T, s+2T, ... Each slice's
// columns are delta coded: code = opcode (variable length, read from the low bits) followed by an
// immediate; delta = T + immediate, so a run of adjacent columns spread over T slices costs the
// shortest opcode and no immediate (the paper's GPU "short jump of the thread stride"). Starting
// points: slice 0 starts from column -T (its first code is the row's first column), slice s > 0
// from (row's first column) + s - T; the first column reaches the other slices by one warp
// shuffle, so only one absolute code per row is stored (the paper stores one per slice).
//
// Opcodes are at most 3 bits: the decoder indexes an 8-entry table (opcode bits, immediate bits)
// with the buffer's low 3 bits, shorter opcodes filling every entry their prefix matches (the
// paper's "don't care" expansion). The classes are chosen per matrix from the histogram of
// immediate widths (cci_choose_table) or fixed to the paper's (1-bit short jump; 3-bit opcodes
// with 5, 15, 20 and 29 immediate bits); the table is baked into the kernel as constants.
//
// Encoded arrays, in kernel-parameter order:
//   row_ptr      i32 [nrows+1]
//   cstart       i32 interleaved: [nrows+1] first code word of each row's region (the row's T
//                    slice streams interleaved word by word, each padded to the row's longest);
//                    per slice (the paper's): [nrows*T + 1] first code word of each slice
//   codes        u32 [words + T] little-endian bit streams; T spare zero words at the end, as a
//                    lane may load one word past its stream
//   values       f64/f32 [nnz] CSR order
//   decode_table u8  [16] opcode bits of table entries 0..7, then immediate bits (not a kernel
//                    argument: the kernel has it as constants; the host reference decodes with it)
// Template: templates/cci.cuh.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "formats/format.hpp"

namespace spmvc::formats {

/// One code class: an opcode of opcode_len bits (value `opcode`, first bit in bit 0) followed by
/// imm_bits of immediate.
struct CciClass {
  int opcode_len = 0;
  unsigned opcode = 0;
  int imm_bits = 0;
};

/// A prefix code of classes and its 8-entry decode table.
struct CciTable {
  std::vector<CciClass> classes;
  std::array<std::uint8_t, 8> op_len{};    ///< opcode bits of the class table entry i decodes
  std::array<std::uint8_t, 8> imm_bits{};  ///< its immediate bits
  /// Builds the table; InternalError unless the opcodes form a prefix code of <= 3 bits that
  /// covers every index, with opcode_len + imm_bits <= 32.
  static CciTable from_classes(std::vector<CciClass> classes);
  /// The cheapest class whose immediate holds `bits` bits, or -1.
  int class_for(int bits) const;
  /// Bits of the code of an immediate needing `bits` bits (-1 when no class holds it).
  int code_bits(int bits) const;
  int max_imm_bits() const;
};

/// The paper's fixed classes: opcode 0 (1 bit, no immediate), 001/011/101/111 (3 bits) with 5,
/// 15, 20 and 29 immediate bits.
CciTable cci_paper_table();
/// The classes (at most 8, opcodes of at most 3 bits) that code `hist` in the fewest bits;
/// hist[b] = codes whose immediate needs exactly b bits (0 for immediate 0).
CciTable cci_choose_table(const std::array<std::int64_t, 33>& hist);
/// The same search without its bound (every partition and assignment visited): the reference
/// the tests hold cci_choose_table's bounded search to, class for class.
CciTable cci_search_table_unbounded(const std::array<std::int64_t, 33>& hist);
/// The immediate-width histogram of `a` split over T slices (what the encoder codes).
std::array<std::int64_t, 33> cci_code_histogram(const CsrMatrix& a, int threads_per_row);

/// The paper's Table 2 "CCI saved" column: space saved on column data against CSR's 32-bit
/// column indices. saved = 1 - compressed / csr_column_bytes, with compressed = code bytes
/// (codes_only) or code bytes + cstart bytes (with_starts). The spare tail words are left out.
struct CciSpace {
  double csr_column_bytes = 0;  ///< 4 * nnz
  double code_bytes = 0;        ///< the codes array without its spare tail
  double cstart_bytes = 0;
  double saved_codes_only = 0;
  double saved_with_starts = 0;
};
/// Space of an encoded cci matrix.
CciSpace cci_space(const Encoded& encoded);

class CciFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "cci"; }
  std::string_view summary() const override {
    return "CCI: variable-length column delta codes, table-driven branch-free decode, T lanes "
           "per row (Lawlor)";
  }
  std::vector<Candidate> propose(const Profile& profile, Precision precision) const override;
  std::optional<std::string> cannot_implement(const Profile& profile, const FormatParams& params,
                                              Precision precision) const override;
  Cost cost(const Profile& profile, const FormatParams& params, Precision precision) const override;
  Encoded encode(const CsrMatrix& a, const FormatParams& params,
                 Precision precision) const override;
  void reference_spmv(const Encoded& encoded, const FormatParams& params, std::span<const double> x,
                      std::span<double> y, double alpha, double beta) const override;
  KernelSource generate(const Encoded& encoded, const FormatParams& params,
                        const std::string& banner) const override;

  /// The decode table stored in `encoded`.
  static CciTable table_of(const Encoded& encoded);
  /// Code bits per nonzero the profile predicts for `params` (codes only).
  static double estimated_code_bits(const Profile& profile, const CciParams& params);
  /// Entry point name, e.g. spmv_cci_t4_b256_c1x0_3x5_3x15_3x20_3x29_f64.
  static std::string kernel_name(const CciParams& p, const CciTable& table, Precision precision);
};

}  // namespace spmvc::formats

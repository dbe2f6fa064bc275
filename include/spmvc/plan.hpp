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

/// Parameters of the `csr` format (Baskaran–Bordawekar): T threads cooperate on each row,
/// reading its nonzeros cyclically (V at a time) from an aligned start, then reduce with warp
/// shuffles.
struct CsrParams {
  int threads_per_row = 1;  ///< T: 1, 2, 4, 8, 16 or 32
  int vector_width = 1;     ///< V: nonzeros each lane loads with one vector load (1, 2 or 4)
  int block_size = 256;     ///< threads per block
  int unroll = 1;           ///< nonzeros each thread loads before it accumulates (1, 2 or 4)
  bool aligned = true;      ///< start each row's sweep at the T-aligned offset below its start
  bool offsets64 = false;   ///< 64-bit row offsets (needed when nnz >= 2^31)
};

/// One alternative per format; grows as formats are added.
using FormatParams = std::variant<CsrParams>;

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

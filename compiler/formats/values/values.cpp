#include "formats/values/values.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "formats/arrays.hpp"
#include "formats/values/values_model.hpp"
#include "spmvc/error.hpp"
#include "spmvc/value_rounding.hpp"

namespace spmvc::formats {

namespace {

int code_bytes(int coding) {
  return coding == kValuesTable8 ? 1 : coding == kValuesTable16 ? 2 : 0;
}

bool is_rounded(int coding) { return coding == kValuesF32Rounded || coding == kValuesBf16; }

[[noreturn]] void rounding_overflows(int coding, std::int64_t k, double v) {
  throw InputError("values", 0,
                   fmt::format("values={} ({} storage) but nonzero {} holds {:.17g}, which "
                               "rounds to an infinity there; use values=0",
                               coding, coding == kValuesBf16 ? "bf16" : "fp32", k, v));
}

// The array `name` of `count` T elements: element(i) for i < n (on host threads), then zeros.
template <typename T, typename Element>
EncodedArray filled_array(const std::string& name, ElemType type, std::int64_t n, std::size_t count,
                          Element&& element) {
  EncodedArray out = uninitialized_array<T>(name, type, count);
  T* dst = typed_mut<T>(out);
  parallel_for(static_cast<std::int64_t>(count), std::int64_t{1} << 16,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t i = begin; i < end; ++i) dst[i] = i < n ? element(i) : T(0);
               });
  return out;
}

// The f32 array `name` of `count` elements holding src[i] rounded to nearest (then zeros).
EncodedArray f32_rounded_values(const std::string& name, std::span<const double> src,
                                std::size_t count) {
  const double* v = src.data();
  return filled_array<float>(name, ElemType::f32, static_cast<std::int64_t>(src.size()), count,
                             [&](std::int64_t i) {
                               const RoundedValue r = round_to_f32(v[i]);
                               if (r.overflow) rounding_overflows(kValuesF32Rounded, i, v[i]);
                               return static_cast<float>(r.stored);
                             });
}

// The u16 array `name` of `count` bf16 words, element i the word of value_at(i) (an fp32
// value, i < n) rounded to nearest even, then zeros.
template <typename At>
EncodedArray bf16_values(const std::string& name, std::int64_t n, std::size_t count,
                         At&& value_at) {
  return filled_array<std::uint16_t>(name, ElemType::u16, n, count, [&](std::int64_t i) {
    const double v = value_at(i);
    const RoundedValue r = round_to_bf16(v);
    if (r.overflow) rounding_overflows(kValuesBf16, i, v);
    return bf16_word(static_cast<float>(r.stored));
  });
}

[[noreturn]] void already_f32() {
  throw InputError("values", 0, "values=4 stores fp64 values as fp32; these are fp32 already");
}

[[noreturn]] void not_f32_operator() {
  throw InputError("values", 0,
                   "values=6 stores fp32 values as bf16; these are fp64 (an fp64 operator takes "
                   "values=5, fp32 storage)");
}

[[noreturn]] void not_exact_in_f32(std::int64_t k, double v) {
  throw InputError("values", 0,
                   fmt::format("values=4 (fp32 storage) but nonzero {} holds {:.17g}, which fp32 "
                               "cannot hold exactly; use values=0",
                               k, v));
}

// The f32 array `name` of `count` elements holding src[i] (then zeros), each checked exact.
EncodedArray f32_values(const std::string& name, std::span<const double> src, std::size_t count) {
  const double* v = src.data();
  return filled_array<float>(name, ElemType::f32, static_cast<std::int64_t>(src.size()), count,
                             [&](std::int64_t i) {
                               if (!exact_in_fp32(v[i])) not_exact_in_f32(i, v[i]);
                               return static_cast<float>(v[i]);
                             });
}

bool is_table(int coding) { return coding == kValuesTable8 || coding == kValuesTable16; }

std::vector<EncodedArray>::iterator find_array(std::vector<EncodedArray>& arrays,
                                               const std::string& name) {
  auto it = std::find_if(arrays.begin(), arrays.end(),
                         [&](const EncodedArray& a) { return a.name == name; });
  if (it == arrays.end()) throw InternalError("value coding: no array named " + name);
  return it;
}

// An open-addressing index of value bit patterns to codes, sized for a table of `capacity`
// entries (twice that many slots, a power of two), which stays in cache.
template <typename Bits>
class CodeIndex {
 public:
  explicit CodeIndex(std::int64_t capacity)
      : keys_(static_cast<std::size_t>(2 * capacity)),
        index_(static_cast<std::size_t>(2 * capacity), -1) {}
  /// The code of `bits`, or -1 when it has none yet (then `slot` is where it goes).
  std::int32_t find(Bits bits, std::size_t& slot) const {
    const std::size_t mask = keys_.size() - 1;
    slot =
        static_cast<std::size_t>((static_cast<std::uint64_t>(bits) * 0x9E3779B97F4A7C15ull) >> 32) &
        mask;
    while (index_[slot] >= 0 && keys_[slot] != bits) slot = (slot + 1) & mask;
    return index_[slot];
  }
  void put(std::size_t slot, Bits bits, std::int32_t code) {
    keys_[slot] = bits;
    index_[slot] = code;
  }

 private:
  std::vector<Bits> keys_;
  std::vector<std::int32_t> index_;  // -1: free slot
};

template <typename Code>
[[noreturn]] void table_overflow(std::int64_t capacity) {
  throw InputError("values", 0,
                   fmt::format("more than {} distinct values: a {}-bit value table cannot "
                               "hold them (use values=0, or a wider table)",
                               capacity, 8 * static_cast<int>(sizeof(Code))));
}

// Codes the Value elements of `plain` through a table of their distinct bit patterns (so -0.0
// and 0.0, or two NaNs, stay apart: decoding returns exactly the bytes that were stored), in the
// order each pattern first occurs. On the host threads: each range of elements codes into its
// own table (its patterns in the order they first occur in the range), the range tables merge in
// range order into the global table (which so lists the patterns in the order they first occur
// in the whole array, as one pass would), then each range maps its codes to the global ones.
// Each element is hashed once, into an index that stays in cache: a few ns a value, where
// encoding a 16M-nonzero matrix is the one-time cost that matters.
// The n values come from value_at(i) (a Value), so a caller may code values it never stores
// plainly. Returns the code array (named `name`) and the table (`name + "_table"`).
template <typename Value, typename Code, typename Bits, typename At>
std::pair<EncodedArray, EncodedArray> code_table(const std::string& name, std::int64_t n,
                                                 int coding, At&& value_at) {
  const std::int64_t capacity = value_table_capacity(coding);
  // Every element is coded below.
  EncodedArray codes = uninitialized_array<Code>(
      name, coding == kValuesTable8 ? ElemType::u8 : ElemType::u16, static_cast<std::size_t>(n));
  Code* out = typed_mut<Code>(codes);
  const auto bits_of = [&](std::int64_t i) {
    const Value v = value_at(i);
    Bits bits;
    std::memcpy(&bits, &v, sizeof(Bits));
    return bits;
  };

  // Pass 1: range-local codes, and each range's table of patterns.
  const std::vector<Range> ranges = split_range(n, std::int64_t{1} << 16);
  const std::vector<std::vector<Bits>> local =
      map_ranges(ranges, [&](std::int64_t begin, std::int64_t end) {
        CodeIndex<Bits> index(capacity);
        std::vector<Bits> seen;
        Code last_code = 0;
        for (std::int64_t i = begin; i < end; ++i) {
          const Bits bits = bits_of(i);
          // Runs of one value are common (padding, stencils).
          if (i > begin && bits == bits_of(i - 1)) {
            out[i] = last_code;
            continue;
          }
          std::size_t slot = 0;
          std::int32_t code = index.find(bits, slot);
          if (code < 0) {
            // More patterns in one range than the table holds: more in the whole array too.
            if (static_cast<std::int64_t>(seen.size()) == capacity) table_overflow<Code>(capacity);
            code = static_cast<std::int32_t>(seen.size());
            index.put(slot, bits, code);
            seen.push_back(bits);
          }
          last_code = static_cast<Code>(code);
          out[i] = last_code;
        }
        return seen;
      });

  // The global table, and each range's map from its codes to the global ones.
  CodeIndex<Bits> index(capacity);
  std::vector<Value> table;
  std::vector<std::vector<Code>> remap(local.size());
  bool identity = true;  // one range, or every range's codes already global
  for (std::size_t r = 0; r < local.size(); ++r) {
    for (const Bits bits : local[r]) {
      std::size_t slot = 0;
      std::int32_t code = index.find(bits, slot);
      if (code < 0) {
        if (static_cast<std::int64_t>(table.size()) == capacity) table_overflow<Code>(capacity);
        code = static_cast<std::int32_t>(table.size());
        index.put(slot, bits, code);
        Value value;
        std::memcpy(&value, &bits, sizeof(Value));
        table.push_back(value);
      }
      identity = identity && code == static_cast<std::int32_t>(remap[r].size());
      remap[r].push_back(static_cast<Code>(code));
    }
  }
  // Pass 2: range-local codes to global ones.
  if (!identity) {
    run_ranges(ranges, [&](std::size_t r, std::int64_t begin, std::int64_t end) {
      const Code* map = remap[r].data();
      for (std::int64_t i = begin; i < end; ++i) out[i] = map[out[i]];
    });
  }
  if (table.empty()) table.push_back(Value(0));  // no stored value: one entry keeps it valid
  const ElemType type = sizeof(Value) == 8 ? ElemType::f64 : ElemType::f32;
  return {std::move(codes), make_array<Value>(name + "_table", type, table)};
}

// Codes with a table of `coding`, reading values through value_at(i) as Value (double for f64,
// float otherwise).
template <typename Value, typename At>
std::pair<EncodedArray, EncodedArray> code_with_table(const std::string& name, std::int64_t n,
                                                      int coding, At&& value_at) {
  using Bits = std::conditional_t<sizeof(Value) == 8, std::uint64_t, std::uint32_t>;
  return coding == kValuesTable8
             ? code_table<Value, std::uint8_t, Bits>(name, n, coding, value_at)
             : code_table<Value, std::uint16_t, Bits>(name, n, coding, value_at);
}

void check_all_ones(const CsrMatrix& a) {
  const auto other =
      std::find_if(a.values.begin(), a.values.end(), [](double v) { return v != 1.0; });
  if (other != a.values.end())
    throw InputError("values", 0,
                     fmt::format("values=1 (all ones) but nonzero {} holds {}; use values=0 or "
                                 "a table",
                                 other - a.values.begin(), *other));
}

}  // namespace

std::int64_t value_table_capacity(int coding) {
  return coding == kValuesTable8 ? 256 : coding == kValuesTable16 ? 65536 : 0;
}

double value_code_bytes(int coding, Precision precision) {
  switch (coding) {
    case kValuesUnit:
      return 0;
    case kValuesTable8:
    case kValuesTable16:
      return code_bytes(coding);
    case kValuesF32:
    case kValuesF32Rounded:
      return 4;
    case kValuesBf16:
      return 2;
    default:
      return value_bytes(precision);
  }
}

double value_table_bytes(int coding, const Profile& profile, Precision precision) {
  if (!is_table(coding)) return 0;
  return static_cast<double>(std::min(profile.distinct_values, value_table_capacity(coding))) *
         value_bytes(precision);
}

std::optional<std::string> value_coding_problem(const Profile& profile, int coding,
                                                Precision precision) {
  switch (coding) {
    case kValuesPlain:
      return std::nullopt;
    case kValuesUnit:
      if (profile.unit_values != profile.nnz)
        return fmt::format("values=1 needs every value to be 1; {} of {} are not",
                           profile.nnz - profile.unit_values, profile.nnz);
      return std::nullopt;
    case kValuesTable8:
    case kValuesTable16:
      // Padding adds one value (0) to the stored ones: a full table leaves no room for it.
      if (profile.distinct_values + 1 > value_table_capacity(coding))
        return fmt::format(
            "values={} holds at most {} distinct values (with padding's 0); the "
            "matrix has {}{}",
            coding, value_table_capacity(coding),
            profile.distinct_values > kDistinctValuesCap ? "more than " : "",
            std::min(profile.distinct_values, kDistinctValuesCap));
      return std::nullopt;
    case kValuesF32:
      if (precision != Precision::f64)
        return fmt::format("values=4 stores fp64 values as fp32; in {} they are fp32 already",
                           to_string(precision));
      if (profile.fp32_exact_values != profile.nnz)
        return fmt::format("values=4 needs every value exact in fp32; {} of {} are not",
                           profile.nnz - profile.fp32_exact_values, profile.nnz);
      return std::nullopt;
    case kValuesF32Rounded:
      if (precision != Precision::f64)
        return fmt::format(
            "values=5 rounds fp64 values to fp32 (mixed precision f32); in {} they are fp32 "
            "already (mixed precision bf16 stores them narrower)",
            to_string(precision));
      if (profile.f32_overflow > 0)
        return fmt::format("values=5: {} values are beyond fp32's range", profile.f32_overflow);
      return std::nullopt;
    case kValuesBf16:
      if (precision == Precision::f64)
        return "values=6 stores fp32 values as bf16 (mixed precision bf16); an fp64 operator "
               "takes mixed precision f32";
      if (profile.bf16_overflow > 0)
        return fmt::format("values=6: {} values are beyond bf16's range", profile.bf16_overflow);
      return std::nullopt;
    default:
      return fmt::format(
          "values={} is not a value coding (0 plain, 1 all ones, 2 8-bit table, "
          "3 16-bit table, 4 fp32 storage of fp64 values, 5 fp64 values rounded to fp32, "
          "6 fp32 values rounded to bf16)",
          coding);
  }
}

int best_value_coding(const Profile& profile, Precision precision) {
  if (profile.nnz == 0) return kValuesPlain;
  for (int coding : {kValuesUnit, kValuesTable8, kValuesTable16, kValuesF32})
    if (!value_coding_problem(profile, coding, precision)) return coding;
  return kValuesPlain;
}

double value_coding_efficiency(int coding, const Profile& profile, Precision precision) {
  if (coding == kValuesTable8) return heuristics::kValueTable8Efficiency;
  if (coding != kValuesTable16) return 1.0;
  return value_table_bytes(coding, profile, precision) <= heuristics::kValueTableL1Bytes
             ? heuristics::kValueTable16Efficiency
             : heuristics::kValueTableL2Efficiency;
}

int value_coding_of(const FormatParams& params) {
  return std::visit(
      [](const auto& p) {
        if constexpr (requires { p.values; }) return p.values;
        return static_cast<int>(kValuesPlain);
      },
      params);
}

FormatParams with_value_coding(FormatParams params, int coding) {
  const bool coded = std::visit(
      [&](auto& p) {
        if constexpr (requires { p.values; }) {
          p.values = coding;
          return true;
        }
        return false;
      },
      params);
  if (!coded) throw InternalError(std::string(format_of(params)) + " has no value coding");
  return params;
}

void add_value_coded(std::vector<Candidate>& candidates, const Profile& profile,
                     Precision precision) {
  const int best = best_value_coding(profile, precision);
  if (best == kValuesPlain) return;
  std::vector<int> codings{best};
  if (best == kValuesTable16 && !value_coding_problem(profile, kValuesF32, precision))
    codings.push_back(kValuesF32);
  const std::size_t n = candidates.size();
  for (const int coding : codings) {
    const std::string summary = "; " + value_coding_summary(coding);  // the same for every twin
    for (std::size_t i = 0; i < n; ++i) {
      if (!candidates[i].applicable) continue;
      Candidate c = candidates[i];
      c.params = with_value_coding(std::move(c.params), coding);
      c.label = describe(c.params);
      c.reason += summary;
      candidates.push_back(std::move(c));
    }
  }
}

bool has_value_coding(const FormatParams& params) {
  return std::visit(
      [](const auto& p) {
        return requires { p.values; };
      },
      params);
}

int mixed_value_coding(MixedPrecision mode) {
  switch (mode) {
    case MixedPrecision::f32:
      return kValuesF32Rounded;
    case MixedPrecision::bf16:
      return kValuesBf16;
    default:
      throw InternalError("mixed_value_coding: mixed precision is off");
  }
}

std::optional<std::string> mixed_precision_problem(MixedPrecision mode, Precision precision) {
  if (mode == MixedPrecision::f32 && precision != Precision::f64)
    return fmt::format(
        "mixed precision f32 stores an fp64 operator's values as fp32; this operator is {} "
        "(use bf16)",
        to_string(precision));
  if (mode == MixedPrecision::bf16 && precision == Precision::f64)
    return "mixed precision bf16 stores an fp32 operator's values as bf16; this operator is f64 "
           "(use f32, or --precision f32)";
  return std::nullopt;
}

bool is_rounded_coding(int coding) { return is_rounded(coding); }

int mixed_coding_for(int coding, MixedPrecision mode, const Profile& profile, Precision precision) {
  // Exact codings of no more bytes than the rounded one stay: all ones, an 8-bit table, and
  // fp32 storage of values fp32 holds exactly (the same bytes, no error).
  if (coding == kValuesUnit || coding == kValuesTable8 || coding == kValuesF32) return coding;
  const int rounded = mixed_value_coding(mode);
  if (rounded == kValuesF32Rounded && !value_coding_problem(profile, kValuesF32, precision))
    return kValuesF32;
  // A 16-bit table stays exact beside the rounded twin its plain candidate becomes: the
  // planner weighs its table lookups against the rounded values' bytes.
  if (coding == kValuesTable16) return coding;
  return rounded;
}

void apply_mixed_precision(std::vector<Candidate>& candidates, const Profile& profile,
                           Precision precision, MixedPrecision mode) {
  std::vector<Candidate> out;
  for (Candidate& c : candidates) {
    // Representable candidates that do not pay are rewritten too: a forced format may take one.
    if (c.representable && has_value_coding(c.params)) {
      const int before = value_coding_of(c.params);
      const int after = mixed_coding_for(before, mode, profile, precision);
      if (after != before) {
        c.params = with_value_coding(std::move(c.params), after);
        c.label = describe(c.params);
        c.reason += "; " + value_coding_summary(after);
        if (auto why = value_coding_problem(profile, after, precision)) {
          c.applicable = false;
          c.representable = false;
          c.reason = *why;
        }
      }
    }
    // A plain candidate whose values fp32 holds exactly becomes its own exact twin: keep one.
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Candidate& o) {
      return o.format == c.format && o.label == c.label;
    });
    if (!seen) out.push_back(std::move(c));
  }
  candidates = std::move(out);
}

ValueRounding value_rounding(const Profile& profile, MixedPrecision mode, Precision precision,
                             int coding) {
  ValueRounding r;
  r.mode = mode;
  if (coding == kValuesF32Rounded) r.value_error = profile.f32_rounding_error;
  if (coding == kValuesBf16) r.value_error = profile.bf16_rounding_error;
  // An fp32 operator's other codings hold the values rounded to fp32 (all ones exactly).
  if (precision != Precision::f64 && coding != kValuesBf16 && coding != kValuesUnit)
    r.value_error = profile.f32_rounding_error;
  r.longest_row = profile.row_max;
  // Unit roundoffs: fp64 2^-53, fp32 2^-24. f32acc64 sums in fp64 and rounds the sum to fp32.
  constexpr double kF64Unit = 0x1p-53, kF32Unit = 0x1p-24;
  const double accumulate = precision == Precision::f32 ? kF32Unit : kF64Unit;
  const double output = precision == Precision::f32_acc64 ? kF32Unit : 0.0;
  r.y_error_bound = y_error_bound(r.value_error, r.longest_row, accumulate, output);
  return r;
}

std::string value_coding_tag(int coding) {
  switch (coding) {
    case kValuesUnit:
      return "_ones";
    case kValuesTable8:
      return "_vt8";
    case kValuesTable16:
      return "_vt16";
    case kValuesF32:
      return "_f32v";
    case kValuesF32Rounded:
      return "_f32r";
    case kValuesBf16:
      return "_bf16";
    default:
      return "";
  }
}

std::string value_coding_summary(int coding) {
  switch (coding) {
    case kValuesUnit:
      return "every value is 1: no value array";
    case kValuesTable8:
      return "values as 8-bit indices into a table";
    case kValuesTable16:
      return "values as 16-bit indices into a table";
    case kValuesF32:
      return "every value is exact in fp32: stored as fp32";
    case kValuesF32Rounded:
      return "mixed precision: values rounded to fp32, fp64 arithmetic";
    case kValuesBf16:
      return "mixed precision: values rounded to bf16, fp32 arithmetic";
    default:
      return "";
  }
}

void code_values(std::vector<EncodedArray>& arrays, const std::string& name, int coding,
                 const CsrMatrix& a) {
  if (coding == kValuesPlain) return;
  auto plain = find_array(arrays, name);
  if (plain->type != ElemType::f64 && plain->type != ElemType::f32)
    throw InternalError("value coding: " + name + " is not a value array");
  if (coding == kValuesUnit) {
    check_all_ones(a);
    arrays.erase(plain);
    return;
  }
  if (coding == kValuesF32) {
    if (plain->type != ElemType::f64) already_f32();
    const EncodedArray& src = *plain;
    const auto n = static_cast<std::size_t>(src.count());
    *plain = f32_values(name, std::span<const double>(typed<double>(src), n), n);
    return;
  }
  if (coding == kValuesF32Rounded) {
    if (plain->type != ElemType::f64) already_f32();
    const EncodedArray& src = *plain;
    const auto n = static_cast<std::size_t>(src.count());
    *plain = f32_rounded_values(name, std::span<const double>(typed<double>(src), n), n);
    return;
  }
  if (coding == kValuesBf16) {
    if (plain->type != ElemType::f32) not_f32_operator();
    const EncodedArray& src = *plain;
    const float* f = typed<float>(src);
    *plain = bf16_values(name, src.count(), static_cast<std::size_t>(src.count()),
                         [&](std::int64_t i) { return static_cast<double>(f[i]); });
    return;
  }
  if (!is_table(coding)) throw InputError("values", 0, fmt::format("unknown coding {}", coding));
  const bool f64 = plain->type == ElemType::f64;
  const EncodedArray& src = *plain;
  auto [codes, table] =
      f64 ? code_with_table<double>(name, src.count(), coding,
                                    [&](std::int64_t i) { return typed<double>(src)[i]; })
          : code_with_table<float>(name, src.count(), coding,
                                   [&](std::int64_t i) { return typed<float>(src)[i]; });
  *plain = std::move(codes);
  arrays.insert(plain + 1, std::move(table));
}

void append_values(std::vector<EncodedArray>& arrays, const std::string& name, Precision precision,
                   std::span<const double> src, std::size_t count, int coding, const CsrMatrix& a) {
  if (coding == kValuesPlain) {
    arrays.push_back(value_array(name, precision, src, count));
    return;
  }
  if (coding == kValuesUnit) {
    check_all_ones(a);
    return;
  }
  if (coding == kValuesF32) {
    if (precision != Precision::f64) already_f32();
    arrays.push_back(f32_values(name, src, count));
    return;
  }
  if (coding == kValuesF32Rounded) {
    if (precision != Precision::f64) already_f32();
    arrays.push_back(f32_rounded_values(name, src, count));
    return;
  }
  if (coding == kValuesBf16) {
    if (precision == Precision::f64) not_f32_operator();
    const double* v = src.data();
    // The plain fp32 array would hold float(v): round that (round_to_bf16 rounds to fp32 first).
    arrays.push_back(bf16_values(name, static_cast<std::int64_t>(src.size()), count,
                                 [&](std::int64_t i) { return v[i]; }));
    return;
  }
  if (!is_table(coding)) throw InputError("values", 0, fmt::format("unknown coding {}", coding));
  // The plain array would hold src converted to Value, then zeros: code those values directly.
  const auto n = static_cast<std::int64_t>(src.size());
  const double* v = src.data();
  const auto slots = static_cast<std::int64_t>(count);
  auto [codes, table] =
      precision == Precision::f64
          ? code_with_table<double>(name, slots, coding,
                                    [&](std::int64_t i) { return i < n ? v[i] : 0.0; })
          : code_with_table<float>(name, slots, coding, [&](std::int64_t i) {
              return i < n ? static_cast<float>(v[i]) : 0.0f;
            });
  arrays.push_back(std::move(codes));
  arrays.push_back(std::move(table));
}

template <typename Value>
std::vector<Value> stored_values(const Encoded& e, const std::string& name, int coding,
                                 std::int64_t count) {
  std::vector<Value> out(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  if (coding == kValuesUnit) {
    std::fill(out.begin(), out.end(), Value(1));
    return out;
  }
  const EncodedArray& arr = e.array(name);
  if (arr.count() < count)
    throw InternalError(fmt::format("{}: {} stored values, {} expected", name, arr.count(), count));
  if (coding == kValuesPlain) {
    std::copy_n(typed<Value>(arr), out.size(), out.begin());
    return out;
  }
  if (coding == kValuesF32 || coding == kValuesF32Rounded) {
    const float* stored = typed<float>(arr);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Value>(stored[i]);
    return out;
  }
  if (coding == kValuesBf16) {
    const std::uint16_t* stored = typed<std::uint16_t>(arr);
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<Value>(std::bit_cast<float>(std::uint32_t{stored[i]} << 16));
    return out;
  }
  const EncodedArray& table_arr = e.array(name + "_table");
  const Value* table = typed<Value>(table_arr);
  const std::int64_t entries = table_arr.count();
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t code = coding == kValuesTable8
                                  ? typed<std::uint8_t>(arr)[i]
                                  : static_cast<std::int64_t>(typed<std::uint16_t>(arr)[i]);
    if (code >= entries)
      throw InternalError(fmt::format("{}: code {} past a table of {}", name, code, entries));
    out[i] = table[code];
  }
  return out;
}

template std::vector<double> stored_values<double>(const Encoded&, const std::string&, int,
                                                   std::int64_t);
template std::vector<float> stored_values<float>(const Encoded&, const std::string&, int,
                                                 std::int64_t);

ElemType value_elem_type(Precision precision) {
  return precision == Precision::f64 ? ElemType::f64 : ElemType::f32;
}

ElemType value_code_type(int coding, Precision precision) {
  switch (coding) {
    case kValuesTable8:
      return ElemType::u8;
    case kValuesTable16:
      return ElemType::u16;
    case kValuesF32:
    case kValuesF32Rounded:
      return ElemType::f32;
    case kValuesBf16:
      return ElemType::u16;
    default:
      return value_elem_type(precision);
  }
}

ValueArgs value_args(int coding, const std::string& name, const std::string& array) {
  using K = KernelParam::Kind;
  ValueArgs v;
  switch (coding) {
    case kValuesPlain:
      v.pass = name;
      v.params = {{K::array, array}};
      break;
    case kValuesUnit:
      v.pass = "spmvc::UnitValues<Value>{}";
      break;
    case kValuesTable8:
    case kValuesTable16: {
      const char* code = coding == kValuesTable8 ? "unsigned char" : "unsigned short";
      v.pass = fmt::format("spmvc::TableValues<Value, {C}>{{{N}, {N}_table}}", fmt::arg("C", code),
                           fmt::arg("N", name));
      v.params = {{K::array, array}, {K::array, array + "_table"}};
      break;
    }
    case kValuesF32:
    case kValuesF32Rounded:
      v.pass = fmt::format("spmvc::NarrowValues<Value, float>{{{}}}", name);
      v.params = {{K::array, array}};
      break;
    case kValuesBf16:
      v.pass = fmt::format("spmvc::Bf16Values<Value>{{{}}}", name);
      v.params = {{K::array, array}};
      break;
    default:
      throw InternalError(fmt::format("value coding {} has no kernel arguments", coding));
  }
  return v;
}

}  // namespace spmvc::formats

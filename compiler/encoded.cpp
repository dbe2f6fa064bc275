#include <numeric>

#include "spmvc/error.hpp"
#include "spmvc/kernel.hpp"

namespace spmvc {

std::string_view to_string(ElemType t) {
  switch (t) {
    case ElemType::i32:
      return "i32";
    case ElemType::i64:
      return "i64";
    case ElemType::u32:
      return "u32";
    case ElemType::u64:
      return "u64";
    case ElemType::f32:
      return "f32";
    case ElemType::f64:
      return "f64";
  }
  throw InternalError("unknown element type");
}

int size_of(ElemType t) {
  switch (t) {
    case ElemType::i32:
    case ElemType::u32:
    case ElemType::f32:
      return 4;
    case ElemType::i64:
    case ElemType::u64:
    case ElemType::f64:
      return 8;
  }
  throw InternalError("unknown element type");
}

std::int64_t Encoded::total_bytes() const {
  std::int64_t total = 0;
  for (const EncodedArray& a : arrays) total += static_cast<std::int64_t>(a.bytes.size());
  return total;
}

const EncodedArray& Encoded::array(std::string_view name) const {
  for (const EncodedArray& a : arrays) {
    if (a.name == name) return a;
  }
  throw InternalError("encoded " + format + " matrix has no array named " + std::string(name));
}

}  // namespace spmvc

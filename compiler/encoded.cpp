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
    case ElemType::u8:
      return "u8";
    case ElemType::u16:
      return "u16";
  }
  throw InternalError("unknown element type");
}

int size_of(ElemType t) {
  switch (t) {
    case ElemType::u8:
      return 1;
    case ElemType::u16:
      return 2;
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
  for (const EncodedArray& a : arrays) {
    if (!a.scratch) total += static_cast<std::int64_t>(a.bytes.size());
  }
  return total;
}

std::vector<KernelLaunch> KernelSource::launches() const {
  std::vector<KernelLaunch> all = pre_launches;
  all.push_back({kernel_name, params, grid, block, shared_bytes});
  all.insert(all.end(), post_launches.begin(), post_launches.end());
  return all;
}

const EncodedArray& Encoded::array(std::string_view name) const {
  for (const EncodedArray& a : arrays) {
    if (a.name == name) return a;
  }
  throw InternalError("encoded " + format + " matrix has no array named " + std::string(name));
}

}  // namespace spmvc

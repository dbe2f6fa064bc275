// Generator specs (gen::from_spec, what `spmvc gen SPEC` and every command's matrix argument
// take): a spec is refused with an InputError or gives a valid matrix. The budget is a quarter
// of the readers': a spec whose matrix fits is generated in full on every run, so a smaller
// budget keeps executions fast while the size checks are exercised the same way.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"

using namespace spmvc;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::set_budget("16777216");  // 16 MiB
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view spec(reinterpret_cast<const char*>(data), size);
  (void)gen::is_spec(spec);
  try {
    validate(gen::from_spec(spec), "fuzz");
  } catch (const InputError&) {
  }
  return 0;
}

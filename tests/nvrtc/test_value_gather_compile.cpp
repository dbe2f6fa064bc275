// The update_values unit (templates/value_gather.cuh) compiles to an sm_90 CUBIN without spills,
// with every entry point the runtime launches (the rounding gathers of mixed precision included).
#include <doctest/doctest.h>

#include "nvrtc_support.hpp"
#include "spmvc/compiler/value_update.hpp"
#include "spmvc/error.hpp"

using namespace spmvc;

TEST_CASE("value gather: the unit compiles without spills, every entry point in the image") {
  const KernelSource k = compiler::value_gather_source();
  test::check_compiles(k);
  const runtime::Cubin cubin = runtime::compile_cubin(k, "sm_90");
  int entries = 0;
  for (const ElemType index : {ElemType::i32, ElemType::i64}) {
    for (const auto& [in, out] :
         {std::pair{ElemType::f64, ElemType::f64}, std::pair{ElemType::f32, ElemType::f32},
          std::pair{ElemType::f64, ElemType::f32}, std::pair{ElemType::u8, ElemType::u8},
          std::pair{ElemType::u16, ElemType::u16}}) {
      const std::string entry = compiler::value_gather_entry(index, in, out);
      CAPTURE(entry);
      CHECK(cubin.log.find(entry) != std::string::npos);
      ++entries;
    }
  }
  for (const ElemType in : {ElemType::f64, ElemType::f32}) {
    const std::string entry = compiler::check_ones_entry(in);
    CAPTURE(entry);
    CHECK(cubin.log.find(entry) != std::string::npos);
    ++entries;
  }
  for (const ElemType index : {ElemType::i32, ElemType::i64}) {
    for (const auto& [in, out] :
         {std::pair{ElemType::f64, ElemType::f32}, std::pair{ElemType::f32, ElemType::u16}}) {
      const std::string entry = compiler::value_round_entry(index, in, out);
      CAPTURE(entry);
      CHECK(cubin.log.find(entry) != std::string::npos);
      ++entries;
    }
  }
  CHECK(entries == 16);
  CHECK_THROWS_AS((void)compiler::value_gather_entry(ElemType::u64, ElemType::f64, ElemType::f64),
                  InternalError);
}

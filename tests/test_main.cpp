// Shared doctest main. GPU tests call spmvc::test::require_device(), which records that the
// device is absent; the run then exits 77 (ctest: skipped) instead of passing vacuously.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

#include "test_support.hpp"

int main(int argc, char** argv) {
  // The tests check the kernels they compile: a tiered compile (Options::tiered) would run the
  // generic tier's kernel in their place while the specialised one compiles. Tests of the tiers
  // ask for them explicitly; SPMVC_TIERED set in the environment still wins.
  ::setenv("SPMVC_TIERED", "0", /*overwrite=*/0);
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  if (rc == 0 && spmvc::test::device_was_missing()) return 77;
  return rc;
}

namespace spmvc::test {
namespace {
bool g_device_missing = false;
}
void mark_device_missing() { g_device_missing = true; }
bool device_was_missing() { return g_device_missing; }
}  // namespace spmvc::test

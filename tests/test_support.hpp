// Helpers shared by the test executables.
#pragma once

#include <filesystem>
#include <string>

namespace spmvc::test {

/// Directory of small hand-written test inputs (tests/data).
inline std::filesystem::path data_dir() { return SPMVC_TEST_DATA; }

/// ../shared/matrices beside the project, or empty when absent (a user's clone has none).
inline std::filesystem::path shared_matrices() {
  std::filesystem::path p = SPMVC_SHARED_MATRICES;
  return std::filesystem::is_directory(p) ? p : std::filesystem::path{};
}

/// Records that a GPU test found no device; test_main then exits 77 (skipped).
void mark_device_missing();
bool device_was_missing();

}  // namespace spmvc::test

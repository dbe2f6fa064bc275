#include "spmvc/memory_budget.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "spmvc/error.hpp"

namespace spmvc {

namespace {

constexpr std::uint64_t kFallbackBudget = std::uint64_t{8} << 30;
constexpr const char* kBudgetVariable = "SPMVC_MEMORY_BUDGET";

}  // namespace

std::uint64_t memory_budget() {
  if (const char* env = std::getenv(kBudgetVariable); env != nullptr && *env != '\0') {
    const std::string_view text(env);
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || ptr != text.data() + text.size() || v == 0) {
      throw InputError(kBudgetVariable, 0,
                       fmt::format("'{}' is not a positive number of bytes", text));
    }
    return v;
  }
  // Half of physical memory: the matrix is rarely the only thing a process holds (the inspector,
  // the encoded copy and the caller's own data come on top), and a budget near all of memory
  // would let the kernel's OOM killer, not an error message, have the last word.
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return kFallbackBudget;
  return static_cast<std::uint64_t>(pages) / 2 * static_cast<std::uint64_t>(page_size);
}

void check_memory_budget(const std::string& source, std::uint64_t line, const std::string& what,
                         double bytes) {
  const std::uint64_t budget = memory_budget();
  if (!(bytes > static_cast<double>(budget))) return;
  throw InputError(source, line,
                   fmt::format("{}: that needs about {:.0f} bytes ({:.3g} GB), over the memory "
                               "budget of {} bytes (set {} to change it)",
                               what, bytes, bytes / 1e9, budget, kBudgetVariable));
}

}  // namespace spmvc

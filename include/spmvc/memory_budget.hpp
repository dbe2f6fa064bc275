// How much host memory the one-time work on one matrix may take, and the check that refuses a
// matrix, file or generator spec whose declared size would need more. Sizes written in a file's
// header or a spec cost a few bytes to state; checking them before allocating turns a request
// for tens of gigabytes into an InputError instead of an out-of-memory kill.
#pragma once

#include <cstdint>
#include <string>

namespace spmvc {

/// The budget in bytes: $SPMVC_MEMORY_BUDGET when set (a positive integer number of bytes; any
/// other value is an InputError naming the variable), else half the machine's physical memory
/// (sysconf), or 8 GiB where that cannot be read. Read on every call, so tests can change it.
std::uint64_t memory_budget();

/// Throws InputError(source, line, ...) when `bytes` exceeds memory_budget(). `what` says what
/// was declared, e.g. "the size line declares 2147483647 x 1 with 0 entries"; the message adds
/// the bytes it needs and the budget. `bytes` is a double so estimates never overflow.
void check_memory_budget(const std::string& source, std::uint64_t line, const std::string& what,
                         double bytes);

}  // namespace spmvc

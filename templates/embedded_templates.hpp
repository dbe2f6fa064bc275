// The kernel templates of this folder, embedded at build time (see cmake/embed_templates.cmake).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace spmvc::templates {

/// (include name, text) of every template, e.g. ("spmvc/csr.cuh", "..."), sorted by name.
const std::vector<std::pair<std::string, std::string>>& all();

}  // namespace spmvc::templates

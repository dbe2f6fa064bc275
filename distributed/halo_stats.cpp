// Halo statistics of row partitions, computed serially (no MPI): for each rank count and
// partition kind, the largest ghost vector, the most values a rank sends, neighbours and the
// share of nonzeros in ghost blocks. scripts/model/dist-scaling.py reads the JSON.
//
//   spmvc_halo_stats MATRIX|SPEC [--ranks 2,4,8,16] [--partition block,metis] [--name NAME]
//
// Prints one JSON object: {"matrix", "rows", "nnz", "runs": [{"partition", "ranks", ...}]}.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "spmvc/distributed_layout.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: spmvc_halo_stats MATRIX|SPEC [--ranks 2,4,8] [--partition block,metis] "
                 "[--name NAME]\n");
    return 2;
  }
  std::string matrix = argv[1], ranks_text = "2,4,8,16", kinds_text = "block,metis", name;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--ranks")
      ranks_text = argv[i + 1];
    else if (opt == "--partition")
      kinds_text = argv[i + 1];
    else if (opt == "--name")
      name = argv[i + 1];
    else {
      std::fprintf(stderr, "spmvc_halo_stats: unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  try {
    const spmvc::CsrMatrix a = spmvc::gen::is_spec(matrix) ? spmvc::gen::from_spec(matrix)
                                                           : spmvc::read_matrix_market(matrix);
    nlohmann::json out = {{"matrix", name.empty() ? matrix : name},
                          {"rows", a.nrows},
                          {"nnz", a.nnz()},
                          {"runs", nlohmann::json::array()}};
    for (const std::string& kind : split_list(kinds_text))
      for (const std::string& r : split_list(ranks_text)) {
        const int nranks = std::stoi(r);
        const auto own = spmvc::distributed::make_partition(a, kind, nranks);
        const auto h = spmvc::distributed::halo_stats(a, own);
        out["runs"].push_back({{"partition", kind},
                               {"ranks", nranks},
                               {"max_rows", h.max_rows},
                               {"max_nnz", h.max_nnz},
                               {"max_ghosts", h.max_ghosts},
                               {"mean_ghosts", h.mean_ghosts},
                               {"max_send", h.max_send},
                               {"max_neighbours", h.max_neighbours},
                               {"mean_neighbours", h.mean_neighbours},
                               {"ghost_nnz_share", h.ghost_nnz_share}});
      }
    std::printf("%s\n", out.dump(1).c_str());
  } catch (const spmvc::Error& e) {
    std::fprintf(stderr, "spmvc_halo_stats: error: %s\n", e.what());
    return 1;
  } catch (const std::invalid_argument&) {
    std::fprintf(stderr, "spmvc_halo_stats: error: --ranks takes a comma list of integers\n");
    return 2;
  }
  return 0;
}

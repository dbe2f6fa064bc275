// The distributed operator on the GPU, under mpirun (2 and 4 ranks; with one GPU they share it
// through the host-staged MPI transport). Exits 77 on every rank without a device.
//
// Rank 0 prints one line per matrix and partition ("dist-check ...", what scripts/gpu/dist-check
// tabulates). SPMVC_MATRIX_DIR names the public matrices' folder (with index.csv);
// SPMVC_DIST_ONLY, a regex, limits the matrices.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <vector>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/distributed.hpp"
#include "spmvc/generators.hpp"

namespace dist = spmvc::distributed;
using spmvc::CsrMatrix;

namespace {

bool g_no_device = false;

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c) {
  int s = 0;
  MPI_Comm_size(c, &s);
  return s;
}

std::filesystem::path matrix_dir() {
  if (const char* d = std::getenv("SPMVC_MATRIX_DIR"); d != nullptr && *d != '\0') return d;
  return SPMVC_SHARED_MATRICES;
}

// The public matrices this test covers: square, at least 10k nonzeros once expanded (index.csv).
std::vector<std::string> public_matrices() {
  std::ifstream in(matrix_dir() / "index.csv");
  std::vector<std::string> names;
  const char* only = std::getenv("SPMVC_DIST_ONLY");
  const std::regex filter(only != nullptr ? only : ".*");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::vector<std::string> f;
    for (std::string item; f.size() < 7 && std::getline(fields, item, ',');) f.push_back(item);
    if (f.size() < 7 || f[2] != f[3] || std::stoll(f[5]) < 10000) continue;
    if (f[6] == "complex") continue;
    if (!std::regex_search(f[0], filter)) continue;
    if (std::filesystem::exists(matrix_dir() / (f[0] + ".mtx.xz"))) names.push_back(f[0]);
  }
  return names;
}

std::vector<double> vector_of(std::int64_t n, double scale, double shift) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = shift + scale * static_cast<double>(static_cast<int>(i % 17) - 8);
  return v;
}

struct Result {
  double vs_single = 0, vs_host = 0;
  dist::RankInfo info;
};

// y = 1.5 A x - 0.5 y0 distributed (rank 0 reads `a`), against spmvc's single-GPU operator and
// the host reference on rank 0. Returns the errors on rank 0.
Result compare(const CsrMatrix& a, const std::string& kind, MPI_Comm comm,
               dist::Transport transport = dist::Transport::mpi) {
  const int rank = rank_of(comm), size = size_of(comm);
  dist::RowOwnership root_own;
  // A partition rank 0 cannot make (a part left without rows) fails the case on every rank,
  // instead of leaving the others waiting for the ownership.
  int partitioned = 1;
  if (rank == 0) try {
      root_own = dist::make_partition(a, kind, size);
    } catch (const spmvc::InputError& e) {
      FAIL_CHECK(e.what());
      partitioned = 0;
    }
  MPI_Bcast(&partitioned, 1, MPI_INT, 0, comm);
  Result r;
  if (partitioned == 0) {
    r.vs_single = r.vs_host = std::numeric_limits<double>::infinity();
    return r;
  }
  const auto own = dist::broadcast_ownership(rank == 0 ? &root_own : nullptr, comm);
  const CsrMatrix mine = dist::scatter_rows(rank == 0 ? &a : nullptr, own, comm);
  dist::DistOptions options;
  options.transport = transport;
  const dist::Operator op = dist::compile(mine, own, comm, options);
  const std::int64_t n = own.global_rows();
  const std::vector<double> x_global = rank == 0 ? vector_of(n, 0.125, 1.0) : std::vector<double>{};
  const std::vector<double> y0_global =
      rank == 0 ? vector_of(n, -0.5, 0.25) : std::vector<double>{};
  const std::vector<double> x = dist::scatter_vector(x_global, own, comm);
  std::vector<double> y = dist::scatter_vector(y0_global, own, comm);
  op.apply_host(x, y, 1.5, -0.5);
  const std::vector<double> y_dist = dist::gather_vector(y, own, comm);
  r.info = op.info();
  // The largest ghost vector over the ranks, for the report.
  MPI_Allreduce(MPI_IN_PLACE, &r.info.ghosts, 1, MPI_INT64_T, MPI_MAX, comm);
  if (rank == 0) {
    spmvc::Options single_options;
    const spmvc::Operator single = spmvc::compile(a, single_options);
    std::vector<double> y_single = y0_global, y_host = y0_global;
    single.apply_host(x_global, y_single, 1.5, -0.5);
    spmvc::compiler::csr_reference_spmv(a, x_global, y_host, 1.5, -0.5);
    r.vs_single = spmvc::compiler::relative_error(y_dist, y_single);
    r.vs_host = spmvc::compiler::relative_error(y_dist, y_host);
  }
  return r;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

}  // namespace

TEST_CASE("distributed y equals the single-GPU operator's on the public matrices") {
  if (g_no_device) return;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), size = size_of(comm);
  const std::vector<std::string> names = public_matrices();
  if (rank == 0)
    MESSAGE(fmt::format("{} public matrices from {}", names.size(), matrix_dir().string()));
  for (const std::string& name : names)
    for (const std::string kind : {"block", "metis"}) {
      CAPTURE(name);
      CAPTURE(kind);
      CsrMatrix a;
      Result r;
      try {
        if (rank == 0) a = spmvc::read_matrix_market(matrix_dir() / (name + ".mtx.xz"));
        r = compare(a, kind, comm);
      } catch (const std::exception& e) {
        // One rank's failure would leave the others waiting in a collective: end them all.
        std::fprintf(stderr, "rank %d: %s, %s partition: %s\n", rank, name.c_str(), kind.c_str(),
                     e.what());
        MPI_Abort(comm, 1);
      }
      if (rank == 0) {
        CHECK(r.vs_single <= 1e-12);
        CHECK(r.vs_host <= 1e-12);
        std::printf("dist-check %s %lld %s %d mpi %lld %.2e %.2e\n", name.c_str(),
                    static_cast<long long>(a.nnz()), kind.c_str(), size,
                    static_cast<long long>(r.info.ghosts), r.vs_single, r.vs_host);
        std::fflush(stdout);
      }
    }
}

TEST_CASE("the device exchange leaves x's values in the ghost vector") {
  if (g_no_device) return;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), size = size_of(comm);
  const CsrMatrix a = spmvc::gen::stencil_3d_27pt(20, 20, 20);
  for (const std::string kind : {"block", "metis"}) {
    CAPTURE(kind);
    const auto own = dist::make_partition(a, kind, size);  // every rank: deterministic
    const CsrMatrix mine = dist::extract_rows(a, own.rows_of(rank));
    const dist::Operator op = dist::compile(mine, own, comm);
    const std::vector<double> x_global = vector_of(a.nrows, 0.25, 3.0);
    std::vector<double> x;
    for (const std::int64_t g : own.rows_of(rank))
      x.push_back(x_global[static_cast<std::size_t>(g)]);
    void* dx = nullptr;
    REQUIRE(cudaMalloc(&dx, x.size() * sizeof(double)) == cudaSuccess);
    REQUIRE(cudaMemcpy(dx, x.data(), x.size() * sizeof(double), cudaMemcpyHostToDevice) ==
            cudaSuccess);
    op.exchange(dx);
    const std::vector<double> ghosts = op.ghost_values_host();
    std::int64_t wrong = 0;
    for (std::size_t k = 0; k < ghosts.size(); ++k)
      wrong += ghosts[k] != x_global[static_cast<std::size_t>(op.split().ghost_globals[k])];
    CHECK(wrong == 0);
    CHECK(op.ghost_count() > 0);
    cudaFree(dx);
  }
}

TEST_CASE("NCCL transport: refused with the ranks named when they share a GPU, else exact") {
  if (g_no_device || !dist::have_nccl()) return;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int size = size_of(comm);
  const CsrMatrix a = spmvc::gen::stencil_3d_7pt(24, 24, 24);
  if (device_count() < size) {
    CHECK_THROWS_WITH_AS(compare(a, "block", comm, dist::Transport::nccl),
                         doctest::Contains("share GPU"), spmvc::InputError);
    return;
  }
  const Result r = compare(a, "metis", comm, dist::Transport::nccl);
  if (rank_of(comm) == 0) CHECK(r.vs_single <= 1e-12);
}

TEST_CASE("each rank's blocks stay on the GPU select_device gave it") {
  if (g_no_device) return;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), size = size_of(comm);
  int selected = -1;
  REQUIRE(cudaGetDevice(&selected) == cudaSuccess);
  const CsrMatrix a = spmvc::gen::stencil_3d_7pt(16, 16, 16);
  const auto own = dist::make_partition(a, "block", size);
  const dist::Operator op = dist::compile(dist::extract_rows(a, own.rows_of(rank)), own, comm);
  int current = -1;
  REQUIRE(cudaGetDevice(&current) == cudaSuccess);
  CHECK(current == selected);
  // The ghost vector is memory of that GPU.
  cudaPointerAttributes at{};
  REQUIRE(cudaPointerGetAttributes(&at, op.ghost_values()) == cudaSuccess);
  CHECK(at.device == selected);
}

TEST_CASE("a ghost block is compiled over its ghost rows alone where they are few") {
  if (g_no_device) return;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), size = size_of(comm);
  // A slab of a 27-point stencil reads one plane of each neighbour: few of its rows hold ghost
  // entries. A random graph's rows nearly all do, and its ghost block stays whole.
  const CsrMatrix slab = spmvc::gen::from_spec("stencil27:n=24,contrast=100");
  const CsrMatrix graph = spmvc::gen::from_spec("random:n=4000,per_row=16");
  for (const CsrMatrix* a : {&slab, &graph}) {
    const auto own = dist::make_partition(*a, "block", size);
    const dist::Operator op = dist::compile(dist::extract_rows(*a, own.rows_of(rank)), own, comm);
    const CsrMatrix& ghost = op.split().ghost;
    std::int64_t with_entries = 0;
    for (std::int64_t i = 0; i < ghost.nrows; ++i) with_entries += ghost.row_length(i) > 0;
    if (size == 1) {
      CHECK(op.ghost_block() == nullptr);
      continue;
    }
    REQUIRE(op.ghost_block() != nullptr);
    if (a == &slab) {
      CHECK(with_entries * 2 <= op.local_rows());
      CHECK(op.ghost_block()->nrows() == with_entries);
    } else {
      CHECK(with_entries * 2 > op.local_rows());
      CHECK(op.ghost_block()->nrows() == op.local_rows());
    }
    // y = 1.5 A x - 0.5 y0 through the scatter of the compacted rows, against one GPU.
    const Result r = compare(*a, "block", comm);
    if (rank == 0) {
      CHECK(r.vs_single <= 1e-12);
      CHECK(r.vs_host <= 1e-12);
    }
    if (dist::have_nccl() && device_count() >= size) {
      const Result n = compare(*a, "block", comm, dist::Transport::nccl);
      if (rank == 0) CHECK(n.vs_single <= 1e-12);
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::setenv("SPMVC_TIERED", "0", 0);  // check the specialised kernels, as the other GPU tests
  const MPI_Comm comm = MPI_COMM_WORLD;
  g_no_device = !spmvc::device_available();
  int rc = 0;
  if (!g_no_device) {
    dist::select_device(comm);
    doctest::Context context(argc, argv);
    if (rank_of(comm) != 0) context.setOption("minimal", true);
    rc = context.run();
  } else if (rank_of(comm) == 0) {
    std::printf("no GPU: the distributed GPU tests are skipped\n");
  }
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, comm);
  MPI_Finalize();
  return g_no_device ? 77 : worst;
}

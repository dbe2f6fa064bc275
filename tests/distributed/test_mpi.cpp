// Everything of the distributed operator up to the GPU, run under mpirun with 2 and 4 ranks:
// the ownership and rows scattered from rank 0, the exchange plan derived over MPI, and the
// host-staged exchange moving the ghost values. Each rank builds the same matrices (the
// generators are deterministic), so it can check what MPI gave it against the serial answer.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <vector>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/distributed.hpp"
#include "spmvc/generators.hpp"

namespace dist = spmvc::distributed;
using spmvc::CsrMatrix;

namespace {

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

std::vector<double> test_x(std::int64_t n) {
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = 0.5 + 0.25 * static_cast<double>(i % 13) - 1e-3 * static_cast<double>(i % 7);
  return x;
}

struct Case {
  const char* name;
  CsrMatrix a;
};
std::vector<Case> cases() {
  return {{"stencil27 10^3", spmvc::gen::stencil_3d_27pt(10, 10, 10)},
          {"rmat scale 10", spmvc::gen::rmat(10, 8)},
          {"random 3000 x 3000", spmvc::gen::random_uniform(3000, 3000, 7)}};
}

}  // namespace

TEST_CASE("scatter, exchange plan and host-staged exchange over MPI") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), size = size_of(comm);
  for (const Case& c : cases())
    for (const char* kind : {"block", "metis"}) {
      CAPTURE(c.name);
      CAPTURE(kind);
      CAPTURE(rank);
      const CsrMatrix& a = c.a;
      // Rank 0 partitions; the others receive its ownership.
      dist::RowOwnership root_own;
      if (rank == 0) root_own = dist::make_partition(a, kind, size);
      const auto own = dist::broadcast_ownership(rank == 0 ? &root_own : nullptr, comm);
      const auto serial = dist::make_partition(a, kind, size);
      CHECK(own.owner == serial.owner);
      CHECK(own.counts == serial.counts);

      const CsrMatrix mine = dist::scatter_rows(rank == 0 ? &a : nullptr, own, comm);
      const CsrMatrix expected = dist::extract_rows(a, own.rows_of(rank));
      CHECK(mine.row_ptr == expected.row_ptr);
      CHECK(mine.col_idx == expected.col_idx);
      CHECK(mine.values == expected.values);

      // The plan MPI derived equals the one built from every rank's requests serially.
      const auto split = dist::split_rows(mine, own, rank);
      const auto plan = dist::exchange_plan(split, own, comm);
      std::vector<std::vector<std::int32_t>> asked_by;
      for (int q = 0; q < size; ++q) {
        const auto sq = dist::split_rows(dist::extract_rows(a, own.rows_of(q)), own, q);
        asked_by.push_back(dist::ghost_requests(sq, own)[static_cast<std::size_t>(rank)]);
      }
      const auto expected_plan = dist::make_exchange_plan(split, own, rank, asked_by);
      CHECK(plan.send_index == expected_plan.send_index);
      REQUIRE(plan.sends.size() == expected_plan.sends.size());
      for (std::size_t k = 0; k < plan.sends.size(); ++k) {
        CHECK(plan.sends[k].rank == expected_plan.sends[k].rank);
        CHECK(plan.sends[k].offset == expected_plan.sends[k].offset);
        CHECK(plan.sends[k].count == expected_plan.sends[k].count);
      }
      CHECK(plan.receives.size() == expected_plan.receives.size());

      // The host-staged exchange delivers x at every ghost column, fp64 and fp32.
      const std::vector<double> x_global = test_x(a.nrows);
      const std::vector<double> x =
          dist::scatter_vector(rank == 0 ? x_global : std::vector<double>{}, own, comm);
      REQUIRE(static_cast<std::int64_t>(x.size()) == own.counts[static_cast<std::size_t>(rank)]);
      std::vector<double> send(static_cast<std::size_t>(plan.send_count()));
      dist::pack(plan, x, send);
      std::vector<double> ghosts(static_cast<std::size_t>(plan.ghost_count), -7.0);
      dist::HostExchange ex(plan, comm);
      ex.start(send.data(), ghosts.data());
      ex.wait();
      std::int64_t wrong = 0;
      for (std::size_t k = 0; k < ghosts.size(); ++k)
        wrong += ghosts[k] != x_global[static_cast<std::size_t>(split.ghost_globals[k])];
      CHECK(wrong == 0);
      std::vector<float> send32(send.begin(), send.end()), ghosts32(ghosts.size(), -7.0F);
      dist::HostExchange ex32(plan, comm, 4);
      ex32.start(send32.data(), ghosts32.data());
      ex32.wait();
      std::int64_t wrong32 = 0;
      for (std::size_t k = 0; k < ghosts32.size(); ++k)
        wrong32 += ghosts32[k] !=
                   static_cast<float>(x_global[static_cast<std::size_t>(split.ghost_globals[k])]);
      CHECK(wrong32 == 0);

      // Local block times x plus ghost block times the ghosts, gathered: A x.
      std::vector<double> yl(x.size()), yg(x.size());
      spmvc::compiler::csr_reference_spmv(split.local, x, yl);
      if (split.ghost.nnz() > 0) spmvc::compiler::csr_reference_spmv(split.ghost, ghosts, yg);
      for (std::size_t i = 0; i < yl.size(); ++i) yl[i] += yg[i];
      const std::vector<double> y = dist::gather_vector(yl, own, comm);
      if (rank == 0) {
        std::vector<double> ref(x_global.size());
        spmvc::compiler::csr_reference_spmv(a, x_global, ref);
        CHECK(spmvc::compiler::relative_error(y, ref) <= 1e-14);
      }
    }
}

TEST_CASE("a partition for another number of ranks is refused on every rank") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), size = size_of(comm);
  const auto wrong = dist::block_partition(100, size + 1);
  const std::string expected =
      fmt::format("the partition has {} parts, but the communicator has {} ranks", size + 1, size);
  CHECK_THROWS_WITH_AS(dist::broadcast_ownership(rank == 0 ? &wrong : nullptr, comm),
                       doctest::Contains(expected.c_str()), spmvc::InputError);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  doctest::Context context(argc, argv);
  // Rank 0 reports in full; the others print their failures only.
  if (rank_of(MPI_COMM_WORLD) != 0) context.setOption("minimal", true);
  int rc = context.run();
  // Every rank's verdict counts: fail on all if any failed.
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return context.shouldExit() ? rc : worst;
}

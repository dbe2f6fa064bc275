// Partitions, the local/ghost split and the exchange plan, on the host without MPI: small
// matrices checkable by hand, and a whole exchange simulated rank by rank.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/distributed_layout.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"

namespace dist = spmvc::distributed;
using spmvc::CsrMatrix;

namespace {

CsrMatrix from_triplets(std::int64_t n, std::vector<std::vector<std::pair<int, double>>> rows) {
  CsrMatrix a;
  a.nrows = a.ncols = n;
  for (auto& row : rows) {
    for (auto [c, v] : row) {
      a.col_idx.push_back(c);
      a.values.push_back(v);
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// The 4x4 matrix of the hand-checked cases; rows 0 and 2 go to rank 0, rows 1 and 3 to rank 1.
CsrMatrix four_by_four() {
  return from_triplets(4, {{{0, 1}, {1, 2}, {3, 3}},
                           {{0, 4}, {1, 5}, {2, 6}},
                           {{1, 7}, {2, 8}, {3, 9}},
                           {{0, 10}, {3, 11}}});
}

// Every rank's split and plan, the requests delivered as the MPI all-to-all would.
struct World {
  std::vector<dist::GhostSplit> splits;
  std::vector<dist::ExchangePlan> plans;
};
World build_world(const CsrMatrix& a, const dist::RowOwnership& own) {
  World w;
  std::vector<std::vector<std::vector<std::int32_t>>> requests;
  for (int r = 0; r < own.nranks; ++r) {
    w.splits.push_back(dist::split_rows(dist::extract_rows(a, own.rows_of(r)), own, r));
    requests.push_back(dist::ghost_requests(w.splits.back(), own));
  }
  for (int r = 0; r < own.nranks; ++r) {
    std::vector<std::vector<std::int32_t>> asked_by;
    for (int q = 0; q < own.nranks; ++q)
      asked_by.push_back(requests[static_cast<std::size_t>(q)][static_cast<std::size_t>(r)]);
    w.plans.push_back(
        dist::make_exchange_plan(w.splits[static_cast<std::size_t>(r)], own, r, asked_by));
  }
  return w;
}

// The exchange done by hand: each rank packs its x, each receive copies the matching send.
std::vector<std::vector<double>> exchange(const World& w, const dist::RowOwnership& own,
                                          const std::vector<double>& x_global) {
  std::vector<std::vector<double>> packed;
  for (int r = 0; r < own.nranks; ++r) {
    std::vector<double> x_local;
    for (const std::int64_t g : own.rows_of(r)) x_local.push_back(x_global[g]);
    const auto& plan = w.plans[static_cast<std::size_t>(r)];
    std::vector<double> send(static_cast<std::size_t>(plan.send_count()));
    dist::pack(plan, x_local, send);
    packed.push_back(send);
  }
  std::vector<std::vector<double>> ghosts;
  for (int r = 0; r < own.nranks; ++r) {
    const auto& plan = w.plans[static_cast<std::size_t>(r)];
    std::vector<double> g(static_cast<std::size_t>(plan.ghost_count), -1.0);
    for (const auto& recv : plan.receives) {
      const auto& peer = w.plans[static_cast<std::size_t>(recv.rank)];
      const auto send = std::find_if(peer.sends.begin(), peer.sends.end(),
                                     [&](const auto& s) { return s.rank == r; });
      REQUIRE(send != peer.sends.end());
      REQUIRE(send->count == recv.count);
      std::copy_n(packed[static_cast<std::size_t>(recv.rank)].begin() + send->offset, recv.count,
                  g.begin() + recv.offset);
    }
    ghosts.push_back(g);
  }
  return ghosts;
}

}  // namespace

TEST_CASE("block partition: contiguous, sizes differ by at most one") {
  const auto own = dist::block_partition(10, 3);
  CHECK(own.counts == std::vector<std::int64_t>{3, 3, 4});
  CHECK(own.owner == std::vector<std::int32_t>{0, 0, 0, 1, 1, 1, 2, 2, 2, 2});
  CHECK(own.local_index == std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 3});
  CHECK(own.rows_of(1) == std::vector<std::int64_t>{3, 4, 5});
}

TEST_CASE("ownership from owners: local indices follow the global order; bad owners named") {
  const auto own = dist::RowOwnership::from_owners(2, {1, 0, 1, 0, 0});
  CHECK(own.local_index == std::vector<std::int32_t>{0, 0, 1, 1, 2});
  CHECK(own.counts == std::vector<std::int64_t>{3, 2});
  CHECK_THROWS_WITH_AS(dist::RowOwnership::from_owners(2, {0, 2, 1}),
                       doctest::Contains("row 1 is given to rank 2, outside [0, 2)"),
                       spmvc::InputError);
}

TEST_CASE("make_partition: unknown kinds and ranks left without rows are input errors") {
  const CsrMatrix a = four_by_four();
  CHECK_THROWS_WITH_AS(dist::make_partition(a, "cyclic", 2),
                       doctest::Contains("unknown partition 'cyclic' (block, metis)"),
                       spmvc::InputError);
  CHECK_THROWS_WITH_AS(dist::make_partition(a, "block", 5),
                       doctest::Contains("rank 0 of 5 gets no rows of a 4-row matrix"),
                       spmvc::InputError);
}

TEST_CASE("METIS partition: balanced, deterministic, smaller halo than blocks on a 2D grid") {
  const CsrMatrix a = spmvc::gen::stencil_2d_5pt(32, 32);
  const auto metis = dist::metis_partition(a, 8);
  CHECK(metis.owner == dist::metis_partition(a, 8).owner);
  for (const std::int64_t c : metis.counts) {
    CHECK(c >= 118);  // 1024 / 8 = 128, METIS's default imbalance is 3% (<= 132)
    CHECK(c <= 132);
  }
  // Strips of 4 grid rows read 2 x 32 ghosts; METIS's compact parts read fewer.
  const auto block = dist::halo_stats(a, dist::block_partition(a.nrows, 8));
  const auto cut = dist::halo_stats(a, metis);
  CHECK(block.max_ghosts == 64);
  CHECK(cut.max_ghosts < block.max_ghosts);
  CHECK_THROWS_WITH_AS(dist::metis_partition(spmvc::gen::random_uniform(6, 8, 2), 2),
                       doctest::Contains("matrix is 6x8, not square"), spmvc::InputError);
}

TEST_CASE("split: local block in owned columns, ghost block over compacted ghosts (by hand)") {
  const CsrMatrix a = four_by_four();
  const auto own = dist::RowOwnership::from_owners(2, {0, 1, 0, 1});
  const auto s0 = dist::split_rows(dist::extract_rows(a, own.rows_of(0)), own, 0);
  CHECK(s0.local.row_ptr == std::vector<std::int64_t>{0, 1, 2});
  CHECK(s0.local.col_idx == std::vector<std::int32_t>{0, 1});
  CHECK(s0.local.values == std::vector<double>{1, 8});
  CHECK(s0.ghost_globals == std::vector<std::int64_t>{1, 3});
  CHECK(s0.ghost_offsets == std::vector<std::int64_t>{0, 0, 2});
  CHECK(s0.ghost.ncols == 2);
  CHECK(s0.ghost.row_ptr == std::vector<std::int64_t>{0, 2, 4});
  CHECK(s0.ghost.col_idx == std::vector<std::int32_t>{0, 1, 0, 1});
  CHECK(s0.ghost.values == std::vector<double>{2, 3, 7, 9});
  const auto s1 = dist::split_rows(dist::extract_rows(a, own.rows_of(1)), own, 1);
  CHECK(s1.local.col_idx == std::vector<std::int32_t>{0, 1});
  CHECK(s1.local.values == std::vector<double>{5, 11});
  CHECK(s1.ghost_globals == std::vector<std::int64_t>{0, 2});
  CHECK(s1.ghost.col_idx == std::vector<std::int32_t>{0, 1, 0});
  CHECK(s1.ghost.values == std::vector<double>{4, 6, 10});
}

TEST_CASE("split: ghosts ordered by owner then owner's index, rows kept sorted") {
  // Rank 0 owns rows 1 and 4 and reads every column: ghosts from rank 1 (rows 2, 5) come
  // before those of rank 2 (rows 0, 3), though 0 and 3 are smaller global columns.
  std::vector<std::vector<std::pair<int, double>>> rows(6);
  for (int c = 0; c < 6; ++c) rows[1].push_back({c, c + 1.0});
  rows[4] = {{4, 1.0}};
  for (int r : {0, 2, 3, 5}) rows[static_cast<std::size_t>(r)] = {{r, 1.0}};
  const CsrMatrix a = from_triplets(6, rows);
  const auto own = dist::RowOwnership::from_owners(3, {2, 0, 1, 2, 0, 1});
  const auto s = dist::split_rows(dist::extract_rows(a, own.rows_of(0)), own, 0);
  CHECK(s.ghost_globals == std::vector<std::int64_t>{2, 5, 0, 3});
  CHECK(s.ghost_offsets == std::vector<std::int64_t>{0, 0, 2, 4});
  // Row 1's ghost entries: columns 0,2,3,5 -> ghost positions 2,0,3,1, stored sorted.
  CHECK(s.ghost.col_idx == std::vector<std::int32_t>{0, 1, 2, 3});
  CHECK(s.ghost.values == std::vector<double>{3, 6, 1, 4});
  CHECK(s.local.col_idx == std::vector<std::int32_t>{0, 1, 1});
  CHECK(s.local.values == std::vector<double>{2, 5, 1});
  const auto asks = dist::ghost_requests(s, own);
  CHECK(asks[1] == std::vector<std::int32_t>{0, 1});
  CHECK(asks[2] == std::vector<std::int32_t>{0, 1});
}

TEST_CASE("split: bad shapes are input errors naming the rank") {
  const CsrMatrix a = four_by_four();
  const auto own = dist::block_partition(4, 2);
  CsrMatrix wide = dist::extract_rows(a, own.rows_of(0));
  wide.ncols = 5;
  CHECK_THROWS_WITH_AS(
      dist::split_rows(wide, own, 0),
      doctest::Contains("rank 0's rows: 5 columns, but the row ownership covers 4"),
      spmvc::InputError);
  CHECK_THROWS_WITH_AS(
      dist::split_rows(dist::extract_rows(a, std::vector<std::int64_t>{0}), own, 1),
      doctest::Contains("1 rows, but the row ownership gives rank 1 2 rows"), spmvc::InputError);
}

TEST_CASE("ghost rows: the rows with ghost entries and the block over them alone") {
  // A 5-row ghost block with empty rows around its entries, checked by hand.
  const CsrMatrix ghost = from_triplets(5, {{}, {{1, 2.0}, {3, 4.0}}, {}, {}, {{0, 7.0}}});
  const std::optional<dist::GhostRows> found = dist::ghost_rows(ghost);
  REQUIRE(found.has_value());
  const dist::GhostRows& g = *found;
  CHECK(g.rows == std::vector<std::int32_t>{1, 4});
  CHECK(g.block.nrows == 2);
  CHECK(g.block.ncols == 5);
  CHECK(g.block.row_ptr == std::vector<std::int64_t>{0, 2, 3});
  CHECK(g.block.col_idx == std::vector<std::int32_t>{1, 3, 0});
  CHECK(g.block.values == std::vector<double>{2.0, 4.0, 7.0});
  // A slab of ten planes of a 3D grid: its ghost block's rows are its two outer planes, and
  // the compacted block's product scattered to them is the whole block's.
  const CsrMatrix a = spmvc::gen::stencil_3d_7pt(6, 5, 40);
  const auto own = dist::block_partition(a.nrows, 4);
  const dist::GhostSplit s = dist::split_rows(dist::extract_rows(a, own.rows_of(1)), own, 1);
  const std::optional<dist::GhostRows> found_slab = dist::ghost_rows(s.ghost);
  REQUIRE(found_slab.has_value());
  const dist::GhostRows& slab = *found_slab;
  CHECK(slab.block.nnz() == s.ghost.nnz());
  CHECK(slab.rows.size() == 60);
  CHECK(s.ghost.nrows == 300);
  std::vector<double> x(static_cast<std::size_t>(s.ghost.ncols));
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = 0.5 + static_cast<double>(k % 7);
  std::vector<double> whole(static_cast<std::size_t>(s.ghost.nrows), -1.0);
  std::vector<double> part(slab.rows.size());
  spmvc::compiler::csr_reference_spmv(s.ghost, x, whole, 1.0, 1.0);
  spmvc::compiler::csr_reference_spmv(slab.block, x, part);
  std::vector<double> scattered(whole.size(), -1.0);
  for (std::size_t i = 0; i < slab.rows.size(); ++i)
    scattered[static_cast<std::size_t>(slab.rows[i])] += part[i];
  CHECK(scattered == whole);
  // Entries in more than half the rows: the block stays whole.
  CHECK_FALSE(dist::ghost_rows(from_triplets(3, {{{0, 1.0}}, {}, {{2, 1.0}}})).has_value());
  // No ghost entries: no rows, an empty block of the same width.
  const dist::GhostRows none = *dist::ghost_rows(from_triplets(3, {{}, {}, {}}));
  CHECK(none.rows.empty());
  CHECK(none.block.nrows == 0);
  CHECK(none.block.row_ptr == std::vector<std::int64_t>{0});
}

TEST_CASE("exchange plan: sends answer requests; bad requests named") {
  const CsrMatrix a = four_by_four();
  const auto own = dist::RowOwnership::from_owners(2, {0, 1, 0, 1});
  const World w = build_world(a, own);
  REQUIRE(w.plans[0].sends.size() == 1);
  CHECK(w.plans[0].sends[0].rank == 1);
  CHECK(w.plans[0].sends[0].count == 2);
  CHECK(w.plans[0].send_index == std::vector<std::int32_t>{0, 1});
  REQUIRE(w.plans[1].receives.size() == 1);
  CHECK(w.plans[1].receives[0].rank == 0);
  CHECK(w.plans[1].receives[0].offset == 0);
  std::vector<std::vector<std::int32_t>> asked(2);
  asked[1] = {0, 2};
  CHECK_THROWS_WITH_AS(dist::make_exchange_plan(w.splits[0], own, 0, asked),
                       doctest::Contains("rank 1 asks for local index 2 (entry 1), but this rank "
                                         "owns 2 rows"),
                       spmvc::InputError);
}

TEST_CASE("simulated exchange: every ghost value arrives; the blocks give A x") {
  const std::vector<CsrMatrix> matrices = {spmvc::gen::rmat(9, 8),
                                           spmvc::gen::stencil_3d_7pt(9, 8, 7),
                                           spmvc::gen::random_uniform(700, 700, 6)};
  for (const CsrMatrix& a : matrices)
    for (const char* kind : {"block", "metis"})
      for (int nranks : {2, 3, 5}) {
        CAPTURE(kind);
        CAPTURE(nranks);
        CAPTURE(a.nrows);
        const auto own = dist::make_partition(a, kind, nranks);
        const World w = build_world(a, own);
        std::vector<double> x(static_cast<std::size_t>(a.nrows));
        for (std::size_t i = 0; i < x.size(); ++i)
          x[i] = 1.0 + 0.001 * static_cast<double>(i % 997);
        const auto ghosts = exchange(w, own, x);
        std::vector<double> ref(x.size());
        spmvc::compiler::csr_reference_spmv(a, x, ref);
        std::vector<double> y(x.size());
        std::int64_t nnz = 0;
        for (int r = 0; r < nranks; ++r) {
          const auto& s = w.splits[static_cast<std::size_t>(r)];
          const auto& g = ghosts[static_cast<std::size_t>(r)];
          bool all_arrived = true;
          for (std::size_t k = 0; k < g.size(); ++k)
            all_arrived = all_arrived && g[k] == x[static_cast<std::size_t>(s.ghost_globals[k])];
          CHECK(all_arrived);
          const std::vector<std::int64_t> rows = own.rows_of(r);
          std::vector<double> x_local;
          for (const std::int64_t gr : rows) x_local.push_back(x[static_cast<std::size_t>(gr)]);
          std::vector<double> yl(rows.size()), yg(rows.size());
          spmvc::compiler::csr_reference_spmv(s.local, x_local, yl);
          if (s.ghost.nnz() > 0) spmvc::compiler::csr_reference_spmv(s.ghost, g, yg);
          for (std::size_t i = 0; i < rows.size(); ++i)
            y[static_cast<std::size_t>(rows[i])] = yl[i] + yg[i];
          nnz += s.local.nnz() + s.ghost.nnz();
        }
        CHECK(nnz == a.nnz());
        CHECK(spmvc::compiler::relative_error(y, ref) <= 1e-14);
      }
}

TEST_CASE("halo statistics of a hand-checkable grid") {
  // 8x8 grid in two strips of 4 grid rows: each reads the 8 values across the cut.
  const CsrMatrix a = spmvc::gen::stencil_2d_5pt(8, 8);
  const auto h = dist::halo_stats(a, dist::block_partition(64, 2));
  CHECK(h.max_rows == 32);
  CHECK(h.max_ghosts == 8);
  CHECK(h.max_send == 8);
  CHECK(h.max_neighbours == 1);
  CHECK(h.ghost_nnz_share == doctest::Approx(16.0 / 288.0));
}

TEST_CASE("shared GPUs are named for the NCCL transport") {
  const std::vector<std::string> shared = {"h1:0000:01:00.0", "h1:0000:02:00.0", "h1:0000:01:00.0"};
  CHECK(dist::shared_gpu_message(shared).find("ranks 0 and 2 share GPU h1:0000:01:00.0") == 0);
  const std::vector<std::string> apart = {"h1:0000:01:00.0", "h2:0000:01:00.0"};
  CHECK(dist::shared_gpu_message(apart).empty());
}

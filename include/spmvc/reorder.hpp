// Row and column orderings computed on the host before the first multiply, and the locality
// measures that say what an ordering bought. Every ordering is a permutation `perm` with
// "new row i is old row perm[i]"; a symmetric ordering renames the columns the same way.
//
//   spmvc::Ordering o = spmvc::compute_ordering(a, "rcm");
//   spmvc::CsrMatrix b = spmvc::permute(a, o);          // B = P A P^T
//   spmvc::LocalityStats before = spmvc::locality(a), after = spmvc::locality(b);
//
// The orderings (see reorder/README.md for the papers):
//   none   the identity.
//   rcm    reverse Cuthill-McKee on the pattern of A + A^T, a pseudo-peripheral
//          start in every connected component. Square only; symmetric.
//   amd    approximate minimum degree (SuiteSparse AMD) on the pattern of A + A^T. Square only;
//          symmetric.
//   metis  METIS nested dissection (METIS_NodeND) on the graph of A + A^T without its diagonal.
//          Square only; symmetric.
//   d      Pichel et al.'s distance ordering: a greedy chain of rows, each followed by the unplaced
//          row whose column set differs least from it (|C_i| + |C_j| - 2|C_i ∩ C_j|). Symmetric
//          on square matrices (the paper permutes "rows/columns"), rows_only on rectangular ones.
//   dset   the same chain over sets of `dset_rows` consecutive rows (a set's columns are the
//          union of its rows'); sets move whole, rows keep their order inside a set.
//   bar    BRO-aware reordering (Tang et al., SC13, section 3.4, Algorithm 2): rows gathered into
//          clusters of `bar_slice_height` rows that minimise the BRO-ELL index size (equation 1).
//          rows_only.
//   sort   rows sorted by decreasing length inside windows of `window` rows (stable), as
//          SELL-C-sigma does. rows_only.
//   degree vertices by decreasing column count (how often x reads them), ties in input order:
//          packs a power-law graph's hub columns together in x. Square only; symmetric.
//   dbg    degree-based grouping: vertices in groups of column count against the mean (hottest
//          first), the input order kept inside each group. Square only; symmetric.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/matrix.hpp"

namespace spmvc {

/// How an ordering's permutation applies to the matrix.
enum class PermutationKind {
  symmetric,  ///< B = P A P^T: rows and columns renamed alike (square matrices only)
  rows_only,  ///< B = P A: rows move, columns keep their numbers
  /// B = A Q^T: columns renumbered (perm has one entry per column), rows keep the caller's
  /// order, so a unit gathers x but writes y in place
  columns_only,
};

/// A computed ordering. `perm[i]` is the old index of new row i (and, for a symmetric ordering,
/// of new column i; for columns_only, of new column i alone).
struct Ordering {
  std::string name;  ///< one of ordering_names()
  PermutationKind kind = PermutationKind::rows_only;
  std::vector<std::int32_t> perm;
  double seconds = 0;  ///< wall time of compute_ordering, graph construction included
  std::string note;    ///< what was done to the input beyond the plain algorithm, for reports
  /// dbg: how many columns lead the new order in the groups at or above the mean column count
  /// (the hubs); 0 for the other orderings. A unit in the caller's order gathers only these
  /// into a workspace where its format allows (RowColumnMap::hub_columns).
  std::int64_t hub_columns = 0;
};

/// How a reordered matrix maps back to the caller's numbering: what a unit built for it needs to
/// take x and give y in the caller's order.
struct RowColumnMap {
  std::vector<std::int32_t> rows;  ///< reordered row i is the caller's row rows[i]
  /// Reordered column j is the caller's column cols[j]; empty when the columns kept the caller's
  /// numbering (x is then read in place).
  std::vector<std::int32_t> cols;
  /// With cols: the first hub_columns of the new column order are the ones worth gathering (the
  /// ordering's Ordering::hub_columns). Where the unit's format stores plain column indices,
  /// x is then read in two parts: those columns gathered into a workspace before the multiply,
  /// every other column read from x in place (codegen::split_x_reads). 0: x gathered whole.
  std::int64_t hub_columns = 0;
  /// With cols, in the caller's order: the columns some stored entry reads lead the new column
  /// order, the first packed_columns of it, in the ordering's order; the columns no entry reads
  /// follow (pack_read_columns). Only the leading ones are gathered, into a dense stretch of the
  /// workspace. 0: the columns are numbered as the ordering numbers them.
  std::int64_t packed_columns = 0;
  /// In the caller's order, where a symmetric ordering's rows hold empty ones: the rows with a
  /// stored entry lead the new row order, the first packed_rows of it, in the ordering's order,
  /// and the empty rows follow (nonempty_rows_first), so that the kernels' blocks hold the rows
  /// with work; y is written through the row map as before. 0: the rows are the ordering's.
  std::int64_t packed_rows = 0;
  /// Where the columns or the rows were packed: the symmetric ordering's own permutation (what
  /// ordering_of gives back; packed_like applies the packing again); empty otherwise.
  std::vector<std::int32_t> ordering{};
};

/// The ordering `map` records, named `name`: new row i is the caller's row map.rows[i], and the
/// columns move alike (symmetric) where the map renumbered them, else keep their numbers; a map
/// whose rows are the identity and whose columns moved records a columns_only ordering. A map
/// whose columns or rows were packed (RowColumnMap::ordering not empty) records the symmetric
/// ordering it was packed from: permute by it, then packed_like, gives the map's matrix again.
/// InputError for a map whose rows and columns moved differently.
Ordering ordering_of(const RowColumnMap& map, std::string name);

/// Moves `a`'s empty rows after the rows that hold a stored entry, each part in its order, and
/// returns the new row order (new row i was row order[i], a rows_only permutation); `*nonempty`
/// is the count of the first part. An empty row holds no entry, so the entries stay where they
/// are: only row_ptr changes.
std::vector<std::int32_t> nonempty_rows_first(CsrMatrix& a, std::int64_t* nonempty);

/// `moved` (the caller's matrix permuted by ordering_of(map)) packed as `map` records: its read
/// columns numbered first where map.packed_columns, its rows with entries first where
/// map.packed_rows. The pipeline packs so, and a trace of the values through the build's ordering
/// must too. InputError where the packing found differs from the map's counts.
CsrMatrix packed_like(CsrMatrix moved, const RowColumnMap& map);

/// The symmetric ordering `o` applied to the columns alone (B = A Q^T, columns_only); an ordering
/// already columns_only is returned as it is. InputError for a rows_only one.
Ordering columns_only(Ordering o);

/// True when `perm` is 0, 1, ..., n-1.
bool is_identity(std::span<const std::int32_t> perm);

struct ReorderOptions {
  /// sort: rows are sorted by length inside consecutive windows of this many rows
  /// (0: kDefaultSortWindow).
  int window = 0;
  /// bar: the BRO-ELL slice height h, which is also the cluster size.
  int bar_slice_height = 32;
  /// bar: the BRO symbol length alpha in bits (equation 1 counts whole symbols per row).
  int bar_symbol_bits = 32;
  /// bar: how many clusters Algorithm 2 weighs each row against (0: all of them, the paper's
  /// O(rows x clusters x row length) search). See reorder/bar_ordering.cpp for the grouping.
  int bar_candidate_clusters = 64;
  /// dset: rows per set of consecutive rows. 8 is no measured optimum: on wave, cage11 and
  /// G3_circuit no size from 2 to 32 gave the fewest x lines per warp on all three.
  int dset_rows = 8;
  /// Worker threads for the parallel parts (0: std::thread::hardware_concurrency()).
  int threads = 0;
};

/// Default window of `sort` (rows): long enough to fill slices of 32 with rows of equal length,
/// short enough that no row moves more than 1023 places from where the input order put it.
inline constexpr int kDefaultSortWindow = 1024;

/// The names compute_ordering accepts, in a fixed order.
std::vector<std::string> ordering_names();

/// Computes the named ordering of `a`. InputError for an unknown name, for a non-square matrix
/// given to rcm, amd or metis, and for bad options.
Ordering compute_ordering(const CsrMatrix& a, std::string_view name,
                          const ReorderOptions& options = {});

/// True for the orderings that rename rows and columns alike and so take square matrices only
/// (rcm, amd, metis, degree, dbg); compute_ordering refuses a rectangular matrix for them.
bool ordering_needs_square(std::string_view name);

/// True when `perm` holds every index 0..n-1 exactly once.
bool is_permutation(std::span<const std::int32_t> perm, std::int64_t n);

/// InputError from `source` unless `o` applies to `a`: `o.perm` a permutation of a's rows (of its
/// columns, for columns_only), and a symmetric ordering given a square matrix.
void check_ordering(const CsrMatrix& a, const Ordering& o, const std::string& source);

/// The reordered matrix: B = P A P^T (symmetric), B = P A (rows_only), with row i of B being
/// row perm[i] of A, or B = A Q^T (columns_only), with column j of B being column perm[j] of A.
/// Columns stay sorted within rows. InputError when `o.perm` is not a permutation of the rows
/// (of the columns, for columns_only), or a symmetric ordering meets a non-square matrix. With
/// `sources`, also where each of B's entries came from: B.values[k] is a.values[(*sources)[k]].
CsrMatrix permute(const CsrMatrix& a, const Ordering& o,
                  std::vector<std::int64_t>* sources = nullptr);

/// Size in bits of the BRO-ELL column-index stream of `a` cut into slices of `slice_height`
/// consecutive rows (the last slice may be shorter). Within a row the first column is coded as
/// its delta from 0 and each next one as col[j] - col[j-1]; a delta d takes max(1, bit length of
/// d) bits. A slice stores, for each position k below its longest row, the widest delta any of
/// its rows has at k (shorter rows pad at no extra cost); each row's stream is rounded up to
/// whole symbols of `symbol_bits`. So a slice of r rows costs
///   r * symbol_bits * ceil(sum_k maxwidth_k / symbol_bits)  bits,
/// which is the first term of equation 1 of the BRO paper times w * alpha.
std::int64_t bro_ell_index_bits(const CsrMatrix& a, int slice_height = 32, int symbol_bits = 32);

/// What an ordering does to the matrix's locality.
struct LocalityStats {
  std::int64_t bandwidth = 0;  ///< max |i - j| over nonzeros
  std::int64_t profile = 0;    ///< sum over rows of (i - first column of row i) where positive
  /// Distinct 128-byte cache lines of x touched by each group of 32 consecutive rows (a warp of
  /// one-row-per-thread kernels), averaged over the groups.
  double lines_per_warp = 0;
  /// BRO index space saving eta = 1 - C/O with O = 32 bits x nnz (plain 32-bit column indices)
  /// and C = bro_ell_index_bits(a, 32, 32). 0 for an empty matrix; negative when the
  /// compressed stream would be larger.
  double bro_eta = 0;
};

/// Locality measures of `a`, with x entries of `value_bytes` bytes (8 for fp64, 4 for fp32).
LocalityStats locality(const CsrMatrix& a, int value_bytes = 8);
/// LocalityStats::lines_per_warp alone, of `a`; and of permute(a, ordering) without building it
/// (InputError for an ordering that is not a permutation of a's rows, or, symmetric, of a square
/// a's). InputError for a value size below 1.
double lines_per_warp(const CsrMatrix& a, int value_bytes = 8);
double lines_per_warp(const CsrMatrix& a, const Ordering& ordering, int value_bytes = 8);

/// The columns that at least one stored entry of `a` reads, ascending. A unit whose columns an
/// ordering renumbered gathers only these into the order where they are few enough
/// (codegen::attach_reordering): a directed graph's vertices that no edge points to are never
/// read.
std::vector<std::int32_t> columns_read(const CsrMatrix& a);

/// Renumbers `a`'s columns so that `read` (its columns_read, ascending) come first, in their
/// present order, and the others follow, in theirs; returns the new order (new column j was
/// column order[j]). Each row's entries keep their places and their column order, so the values
/// stay where they were. A unit in the caller's order whose ordering renumbered the columns, few
/// of which are read, gathers them into one dense stretch so (RowColumnMap::packed_columns): a
/// directed graph's columns that no edge points to leave no gaps between the ones gathered or
/// in the lines the kernels read. InputError, `a` unchanged, where `read` is not ascending within
/// a's columns or leaves out a column an entry reads.
std::vector<std::int32_t> pack_read_columns(CsrMatrix& a, std::span<const std::int32_t> read);

/// How many elements of x that gather costs a multiply, for `ncols` columns of which `read` are
/// read: only the read ones where they are at most kGatherReadShare of x, else all of x. A
/// symmetric ordering's unit packs them first then (RowColumnMap::packed_columns) and gathers
/// them with one index an element into a dense stretch; a columns-only ordering's reads two
/// indices an element instead of one and writes x's order with gaps, a sector at a time. With
/// the latter, on the H200, RCM in the caller's order on wiki-Vote x16M
/// (29% of the columns read) multiplied 66.4 -> 64.8 us in fp64 and 48.3 -> 47.8 us in fp32 so,
/// and on R-MAT scale 18 and 19 (57% and 54% read) 0-4% slower
/// (bench/results/2026-11-30-h200-read-columns/).
inline constexpr double kGatherReadShare = 0.5;
std::int64_t columns_gathered(std::int64_t ncols, std::int64_t read);

/// Whether a square matrix's graph is a random-like expander, where no ordering brings
/// neighbouring rows' columns together, measured on `samples` rows spread over the matrix (each
/// row's stored columns as its out-neighbours), without building the graph of A + A^T:
/// - closure: of the pairs (a, b), a another column of a sampled row v and b another column of
///   the row of one of v's columns u (each row's first 32 columns), the share with a == b (a
///   triangle) or b in a's row (a 4-cycle); below 0.0002 on random graphs, and on the 113
///   shared matrices below 0.01 only on two peer-to-peer graphs and on matrices of at most
///   about two entries a row, 0.016-0.73 on the others (meshes, circuits, social graphs);
/// - growth: how many times the rows within two steps of a sampled row outnumber those within
///   one (about the row length on a random graph, 1-17 on the shared matrices);
/// - reciprocity: the share of sampled entries (v, u) whose (u, v) is stored.
/// On a locally tree-like expander (closure and growth as a random graph's), Cuthill-McKee can
/// make local only the edges of its breadth-first tree, which numbers each vertex's new
/// neighbours together: one undirected edge in `mean_degree / 2` of the graph of A + A^T.
struct TreeLikeness {
  double closure = 0;
  double growth = 0;
  double reciprocity = 0;
  double row_mean = 0;  ///< entries a row of A
  /// Entries a row of A + A^T off the diagonal, from the reciprocity and the sampled rows'
  /// diagonal entries
  double mean_degree = 0;
  /// Rows share almost no short cycles (closure below 1%), hold at least four entries a row
  /// in A + A^T, and reach at least half a row's length more rows with each step: the graph is
  /// a random-like expander.
  bool tree_like() const;
  /// For a tree-like graph, the least share of x's lines a warp reads that RCM leaves: 1 - 2 /
  /// mean_degree (its tree's edges made local, every other edge as scattered as before).
  /// Meaningful only where tree_like().
  double rcm_lines_left() const;
};
/// InputError for a matrix that is not square or a sample count below 1.
TreeLikeness tree_likeness(const CsrMatrix& a, int samples = 256);

/// The share of x's gathers that miss an L1 cache of `cache_bytes`, x entries of `value_bytes`
/// bytes. The rows are taken in bands of `band_rows` consecutive rows (about those a GPU works
/// on at once), and in each band the cache is taken to hold the 32-byte sectors of x that the
/// band's nonzeros read most often (an ideal frequency-ordered cache): a gather of any other
/// sector misses, and so does the first gather of each kept one. Unlike lines_per_warp, which
/// sees the reuse inside 32 rows, this sees the reuse across a band: a power-law graph's hub
/// columns numbered together (dbg, degree) share sectors, so more of them fit in the cache.
/// Where the matrix has more than `max_bands` bands, `max_bands` of them spread evenly over the
/// rows (the first included) are taken, and the share is over their nonzeros (0: every band).
/// On Kronecker scale 21 and 22 (64 and 128 bands), 16 bands gave every band's share to within
/// 0.004 with the columns renumbered alone (the hub rule in the caller's order), and to within
/// 0.016 with the rows moved too (the plan's order; the sampled share the higher, so the rule
/// reads a smaller cut: 17.7% against 19.6% on scale 22 fp64, against its 15%). The reorder stage
/// in the caller's order took 1.5-1.6 s instead of 2.4-2.5 s (scale 21) and 3.6-4.0 s instead of
/// 5.3-6.1 s (scale 22) on a 2-core host; on the H200's 16-core host, 0.56-0.64 s instead of
/// 0.64-0.66 s on scale 21, scale 22 within its runs' spread
/// (bench/results/2026-11-30-host-miss-bands/).
/// InputError for a value size or band below 1, a cache below one 32-byte sector, or a negative
/// `max_bands`.
double x_gather_miss_share(const CsrMatrix& a, int value_bytes, std::int64_t band_rows = 32768,
                           std::int64_t cache_bytes = 128 * 1024, std::int64_t max_bands = 16);
/// The same for permute(a, ordering), without building it (a symmetric ordering renames the
/// columns too). InputError for an ordering that is not a permutation of a's rows (or, symmetric,
/// of a square a's).
double x_gather_miss_share(const CsrMatrix& a, const Ordering& ordering, int value_bytes,
                           std::int64_t band_rows = 32768, std::int64_t cache_bytes = 128 * 1024,
                           std::int64_t max_bands = 16);

}  // namespace spmvc

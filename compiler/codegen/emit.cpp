#include "spmvc/compiler/emit.hpp"

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"

namespace spmvc::codegen {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'P', 'M', 'V', 'C', 'E', 'N', 'C'};
constexpr std::size_t kNameBytes = 32;

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw InputError(path.string(), 0, "cannot write file");
}

template <typename T>
void put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T get(std::ifstream& in, const fs::path& path) {
  T value{};
  if (!in.read(reinterpret_cast<char*>(&value), sizeof(T)))
    throw InputError(path.string(), 0, "truncated encoded matrix file");
  return value;
}

std::uint32_t precision_code(Precision p) {
  switch (p) {
    case Precision::f64:
      return 0;
    case Precision::f32:
      return 1;
    case Precision::f32_acc64:
      return 2;
  }
  throw InternalError("unknown precision");
}

}  // namespace

void write_encoded(const Encoded& e, const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  out.write(kMagic, sizeof kMagic);
  put<std::uint32_t>(out, kEncodedFileVersion);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(e.arrays.size()));
  put<std::int64_t>(out, e.nrows);
  put<std::int64_t>(out, e.ncols);
  put<std::int64_t>(out, e.nnz);
  put<std::uint32_t>(out, precision_code(e.precision));
  put<std::uint32_t>(out, 0);
  for (const EncodedArray& a : e.arrays) {
    char name[kNameBytes] = {};
    if (a.name.size() >= kNameBytes) throw InternalError("array name too long: " + a.name);
    std::memcpy(name, a.name.data(), a.name.size());
    out.write(name, kNameBytes);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(a.type));
    put<std::uint32_t>(out, static_cast<std::uint32_t>(size_of(a.type)));
    put<std::int64_t>(out, a.count());
    out.write(reinterpret_cast<const char*>(a.bytes.data()),
              static_cast<std::streamsize>(a.bytes.size()));
  }
  if (!out) throw InputError(path.string(), 0, "cannot write encoded matrix");
}

Encoded read_encoded(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), 0, "cannot open encoded matrix");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0)
    throw InputError(path.string(), 0, "not an spmvc encoded matrix (bad magic)");
  if (get<std::uint32_t>(in, path) != kEncodedFileVersion)
    throw InputError(path.string(), 0, "unsupported encoded matrix version");
  const auto count = get<std::uint32_t>(in, path);
  Encoded e;
  e.nrows = get<std::int64_t>(in, path);
  e.ncols = get<std::int64_t>(in, path);
  e.nnz = get<std::int64_t>(in, path);
  const auto prec = get<std::uint32_t>(in, path);
  if (prec > 2) throw InputError(path.string(), 0, "bad precision code");
  e.precision = prec == 0 ? Precision::f64 : prec == 1 ? Precision::f32 : Precision::f32_acc64;
  get<std::uint32_t>(in, path);
  for (std::uint32_t i = 0; i < count; ++i) {
    char name[kNameBytes];
    if (!in.read(name, kNameBytes)) throw InputError(path.string(), 0, "truncated array header");
    EncodedArray a;
    a.name.assign(name, strnlen(name, kNameBytes));
    const auto type = get<std::uint32_t>(in, path);
    if (type > static_cast<std::uint32_t>(ElemType::u16))
      throw InputError(path.string(), 0, "bad element type");
    a.type = static_cast<ElemType>(type);
    get<std::uint32_t>(in, path);
    const auto n = get<std::int64_t>(in, path);
    if (n < 0) throw InputError(path.string(), 0, "negative array length");
    a.bytes.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(size_of(a.type)));
    if (!in.read(reinterpret_cast<char*>(a.bytes.data()),
                 static_cast<std::streamsize>(a.bytes.size())))
      throw InputError(path.string(), 0, "truncated array " + a.name);
    e.arrays.push_back(std::move(a));
  }
  return e;
}

namespace {

std::string launch_args(const Encoded& e, const KernelLaunch& launch, const std::string& value,
                        const std::string& acc) {
  std::string args;
  for (const KernelParam& p : launch.params) {
    if (!args.empty()) args += ",\n      ";
    switch (p.kind) {
      case KernelParam::Kind::rows:
        args += "(long long)nrows";
        break;
      case KernelParam::Kind::cols:
        args += "(long long)ncols";
        break;
      case KernelParam::Kind::array: {
        std::size_t index = 0;
        while (e.arrays[index].name != p.name) ++index;
        args += fmt::format("({}{}*)dev[{}] /* {} */", e.arrays[index].scratch ? "" : "const ",
                            c_type(e.arrays[index].type), index, p.name);
        break;
      }
      case KernelParam::Kind::x:
        args += fmt::format("(const {}*)dx", value);
        break;
      case KernelParam::Kind::y:
        args += fmt::format("({}*)dy", value);
        break;
      case KernelParam::Kind::alpha:
        args += fmt::format("({})1", acc);
        break;
      case KernelParam::Kind::beta:
        args += fmt::format("({})0", acc);
        break;
    }
  }
  return args;
}

}  // namespace

std::string harness_source(const Encoded& e, const KernelSource& k) {
  const std::string value = value_type(e.precision);
  const std::string acc = accumulate_type(e.precision);
  // A reordered unit writes y through spmvc_row_map: point it at the uploaded map.
  std::string row_map;
  for (std::size_t i = 0; i < e.arrays.size(); ++i) {
    if (e.arrays[i].name == "row_map")
      row_map = fmt::format(
          "  HARNESS_CHECK(cudaMemcpyToSymbol(spmvc_row_map, &dev[{}], sizeof(void*)));\n", i);
  }
  // Every launch of the unit, in order, as one statement block.
  std::string launches;
  for (const KernelLaunch& l : k.launches()) {
    launches += fmt::format("    {}<<<{}, {}, {}>>>(\n      {});\n", l.entry, l.grid, l.block,
                            l.shared_bytes, launch_args(e, l, value, acc));
  }
  const double tolerance = compiler::result_tolerance(e.precision);
  return fmt::format(
      R"(// Harness generated by spmvc emit: runs {kernel} on matrix.bin with spmvc's test vector.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -I. harness.cu -o harness     Run: ./harness [DIR [Y.bin]]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "{file}"

#define HARNESS_CHECK(call)                                                        \
  do {{                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {{                                                       \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));      \
      std::exit(2);                                                                \
    }}                                                                              \
  }} while (0)

static std::vector<char> slurp(const std::string& path) {{
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {{ std::fprintf(stderr, "cannot open %s\n", path.c_str()); std::exit(2); }}
  std::vector<char> data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
  std::fclose(f);
  return data;
}}

// Same formula as spmvc::codegen::test_vector_value.
static double test_vector_value(std::uint64_t i) {{
  const std::uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;
  return 0.5 + static_cast<double>(h) / 16777216.0;
}}

int main(int argc, char** argv) {{
  const std::string dir = argc > 1 ? argv[1] : ".";
  const std::vector<char> file = slurp(dir + "/matrix.bin");
  const char* p = file.data();
  if (file.size() < 48 || std::memcmp(p, "SPMVCENC", 8) != 0) {{ std::fprintf(stderr, "bad matrix.bin\n"); return 2; }}
  std::uint32_t count;
  long long nrows, ncols, nnz;
  std::memcpy(&count, p + 12, 4);
  std::memcpy(&nrows, p + 16, 8);
  std::memcpy(&ncols, p + 24, 8);
  std::memcpy(&nnz, p + 32, 8);
  size_t off = 48;
  std::vector<void*> dev;
  for (std::uint32_t i = 0; i < count; ++i) {{
    std::uint32_t elem;
    long long n;
    std::memcpy(&elem, p + off + 36, 4);
    std::memcpy(&n, p + off + 40, 8);
    off += 48;
    void* d = nullptr;
    const size_t bytes = static_cast<size_t>(n) * elem;
    HARNESS_CHECK(cudaMalloc(&d, bytes ? bytes : 1));
    HARNESS_CHECK(cudaMemcpy(d, p + off, bytes, cudaMemcpyHostToDevice));
    off += bytes;
    dev.push_back(d);
  }}
{row_map}  std::vector<{value}> x(static_cast<size_t>(ncols)), y(static_cast<size_t>(nrows));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<{value}>(test_vector_value(i));
  void *dx = nullptr, *dy = nullptr;
  HARNESS_CHECK(cudaMalloc(&dx, x.size() * sizeof({value}) + 1));
  HARNESS_CHECK(cudaMalloc(&dy, y.size() * sizeof({value}) + 1));
  HARNESS_CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof({value}), cudaMemcpyHostToDevice));
  HARNESS_CHECK(cudaMemset(dy, 0xff, y.size() * sizeof({value})));  // NaN poison

  {{
{launches}  }}
  HARNESS_CHECK(cudaGetLastError());
  HARNESS_CHECK(cudaDeviceSynchronize());
  HARNESS_CHECK(cudaMemcpy(y.data(), dy, y.size() * sizeof({value}), cudaMemcpyDeviceToHost));

  const std::vector<char> ref_bytes = slurp(dir + "/y_ref.bin");
  if (ref_bytes.size() != y.size() * sizeof(double)) {{ std::fprintf(stderr, "bad y_ref.bin\n"); return 2; }}
  const double* ref = reinterpret_cast<const double*>(ref_bytes.data());
  double diff = 0, norm = 0, checksum = 0;
  for (size_t i = 0; i < y.size(); ++i) {{
    const double d = static_cast<double>(y[i]) - ref[i];
    diff += d * d;
    norm += ref[i] * ref[i];
    checksum += static_cast<double>(y[i]);
  }}
  const double err = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);

  cudaEvent_t t0, t1;
  HARNESS_CHECK(cudaEventCreate(&t0));
  HARNESS_CHECK(cudaEventCreate(&t1));
  const int reps = 100;
  HARNESS_CHECK(cudaEventRecord(t0));
  for (int r = 0; r < reps; ++r) {{
{launches}  }}
  HARNESS_CHECK(cudaEventRecord(t1));
  HARNESS_CHECK(cudaEventSynchronize(t1));
  float ms = 0;
  HARNESS_CHECK(cudaEventElapsedTime(&ms, t0, t1));

  if (argc > 2) {{  // ./harness DIR Y.bin: also write y, for bit-for-bit comparisons
    FILE* out = std::fopen(argv[2], "wb");
    if (!out || std::fwrite(y.data(), sizeof({value}), y.size(), out) != y.size()) {{
      std::fprintf(stderr, "cannot write %s\n", argv[2]);
      return 2;
    }}
    std::fclose(out);
  }}
  std::printf("kernel          {kernel}\n");
  std::printf("relative error  %.3e\n", err);
  std::printf("checksum        %.17g\n", checksum);
  std::printf("time            %.2f us per multiply (mean of %d)\n", 1000.0 * ms / reps, reps);
  return (err <= {tol} && !std::isnan(err)) ? 0 : 1;
}}
)",
      fmt::arg("kernel", k.kernel_name), fmt::arg("file", k.file_name), fmt::arg("value", value),
      fmt::arg("launches", launches), fmt::arg("row_map", row_map), fmt::arg("tol", tolerance));
}

std::vector<fs::path> emit(const Plan& plan, const Encoded& encoded, const KernelSource& source,
                           const std::vector<double>& y_reference, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(dir.string(), 0, "cannot create directory: " + ec.message());
  std::vector<fs::path> written;
  auto text = [&](const fs::path& rel, const std::string& content) {
    const fs::path path = dir / rel;
    fs::create_directories(path.parent_path());
    write_text(path, content);
    written.push_back(path);
  };
  text(source.file_name, source.source);
  for (const auto& [name, content] : source.headers) text(name, content);
  text("harness.cu", harness_source(encoded, source));
  text("plan.json", to_json(plan) + "\n");
  text("README.txt",
       fmt::format(
           "spmvc emit: {kernel}\n\n"
           "  nvcc -O3 -std=c++17 -arch=sm_90 -I. harness.cu -o harness && ./harness\n\n"
           "prints the relative error against y_ref.bin (the host reference for spmvc's test\n"
           "vector) and a checksum of y; `spmvc run` on the same matrix and options prints\n"
           "the same two lines. NVRTC options used by spmvc: {opts}\n",
           fmt::arg("kernel", source.kernel_name),
           fmt::arg("opts", fmt::join(source.options, " "))));
  write_encoded(encoded, dir / "matrix.bin");
  written.push_back(dir / "matrix.bin");
  {
    std::ofstream out(dir / "y_ref.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(y_reference.data()),
              static_cast<std::streamsize>(y_reference.size() * sizeof(double)));
    if (!out) throw InputError((dir / "y_ref.bin").string(), 0, "cannot write file");
    written.push_back(dir / "y_ref.bin");
  }
  return written;
}

}  // namespace spmvc::codegen

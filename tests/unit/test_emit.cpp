// Offline emission: the encoded-matrix file round-trips, and emit writes a complete directory.
#include <doctest/doctest.h>

#include <unistd.h>
#include <fstream>
#include <sstream>

#include "golden_plans.hpp"
#include "spmvc/compiler/emit.hpp"
#include "spmvc/error.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("spmvc-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

struct Emitted {
  Plan plan;
  Encoded encoded;
  KernelSource source;
};

Emitted make(const std::string& spec, Precision p) {
  const CsrMatrix a = gen::from_spec(spec);
  const Profile prof = inspect(a);
  compiler::PlanOptions o;
  o.format = "csr";  // these tests are about the csr format
  o.precision = p;
  Emitted e{compiler::make_plan(prof, o), {}, {}};
  e.encoded = compiler::encode(a, e.plan);
  e.source = codegen::generate(e.plan, e.encoded, prof);
  return e;
}

}  // namespace

TEST_CASE("matrix.bin round-trips every array bit for bit") {
  const Emitted e = make("stencil27:n=5", Precision::f32);
  const fs::path dir = temp_dir("roundtrip");
  fs::create_directories(dir);
  codegen::write_encoded(e.encoded, dir / "m.bin");
  const Encoded back = codegen::read_encoded(dir / "m.bin");
  CHECK(back.nrows == e.encoded.nrows);
  CHECK(back.ncols == e.encoded.ncols);
  CHECK(back.nnz == e.encoded.nnz);
  CHECK(back.precision == Precision::f32);
  REQUIRE(back.arrays.size() == e.encoded.arrays.size());
  for (std::size_t i = 0; i < back.arrays.size(); ++i) {
    CHECK(back.arrays[i].name == e.encoded.arrays[i].name);
    CHECK(back.arrays[i].type == e.encoded.arrays[i].type);
    CHECK(back.arrays[i].bytes == e.encoded.arrays[i].bytes);
  }
  fs::remove_all(dir);
}

TEST_CASE("a damaged matrix.bin is refused with a clear error") {
  const Emitted e = make("stencil2d:n=8", Precision::f64);
  const fs::path dir = temp_dir("damaged");
  fs::create_directories(dir);
  codegen::write_encoded(e.encoded, dir / "m.bin");
  fs::resize_file(dir / "m.bin", fs::file_size(dir / "m.bin") - 10);
  CHECK_THROWS_WITH_AS(codegen::read_encoded(dir / "m.bin"), doctest::Contains("truncated"),
                       InputError);
  std::ofstream(dir / "bad.bin") << "not a matrix at all";
  CHECK_THROWS_WITH_AS(codegen::read_encoded(dir / "bad.bin"), doctest::Contains("bad magic"),
                       InputError);
  fs::remove_all(dir);
}

TEST_CASE("emit writes the kernel, its templates, the matrix, the reference and a harness") {
  const Emitted e = make("stencil7:n=6", Precision::f64);
  const fs::path dir = temp_dir("emit");
  std::vector<double> yref(static_cast<std::size_t>(e.encoded.nrows), 1.5);
  const auto written = codegen::emit(e.plan, e.encoded, e.source, yref, dir);
  for (const char* f : {"harness.cu", "matrix.bin", "y_ref.bin", "plan.json", "README.txt",
                        "spmvc/csr.cuh", "spmvc/common.cuh"}) {
    CAPTURE(f);
    CHECK(fs::exists(dir / f));
  }
  CHECK(fs::exists(dir / e.source.file_name));
  CHECK(fs::file_size(dir / "y_ref.bin") == yref.size() * sizeof(double));
  const std::string harness = codegen::harness_source(e.encoded, e.source);
  CHECK(harness.find(e.source.kernel_name + "<<<") != std::string::npos);
  CHECK(harness.find("(const int*)dev[0] /* row_ptr */") != std::string::npos);
  // The stencil's two values are stored as 8-bit indices into a table of doubles.
  CHECK(harness.find("(const unsigned char*)dev[2] /* values */") != std::string::npos);
  CHECK(harness.find("(const double*)dev[3] /* values_table */") != std::string::npos);
  CHECK(written.size() >= 8);
  fs::remove_all(dir);
}

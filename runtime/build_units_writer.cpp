// Writes the GPU build's translation units (compiler/codegen/device_csr, device_ell, device_bro)
// and the template headers they include into a directory, for nvcc to compile into the library
// when it is built (CMakeLists.txt, build_units.cpp): the text NVRTC would compile at run time,
// byte for byte. A file is rewritten only when its text changed, so nvcc reruns only then.
//
//   spmvc_write_build_units DIR
//
// writes DIR/<unit file name> for each unit and DIR/include/<header name> for every header.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "spmvc/compiler/device_bro.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/compiler/device_ell.hpp"

namespace {

void write_if_changed(const std::filesystem::path& path, const std::string& text) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (old == text) return;
    }
  }
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fputs("usage: spmvc_write_build_units DIR\n", stderr);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  for (const spmvc::KernelSource& unit :
       {spmvc::codegen::device_csr_source(), spmvc::codegen::device_ell_source(),
        spmvc::codegen::device_bro_source()}) {
    write_if_changed(dir / unit.file_name, unit.source);
    for (const auto& [name, text] : unit.headers) write_if_changed(dir / "include" / name, text);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "spmvc_write_build_units: %s\n", e.what());
  return 1;
}

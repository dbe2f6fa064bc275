// The staged upload (runtime/upload.hpp) on the device: arrays of 0, 1, chunk-1, chunk+1 bytes
// and of many chunks (more than the staging buffers, so buffers are reused) arrive byte for
// byte, with one filler thread and with the most; converting parts arrive converted across chunk
// boundaries; a fill that throws surfaces its error and leaves the next upload whole;
// upload_csr's arrays equal the host matrix's; the staging's groups are pinned as the fillers
// that use them first run, or all at once by warm_up, from several threads at a time.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device.hpp"
#include "device_csr.hpp"
#include "gpu_support.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/parallel.hpp"
#include "spmvc/spmvc.hpp"
#include "upload.hpp"

using namespace spmvc;
using runtime::kUploadBuffersPerFiller;
using runtime::kUploadChunkBytes;
using runtime::kUploadMaxFillers;

namespace {
std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  std::uint32_t s = seed * 2654435761U + 1;
  for (auto& b : v) {
    s = s * 1664525U + 1013904223U;
    b = static_cast<unsigned char>(s >> 24);
  }
  return v;
}

template <class T>
std::vector<T> download(const runtime::DeviceBuffer& d, std::size_t count) {
  std::vector<T> out(count);
  d.download(out.data(), count * sizeof(T));
  return out;
}
}  // namespace

TEST_CASE("staged upload: odd sizes arrive byte for byte") {
  if (!test::have_device()) return;
  const std::size_t c = kUploadChunkBytes;
  const std::size_t buffers = std::size_t{kUploadMaxFillers} * kUploadBuffersPerFiller;
  const std::vector<std::size_t> sizes{0, 1, c - 1, c, c + 1, (2 * buffers + 1) * c + 3};
  for (const int threads : {1, 2 * kUploadMaxFillers}) {
    CAPTURE(threads);
    set_host_parallelism({threads, false});
    // All in one call (parts share the buffer rotation) and each on its own.
    std::vector<std::vector<unsigned char>> hosts;
    std::vector<runtime::DeviceBuffer> devices;
    std::vector<runtime::UploadPart> parts;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      hosts.push_back(pattern(sizes[i], static_cast<unsigned>(i)));
      devices.emplace_back(sizes[i] + 1);
    }
    for (std::size_t i = 0; i < sizes.size(); ++i)
      parts.push_back(runtime::upload_part(devices[i].get(), hosts[i].data(), sizes[i]));
    runtime::staged_upload(parts);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      CAPTURE(sizes[i]);
      CHECK(download<unsigned char>(devices[i], sizes[i]) == hosts[i]);
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      CAPTURE(sizes[i]);
      runtime::DeviceBuffer d(sizes[i] + 1);
      d.fill_bytes(0xA5);
      runtime::staged_upload({runtime::upload_part(d.get(), hosts[i].data(), sizes[i])});
      const auto back = download<unsigned char>(d, sizes[i] + 1);
      CHECK(std::memcmp(back.data(), hosts[i].data(), sizes[i]) == 0);
      CHECK(back[sizes[i]] == 0xA5);  // nothing past the part
    }
  }
  set_host_parallelism({});
}

TEST_CASE("staged upload: each staging group is pinned by the first upload that uses it") {
  if (!test::have_device()) return;
  const std::size_t n = 3 * kUploadMaxFillers * kUploadChunkBytes + 11;
  const std::vector<unsigned char> host = pattern(n, 3);
  runtime::DeviceBuffer d(n);
  set_host_parallelism({1, false});
  runtime::staged_upload({runtime::upload_part(d.get(), host.data(), n)});
  CHECK(download<unsigned char>(d, n) == host);
  CHECK(runtime::staging_pinned_groups() >= 1);
  set_host_parallelism({kUploadMaxFillers, false});
  d.fill_bytes(0);
  runtime::staged_upload({runtime::upload_part(d.get(), host.data(), n)});
  CHECK(download<unsigned char>(d, n) == host);
  CHECK(runtime::staging_pinned_groups() == runtime::kStagingGroups);
  set_host_parallelism({});
}

TEST_CASE("warm_up pins the staging for the most fillers, from several threads at once") {
  if (!test::have_device()) return;
  set_host_parallelism({kUploadMaxFillers, false});
  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i) callers.emplace_back([] { spmvc::warm_up(); });
  for (std::thread& t : callers) t.join();
  CHECK(runtime::staging_pinned_groups() == runtime::kStagingGroups);
  spmvc::warm_up();  // again: nothing left to do
  // And an upload after it arrives whole.
  const std::size_t n = 2 * kUploadMaxFillers * kUploadChunkBytes + 5;
  const std::vector<unsigned char> host = pattern(n, 11);
  runtime::DeviceBuffer d(n);
  runtime::staged_upload({runtime::upload_part(d.get(), host.data(), n)});
  CHECK(download<unsigned char>(d, n) == host);
  set_host_parallelism({});
}

TEST_CASE("staged upload: a fill that throws is rethrown, and the next upload is whole") {
  if (!test::have_device()) return;
  set_host_parallelism({kUploadMaxFillers, false});
  const std::size_t n = 4 * kUploadMaxFillers * kUploadChunkBytes + 5;
  const std::vector<unsigned char> host = pattern(n, 7);
  runtime::DeviceBuffer d(n);
  runtime::UploadPart failing = runtime::upload_part(d.get(), host.data(), n);
  const runtime::StageFill copy = failing.fill;
  // The third filler fails at its second chunk, while the others are still filling.
  failing.fill = [copy](std::size_t offset, std::size_t bytes, void* staging) {
    if (offset == (kUploadMaxFillers + 2) * kUploadChunkBytes)
      throw InputError("test", 0, "this chunk cannot be read");
    copy(offset, bytes, staging);
  };
  CHECK_THROWS_WITH_AS(runtime::staged_upload({failing}), doctest::Contains("cannot be read"),
                       InputError);
  runtime::staged_upload({runtime::upload_part(d.get(), host.data(), n)});
  CHECK(download<unsigned char>(d, n) == host);
  set_host_parallelism({});
}

TEST_CASE("staged upload: converting parts across chunk boundaries") {
  if (!test::have_device()) return;
  const std::size_t n = 3 * kUploadChunkBytes / 4 + 7;  // int32/float elements: 3+ chunks
  std::vector<std::int64_t> offsets(n);
  std::vector<double> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    offsets[i] = static_cast<std::int64_t>(i * 3 + (i % 5));
    values[i] = 1.0 / static_cast<double>(i + 1);
  }
  runtime::DeviceBuffer d_off(n * 4), d_val(n * 4);
  runtime::staged_upload({runtime::converting_part<std::int32_t>(d_off.get(), offsets.data(), n),
                          runtime::converting_part<float>(d_val.get(), values.data(), n)});
  const auto off = download<std::int32_t>(d_off, n);
  const auto val = download<float>(d_val, n);
  bool same_off = true, same_val = true;
  for (std::size_t i = 0; i < n; ++i) {
    same_off = same_off && off[i] == static_cast<std::int32_t>(offsets[i]);
    same_val = same_val && val[i] == static_cast<float>(values[i]);
  }
  CHECK(same_off);
  CHECK(same_val);
}

TEST_CASE("upload_csr: the device arrays equal the host matrix's") {
  if (!test::have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=16,ef=40");
  for (const Precision p : {Precision::f64, Precision::f32}) {
    const std::string precision(to_string(p));
    CAPTURE(precision);
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    const auto rp = download<std::int32_t>(r.row_ptr, a.row_ptr.size());
    CHECK(std::vector<std::int64_t>(rp.begin(), rp.end()) == a.row_ptr);
    CHECK(download<std::int32_t>(r.col_idx, a.col_idx.size()) == a.col_idx);
    if (p == Precision::f64) {
      CHECK(download<double>(r.values, a.values.size()) == a.values);
    } else {
      const std::vector<float> narrow(a.values.begin(), a.values.end());
      CHECK(download<float>(r.values, a.values.size()) == narrow);
    }
  }
}

// Matrix Market text, parsed two ways that must agree: whole in memory (parse_matrix_market) and
// streamed through a window of 1 to 32 bytes (what read_matrix_market does with 1 MiB), so that
// every line falls across window boundaries. Either both refuse it with the same InputError, or
// both return the same valid matrix, which also survives a round trip through the writer.
// Bytes that start with a compressed format's magic are not text: the stream decodes them and
// parse_matrix_market refuses them naming the format.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "decompress.hpp"
#include "fuzz_support.hpp"
#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/memory_budget.hpp"

using namespace spmvc;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::set_budget();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t window = 1 + (size == 0 ? 0 : data[size - 1] % 32);

  CsrMatrix whole, streamed;
  MatrixMarketHeader whole_header, streamed_header;
  std::string whole_error, streamed_error;
  try {
    whole = parse_matrix_market(text, "fuzz.mtx", &whole_header);
  } catch (const InputError& e) {
    whole_error = e.what();
  }
  try {
    detail::TextStream stream(detail::memory_source(text), "fuzz.mtx", memory_budget());
    streamed = detail::parse_matrix_market_stream(stream, &streamed_header, window);
  } catch (const InputError& e) {
    streamed_error = e.what();
  }
  // Input that starts with a compressed format's magic bytes is decoded (or named) by the
  // stream, as read_matrix_market does for a file, while parse_matrix_market takes its argument
  // as text: the two read different things, so only their own promises are checked. The whole
  // parse must refuse it naming the format; whatever the stream gives must be valid.
  if (const char* format = detail::compressed_format(text)) {
    if (whole_error.find(std::string("the text is ") + format + "-compressed data") ==
        std::string::npos)
      fuzz::finding("compressed bytes parsed as text not refused as such", whole_error);
    if (streamed_error.empty()) validate(streamed, "fuzz.mtx");
    return 0;
  }
  if (whole_error != streamed_error) {
    // The stream judges the banner on the first bytes, before the parser sees a line: both
    // must still refuse the input over its banner.
    const bool both_banner = whole_error.find("banner") != std::string::npos &&
                             streamed_error.find("banner") != std::string::npos;
    if (!both_banner)
      fuzz::finding("in-memory and streamed parses disagree", whole_error, streamed_error);
    return 0;
  }
  if (!whole_error.empty()) return 0;
  if (!fuzz::same_matrix(whole, streamed) ||
      whole_header.duplicates_summed != streamed_header.duplicates_summed ||
      whole_header.stored_entries != streamed_header.stored_entries) {
    fuzz::finding("in-memory and streamed parses give different matrices");
  }
  validate(whole, "fuzz.mtx");
  // What the writer prints reads back to the same matrix (values are printed round-trip exact).
  const CsrMatrix again = parse_matrix_market(to_matrix_market(whole), "fuzz-written.mtx");
  if (!fuzz::same_matrix(whole, again)) fuzz::finding("writer round trip changed the matrix");
  return 0;
}

// Bad Matrix Market input: every case must be an InputError naming the file, the 1-based line
// and what is wrong.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"
#include "test_support.hpp"

namespace {

const std::string kBanner = "%%MatrixMarket matrix coordinate real general\n";

struct Caught {
  std::string what;
  std::string source;
  std::uint64_t line = 0;
};

Caught parse_error(const std::string& text, const std::string& source = "bad.mtx") {
  try {
    spmvc::parse_matrix_market(text, source);
  } catch (const spmvc::InputError& e) {
    return {e.what(), e.source(), e.line()};
  }
  FAIL("expected an InputError for:\n" << text);
  return {};
}

Caught read_error(const std::filesystem::path& path) {
  try {
    spmvc::read_matrix_market(path);
  } catch (const spmvc::InputError& e) {
    return {e.what(), e.source(), e.line()};
  }
  FAIL("expected an InputError reading " << path);
  return {};
}

// The message carries "<file>:<line>: " and the phrase.
void check_message(const Caught& c, std::uint64_t line, const std::string& phrase,
                   const std::string& file = "bad.mtx") {
  INFO("message: " << c.what);
  CHECK(c.source == file);
  CHECK(c.line == line);
  CHECK(c.what.find(file + ":" + std::to_string(line) + ":") != std::string::npos);
  CHECK(c.what.find(phrase) != std::string::npos);
}

}  // namespace

TEST_CASE("banner errors") {
  check_message(parse_error("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n"),
                1, "complex field is not supported");
  check_message(parse_error("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n"), 1,
                "array (dense) format is not supported");
  check_message(parse_error("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n"), 1,
                "hermitian symmetry is not supported");
  check_message(parse_error("%%MatrixMarket matrix coordinate real\n1 1 1\n1 1 1\n"), 1,
                "malformed banner");
  check_message(parse_error("%%MatrixMarket vector coordinate real general\n"), 1,
                "unsupported object 'vector'");
  check_message(parse_error("%%MatrixMarket matrix coordinate double general\n"), 1,
                "unknown field 'double'");
  check_message(parse_error("%%MatrixMarket matrix coordinate real upper\n"), 1,
                "unknown symmetry 'upper'");
  check_message(parse_error("%%MatrixMarket matrix coordinate real general extra\n"), 1,
                "extra token 'extra' after the banner");
  check_message(parse_error("3 3 1\n1 1 1\n"), 1, "missing Matrix Market banner");
  check_message(parse_error("% a comment first\n" + kBanner + "1 1 0\n"), 1,
                "missing Matrix Market banner");
  check_message(parse_error(""), 1, "file is empty");
}

TEST_CASE("compressed bytes handed to parse_matrix_market are named as such") {
  // parse_matrix_market takes text; only read_matrix_market decompresses. Bytes that start with
  // a compressed format's magic are refused naming the format, not as garbage.
  check_message(parse_error(std::string("\x1f\x8b\x08\x00junk", 8)), 1,
                "missing Matrix Market banner: the text is gzip-compressed data");
  check_message(parse_error(std::string("\xfd"
                                        "7zXZ\0junk",
                                        10)),
                1, "the text is xz-compressed data");
  check_message(parse_error("BZhermitian\t"), 1, "the text is bzip2-compressed data");
  check_message(parse_error("\x28\xb5\x2f\xfdjunk"), 1, "the text is zstd-compressed data");
  // Text that only contains such bytes later is still just a missing banner.
  Caught plain = parse_error("junk\x1f\x8b\n");
  CHECK(plain.what.find("compressed") == std::string::npos);
}

TEST_CASE("size line errors") {
  check_message(parse_error(kBanner), 2, "missing size line");
  check_message(parse_error(kBanner + "% only comments\n\n"), 4, "missing size line");
  check_message(parse_error(kBanner + "3 3\n"), 2, "missing entry count");
  check_message(parse_error(kBanner + "3\n"), 2, "missing column count");
  check_message(parse_error(kBanner + "3 x 1\n"), 2, "column count 'x' is not an integer");
  check_message(parse_error(kBanner + "3 3 1.5\n"), 2, "entry count '1.5' is not an integer");
  check_message(parse_error(kBanner + "-3 3 1\n"), 2, "row count '-3' is negative");
  check_message(parse_error(kBanner + "3 3 -1\n"), 2, "entry count '-1' is negative");
  check_message(parse_error(kBanner + "3 3 1 4\n"), 2, "extra token '4' after the size line");
  check_message(parse_error(kBanner + "3 2147483648 1\n"), 2,
                "column count 2147483648 exceeds 2^31-1: spmvc column indices are 32-bit");
  check_message(parse_error(kBanner + "3 99999999999999999999 1\n"), 2, "is too large");
  check_message(parse_error("%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n"), 2,
                "must be square");
}

TEST_CASE("entry count errors: truncated file and surplus entries") {
  check_message(parse_error(kBanner + "3 3 4\n1 1 1\n2 2 2\n"), 4, "expected 4 entries, found 2");
  // No final newline: the last line is still named correctly.
  check_message(parse_error(kBanner + "3 3 4\n1 1 1\n2 2 2"), 4, "expected 4 entries, found 2");
  check_message(parse_error(kBanner + "3 3 1\n"), 2, "expected 1 entries, found 0");
  check_message(parse_error(kBanner + "3 3 1\n1 1 1\n% fine\n\n3 3 3\n"), 6,
                "more entries than declared: the size line declares 1 entries");
}

TEST_CASE("index errors") {
  check_message(parse_error(kBanner + "3 4 2\n1 1 1\n0 2 1\n"), 4,
                "row index 0 is out of range [1, 3] (Matrix Market indices are 1-based)");
  check_message(parse_error(kBanner + "3 4 1\n4 1 1\n"), 3, "row index 4 is out of range [1, 3]");
  check_message(parse_error(kBanner + "3 4 1\n1 5 1\n"), 3,
                "column index 5 is out of range [1, 4]");
  check_message(parse_error(kBanner + "3 4 1\n1 -2 1\n"), 3,
                "column index -2 is out of range [1, 4]");
  check_message(parse_error(kBanner + "3 4 1\nx 1 1\n"), 3, "row index 'x' is not an integer");
  check_message(parse_error(kBanner + "3 4 1\n1.0 1 1\n"), 3, "row index '1.0' is not an integer");
  check_message(parse_error(kBanner + "3 4 1\n1 2e0 1\n"), 3,
                "column index '2e0' is not an integer");
  check_message(parse_error(kBanner + "3 4 1\n1\n"), 3, "missing column index");
}

TEST_CASE("value errors") {
  check_message(parse_error(kBanner + "3 3 1\n1 1\n"), 3, "missing value");
  check_message(parse_error(kBanner + "3 3 1\n1 1 \r\n"), 3, "missing value");
  check_message(parse_error(kBanner + "3 3 1\n1 1 abc\n"), 3, "value 'abc' is not a real number");
  check_message(parse_error(kBanner + "3 3 1\n1 1 1.5.2\n"), 3,
                "value '1.5.2' is not a real number");
  check_message(parse_error(kBanner + "3 3 1\n1 1 1,5\n"), 3, "value '1,5' is not a real number");
  check_message(parse_error(kBanner + "3 3 1\n1 1 1 2\n"), 3, "extra token '2'");
  check_message(parse_error(kBanner + "3 3 1\n1 1 nan\n"), 3,
                "value 'nan' is not a finite number (inf and nan are rejected)");
  check_message(parse_error(kBanner + "3 3 1\n1 1 -inf\n"), 3, "value '-inf' is not a finite");
  check_message(parse_error(kBanner + "3 3 1\n1 1 Infinity\n"), 3, "is not a finite number");
  check_message(parse_error(kBanner + "3 3 1\n1 1 1e999\n"), 3, "value '1e999' overflows fp64");
  check_message(parse_error("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 2.5\n"),
                3, "value '2.5' is not an integer");
  check_message(parse_error("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 "
                            "9007199254740993\n"),
                3, "cannot be held exactly in fp64");
  check_message(parse_error("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n"), 3,
                "extra token '1' after '<row> <column>' (pattern entries have no value)");
}

TEST_CASE("symmetry errors") {
  check_message(
      parse_error("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 4\n"), 4,
      "diagonal entry (2, 2) in a skew-symmetric file");
  check_message(parse_error("%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n1 2 1\n"), 3,
                "entry (1, 2) lies above the diagonal");
}

TEST_CASE("file errors name the file") {
  const auto dir = spmvc::test::data_dir();
  const auto missing = dir / "no_such_file.mtx";
  const Caught c = read_error(missing);
  CHECK(c.source == missing.string());
  CHECK(c.what.find("cannot open file") != std::string::npos);

  check_message(read_error(dir / "empty.mtx"), 1, "file is empty", (dir / "empty.mtx").string());

  for (const char* name : {"truncated.mtx.gz", "truncated.mtx.xz"}) {
    const Caught t = read_error(dir / name);
    INFO(t.what);
    CHECK(t.source == (dir / name).string());
    CHECK(t.what.rfind((dir / name).string() + ": truncated", 0) == 0);
  }
  for (const char* name : {"corrupt.mtx.gz", "corrupt.mtx.xz"}) {
    const Caught t = read_error(dir / name);
    INFO(t.what);
    CHECK(t.source == (dir / name).string());
    CHECK(t.what.find("corrupt") != std::string::npos);
  }
  const Caught d = read_error(dir);
  CHECK(d.what.find("is a directory") != std::string::npos);
}

TEST_CASE("trailing garbage after a gzip stream is an error, not ignored") {
  const auto path = std::filesystem::temp_directory_path() / "spmvc_test_garbage.mtx.gz";
  std::filesystem::copy_file(spmvc::test::data_dir() / "general.mtx.gz", path,
                             std::filesystem::copy_options::overwrite_existing);
  {
    std::FILE* f = std::fopen(path.c_str(), "ab");
    REQUIRE(f);
    std::fputs("junk", f);
    std::fclose(f);
  }
  const Caught c = read_error(path);
  CHECK(c.what.find("trailing garbage") != std::string::npos);
  std::filesystem::remove(path);
}

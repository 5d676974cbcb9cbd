// The guest's printf core, tested on the host.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

extern "C" {
#include "guest-kit/lib/format.h"
}

namespace {

template <typename... Args>
std::string Format(const char* fmt, Args... args) {
  char buf[128];
  format(buf, sizeof(buf), fmt, args...);
  return buf;
}

TEST(FormatTest, Conversions) {
  EXPECT_EQ(Format("%d %i %u", -12, 7, 3000000000u), "-12 7 3000000000");
  EXPECT_EQ(Format("%ld %lu", int64_t{-1} << 40, uint64_t{1} << 63),
            "-1099511627776 9223372036854775808");
  EXPECT_EQ(Format("%x %lx %#x %#lx", 255u, uint64_t{0xdeadbeef00}, 16u, uint64_t{0}),
            "ff deadbeef00 0x10 0x0");
  EXPECT_EQ(Format("%s|%c|%%|%p", "str", 'c', reinterpret_cast<void*>(0x1000)),
            "str|c|%|0x1000");
  const char* volatile null_string = nullptr;  // volatile: a runtime null, not a constant
  EXPECT_EQ(Format("%s", null_string), "(null)");
}

TEST(FormatTest, WidthAndPadding) {
  EXPECT_EQ(Format("[%5d][%-3d][%05d][%016lx]", 42, 1, -42, uint64_t{0xabc}),
            "[   42][1  ][-0042][0000000000000abc]");
  EXPECT_EQ(Format("[%8s][%-4s]", "ab", "c"), "[      ab][c   ]");
}

TEST(FormatTest, TruncatesAndTerminates) {
  char buf[6];
  EXPECT_EQ(format(buf, sizeof(buf), "%s", "abcdefgh"), 5);
  EXPECT_STREQ(buf, "abcde");
  EXPECT_EQ(format(buf, 1, "xyz"), 0);
  EXPECT_STREQ(buf, "");
}

}  // namespace

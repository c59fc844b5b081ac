// UTF-8 handling (chapter 00): Python's "replace" rule and safe streaming of token bytes.
#include <catch2/catch.hpp>

#include "decodebook/base/utf8.hpp"

using namespace decodebook;

static const std::string R = "\xEF\xBF\xBD";  // U+FFFD

TEST_CASE("utf8_step follows the well-formed UTF-8 table", "[utf8]") {
    CHECK(utf8_step("a").valid);
    CHECK(utf8_step("\xE2\x82\xAC").length == 3);      // euro sign
    CHECK(utf8_step("\xF0\x9F\x98\x80").length == 4);  // emoji
    CHECK_FALSE(utf8_step("\xC0\xAF").valid);          // overlong
    CHECK_FALSE(utf8_step("\xED\xA0\x80").valid);      // surrogate
    CHECK_FALSE(utf8_step("\xF4\x90\x80\x80").valid);  // above U+10FFFF
    CHECK(utf8_step("\xE2\x82").incomplete);
    CHECK(utf8_step("\xE2\x82").length == 2);
    CHECK(utf8_step("\xE2\x82x").length == 2);  // maximal subpart
    CHECK_FALSE(utf8_step("\xE2\x82x").incomplete);
}

TEST_CASE("invalid bytes become one U+FFFD per maximal subpart as in Python", "[utf8]") {
    // expected values: Python's bytes.decode("utf-8", "replace")
    CHECK(to_valid_utf8("ok") == "ok");
    CHECK(to_valid_utf8("\xff") == R);
    CHECK(to_valid_utf8("a\xE2\x82") == "a" + R);
    CHECK(to_valid_utf8("\xE2\x82" "b") == R + "b");
    CHECK(to_valid_utf8("\xC0\xAF") == R + R);
    CHECK(to_valid_utf8("\xED\xA0\x80") == R + R + R);
    CHECK(to_valid_utf8("\xF0\x9F\x98") == R);
}

TEST_CASE("streaming never prints half a character", "[utf8]") {
    Utf8Stream s;
    CHECK(s.push("h") == "h");
    CHECK(s.push("\xE2") == "");
    CHECK(s.push("\x82") == "");
    CHECK(s.push("\xAC!") == "\xE2\x82\xAC!");
    CHECK(s.push("\xF0\x9F") == "");
    CHECK(s.push("x") == R + "x");  // the cut character never completed
    CHECK(s.push("\xff") == R);
    CHECK(s.push("\xE2\x82") == "");
    CHECK(s.flush() == R);
    CHECK(s.flush() == "");
}

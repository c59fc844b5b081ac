// The JSON-schema subset -> regex converter (chapter 09). PCRE2 is the matcher (whole string, UTF
// mode) and nlohmann::json::parse the independent check that what matches is JSON. The peers' own
// pass/fail lists are ported as facts, each with the file it comes from.
#include <catch2/catch.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/constrain/json_schema.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace decodebook;
using ojson = nlohmann::ordered_json;

namespace {

// A whole-string matcher: PCRE2 with PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED.
class Matcher {
public:
    explicit Matcher(const std::string& regex) {
        int error = 0;
        PCRE2_SIZE offset = 0;
        code_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(),
                                  PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &error, &offset, nullptr));
        if (!code_) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            FAIL("PCRE2 cannot compile the regex at offset " << offset << ": " << message << "\n" << regex);
        }
        data_.reset(pcre2_match_data_create_from_pattern(code_.get(), nullptr));
    }

    bool matches(const std::string& text) const {
        const int rc = pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0,
                                   data_.get(), nullptr);
        // no match, or a subject that is not UTF-8, is "does not match"; a resource limit is a failure
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && !(rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21))
            FAIL("PCRE2 gave up (" << rc << ") on " << text);
        return rc >= 0;
    }

private:
    struct CodeFree {
        void operator()(pcre2_code* c) const { pcre2_code_free(c); }
    };
    struct DataFree {
        void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
    };
    std::unique_ptr<pcre2_code, CodeFree> code_;
    std::unique_ptr<pcre2_match_data, DataFree> data_;
};

bool is_json(const std::string& text) { return nlohmann::json::accept(text); }

// One peer case: every passing string matches (and is JSON), every failing one does not.
void check_case(const std::string& schema, const std::vector<std::string>& passing,
                const std::vector<std::string>& failing, JsonWhitespace whitespace = {}) {
    INFO("schema: " << schema);
    const std::string regex = json_schema_regex(ojson::parse(schema), whitespace);
    INFO("regex: " << regex);
    const Matcher m(regex);
    for (const auto& s : passing) {
        INFO("should match: " << s);
        CHECK(is_json(s));
        CHECK(m.matches(s));
    }
    for (const auto& s : failing) {
        INFO("should not match: " << s);
        CHECK_FALSE(m.matches(s));
    }
}

void check_refused(const std::string& schema, const std::string& words) {
    INFO("schema: " << schema);
    CHECK_THROWS_WITH(json_schema_regex(ojson::parse(schema)), Catch::Contains(words));
}

}  // namespace

// 1. llama.cpp's own cases: tests/test-grammar-integration.cpp (ggml-org/llama.cpp),
//    test_simple_grammar's integer schemas and test_json_schema. 33 schemas: 28 ported as they are,
//    the "Product" example ported without uniqueItems, 4 refused (asserted below, with why).

TEST_CASE("llama.cpp integer bounds cases hold", "[json-schema]") {
    // tests/test-grammar-integration.cpp, test_simple_grammar (11 schemas)
    check_case(R"({"type": "integer", "minimum": 0})", {"0", "10", "12", "10000"},
               {"-1", "-10", "-10000", "-100000000000000000000000000000000", "100000000000000000000000000000000", "00",
                "01", "-0"});
    check_case(R"({"type": "integer", "minimum": 2})", {"2", "3", "4", "10", "20", "1234567890000000"},
               {"0", "1", "-1", "-100", "0", "1", "01", "02", "12345678900000000"});
    check_case(R"({"type": "integer", "minimum": 456})", {"456", "4560", "457", "460", "500"},
               {"455", "356", "50", "050", "-1", "-456"});
    check_case(R"({"type": "integer", "minimum": -123})",
               {"-123", "-122", "-11", "-1", "0", "1", "123", "1234", "2345"}, {"-1234", "-124"});
    check_case(R"({"type": "integer", "maximum": 9999})", {"-99999", "0", "9999"}, {"10000", "99991"});
    check_case(R"({"type": "integer", "maximum": -9999})", {"-10000", "-9999"}, {"-9998", "0", "9999"});
    check_case(R"({"type": "integer", "minimum": 5, "maximum": 30})", {"5", "10", "30"},
               {"05", "4", "-1", "31", "123", "0123"});
    check_case(R"({"type": "integer", "exclusiveMinimum": 0, "maximum": 900719925474091})",
               {"1", "2", "10", "900719925474090", "900719925474091"},
               {"0", "01", "900719925474092", "9007199254740910"});
    check_case(R"({"type": "integer", "minimum": -1, "maximum": 1})", {"-1", "0", "1"},
               {"-11", "-10", "-2", "2", "10", "11"});
    check_case(R"({"type": "integer", "minimum": -123, "maximum": 42})",
               {"-123", "-122", "-13", "-11", "-2", "-1", "0", "1", "5", "10", "39", "40", "42"},
               {"-0123", "-124", "-1123", "-200", "43", "123", "0123"});
    check_case(R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10000})", {"1", "9999"},
               {"0", "01", "10000", "99999"});
}

TEST_CASE("llama.cpp string boolean integer const and enum cases hold", "[json-schema]") {
    // tests/test-grammar-integration.cpp, test_json_schema: "string" to "non-string const" (enum)
    check_case(R"({"type": "string"})", {R"("foo")", R"("bar")", R"("")"}, {R"({})", R"("foo": "bar")"});
    check_case(R"({"type": "string", "minLength": 1})", {R"("foo")", R"("bar")"},
               {R"("")", R"({})", R"("foo": "bar")"});
    check_case(R"({"type": "string", "minLength": 3})", {R"("foo")", R"("bar")", R"("foobar")"},
               {R"("")", R"("f")", R"("fo")"});
    check_case(R"({"type": "string", "maxLength": 3})", {R"("foo")", R"("bar")", R"("")", R"("f")", R"("fo")"},
               {R"("foobar")"});
    check_case(R"({"type": "string", "minLength": 1, "maxLength": 4})",
               {R"("foo")", R"("bar")", R"("f")", R"("barf")"}, {R"("")", R"("barfo")", R"("foobar")"});
    check_case(R"({"type": "boolean"})", {"true", "false"}, {R"("")", R"("true")", "True", "FALSE"});
    check_case(R"({"type": "integer"})", {"0", "12345", "1234567890123456"},
               {"", "01", "007", "12345678901234567  "});
    check_case(R"({"const": "foo"})", {R"("foo")"}, {"foo", R"("bar")"});
    check_case(R"({"const": true})", {"true"}, {"", "foo", R"("true")"});
    check_case(R"({"enum": ["red", "amber", "green", null, 42, ["foo"]]})",
               {R"("red")", "null", "42", R"(["foo"])"}, {"", "420", "true", "foo"});
}

TEST_CASE("llama.cpp pattern and array cases hold", "[json-schema]") {
    // tests/test-grammar-integration.cpp, test_json_schema: "simple pattern" to "min+max items"
    check_case(R"({"pattern": "^[a-zA-Z0-9_-]*$"})", {R"("")", R"("He_llo-12")"}, {R"("!")", R"("Hello World")"});
    check_case(R"({"pattern": "^a\\^\\$\\.\\[\\]\\(\\)\\|\\{\\}\\*\\+\\?b$"})", {R"("a^$.[]()|{}*+?b")"},
               {R"("ab")"});
    check_case(R"({"type": ["array", "null"], "items": {"type": "string"}})",
               {"null", "[]", R"(["123"])", R"(["foo", "bar"])"}, {"", "[123]", R"("foo")", R"(["foo", 42])"});
    check_case(R"({"items": {"type": ["number", "integer"]}, "minItems": 3, "maxItems": 5})",
               {"[1, 2, 3]", "[1, 2, 3, 4]", "[1, 2, 3, 4, 5]"}, {"[1, 2]", "[1, 2, 3, 4, 5, 6]", "1"});
}

TEST_CASE("llama.cpp object property order and required cases hold", "[json-schema]") {
    // tests/test-grammar-integration.cpp, test_json_schema: "object properties" and both
    // "required + optional props each in original order"
    const char* street = R"({"type": "object", "properties": {"number": {"type": "number"},
        "street_name": {"type": "string"}, "street_type": {"enum": ["Street", "Avenue", "Boulevard"]}}})";
    check_case(street,
               {R"({ "number": 1600, "street_name": "Pennsylvania", "street_type":"Avenue"})",
                R"({ "street_name": "Pennsylvania" })", R"({ "number": 1600, "street_name": "Pennsylvania" })", R"({})",
                R"({ "number": 1600, "street_name": "Pennsylvania", "street_type": "Avenue" })"},
               {R"({ "number": "1600", "street_name": "Pennsylvania", "street_type":"Avenue"})",
                R"({ "street_name": "Pennsylvania", "number": 1600 })",
                R"({ "number": 1600, "street_name": "Pennsylvania", "street_type":"Avenue", "direction":"NW"})"});
    const char* street_closed = R"({"type": "object", "properties": {"number": {"type": "number"},
        "street_name": {"type": "string"}, "street_type": {"enum": ["Street", "Avenue", "Boulevard"]}},
        "additionalProperties": false})";
    check_case(street_closed,
               {R"({ "street_name": "Pennsylvania" })", R"({ "number": 1600, "street_type":"Avenue"})",
                R"({ "number": 1600, "street_name": "Pennsylvania" })",
                R"({ "number": 1600, "street_name": "Pennsylvania", "street_type":"Avenue"})",
                R"({ "number": 1600, "street_name": "Pennsylvania", "street_type": "Avenue" })"},
               {R"({ "street_type": "Avenue", "number": 1600 })",
                R"({ "number": 1600, "street_name": "Pennsylvania", "street_type": "Avenue", "direction": "NW" })"});
    const char* bad_order = R"({"properties": {"b": {"type": "string"}, "a": {"type": "string"},
        "d": {"type": "string"}, "c": {"type": "string"}}, "required": ["a", "b"], "additionalProperties": false})";
    check_case(bad_order,
               {R"({"b": "foo", "a": "bar"})", R"({"b":"foo","a":"bar","d":"qux"})",
                R"({"b":"foo", "a":"bar", "d":"qux", "c":"baz"})"},
               {R"({"a": "foo", "b": "bar"})", R"({"b": "bar"})", R"({"a": "foo", "c": "baz"})",
                R"({"a":"foo", "b":"bar", "c":"baz", "d":"qux"})"});
}

// The JSON-Schema "Product" example as llama.cpp's test_json_schema ("required props") has it.
const char* kProduct = R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://example.com/product.schema.json",
    "title": "Product",
    "description": "A product from Acme's catalog",
    "type": "object",
    "properties": {
        "productId": {"description": "The unique identifier for a product", "type": "integer"},
        "productName": {"description": "Name of the product", "type": "string"},
        "price": {"description": "The price of the product", "type": "number", "exclusiveMinimum": 0},
        "tags": {"description": "Tags for the product", "type": "array", "items": {"type": "string"},
                 "minItems": 1, "uniqueItems": true},
        "dimensions": {"type": "object", "properties": {"length": {"type": "number"}, "width": {"type": "number"},
                       "height": {"type": "number"}}, "required": ["length", "width", "height"]}
    },
    "required": ["productId", "productName", "price"]
})";

ojson product_without_unique_items() {
    ojson schema = ojson::parse(kProduct);
    schema["properties"]["tags"].erase("uniqueItems");
    return schema;
}

TEST_CASE("llama.cpp Product example holds without uniqueItems", "[json-schema]") {
    // uniqueItems is refused (a regex cannot remember items; llama.cpp ignores it, its test says
    // "TODO ... currently it passes"), so the example is ported without it, and the refusal is
    // asserted. llama.cpp's other TODO (price -12.50 passes because it ignores exclusiveMinimum)
    // is a failing string here: bounds at 0 are exact for numbers.
    check_refused(kProduct, "/properties/tags/uniqueItems");
    const std::string regex = json_schema_regex(product_without_unique_items());
    const Matcher m(regex);
    for (const char* s :
         {R"({"productId": 1, "productName": "A green door", "price": 12.50})",
          R"({"productId": 1, "productName": "A green door", "price": 12.50, "tags": ["home", "green"]})",
          R"({"productId": 1, "productName": "A green door", "price": 12.50, "tags": ["home", "green"], "dimensions": {"length": 785, "width": 250.5, "height": -0.359}})"}) {
        INFO(s);
        CHECK(m.matches(s));
    }
    for (const char* s :
         {R"({})", R"({"productName": "A green door", "price": 12.50, "productId": 1})",
          R"({"productId": 1, "productName": "A green door", "price": -12.50})",
          R"({"productId": 1, "productName": "A green door"})", R"({"productName": "A green door", "price": 12.50})",
          R"({"productId": 1, "productName": "A green door", "price": 12.50, "tags": []})",
          R"({"productId": 1, "productName": "A green door", "price": 12.50, "dimensions": {"length": 785, "width": 250.5, "height": -0.359}, "tags": ["home", "green"]})"}) {
        INFO(s);
        CHECK_FALSE(m.matches(s));
    }
}

TEST_CASE("llama.cpp cases outside the subset are refused", "[json-schema]") {
    // tests/test-grammar-integration.cpp, test_json_schema: skipped schemas, each refused.
    check_refused("{}", "has no type");                                       // "empty schema": any JSON value
    check_refused(R"({"items": [{"format": "date"}, {"format": "uuid"}, {"format": "time"}, {"format": "date-time"}]})",
                  "\"items\" at /items");                                     // "exotic formats": tuple items
    check_refused(R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "additionalProperties": true})",
                  "/additionalProperties");                                   // additional properties allowed
    check_refused(R"({"type": "object", "properties": {"number": {"type": "number"}}, "additionalProperties": true})",
                  "/additionalProperties");
    // tests/test-json-schema-to-grammar.cpp compares grammar text, which does not apply to a regex;
    // its two failure cases are facts here too.
    check_refused(R"({"type": "kaboom"})", "\"kaboom\", which is not a JSON-schema type");
    check_refused(R"({"type": 123})", "not a type name");
}

// 2. Outlines' cases: outlines-core src/json_schema/mod.rs (test_schema_matches_regex,
//    test_unconstrained_others, with_whitespace_patterns, the recursion tests) and
//    tests/test_json_schema.py. Outlines compares its own regex text too; only the match lists
//    are facts about the language.

TEST_CASE("Outlines scalar cases hold", "[json-schema]") {
    check_case(R"({"title": "Foo", "type": "integer"})", {"0", "1", "-1"}, {"01", "1.3", "t"});
    // Outlines refuses "1.3e9" (its exponent needs a sign); JSON allows it, so that string is not ported.
    check_case(R"({"title": "Foo", "type": "number"})", {"1", "0", "1.3", "-1.3", "1.3e+9", "1.3e9"}, {"01", ".3"});
    check_case(R"({"title": "Foo", "type": "string"})",
               {R"j("(parenthesized_string)")j", R"("malformed) parenthesis (((() string")", R"("quoted_string")",
                R"("double_\\escape")", R"("\\n")", R"("escaped \" quote")", R"("\n")", R"("\/")", R"("\b")",
                R"("\f")", R"("\r")", R"("\t")"},
               {"unquotedstring", R"("escape_\character")", R"("unescaped " quote")"});
    check_case(R"({"title": "Foo", "type": "boolean"})", {"true", "false"}, {"null", "0"});
    check_case(R"({"title": "Foo", "type": "null"})", {"null"}, {"true", "0"});
    check_case(R"({"title": "Foo", "type": "string", "maxLength": 3})", {R"("ab")"}, {R"("a"")", R"("abcd")"});
    check_case(R"({"title": "Foo", "type": "string", "minLength": 3})", {R"("abcd")"}, {R"("ab")", R"("abc"")"});
    check_case(R"({"title": "Foo", "type": "string", "minLength": 3, "maxLength": 5})", {R"("abcd")"},
               {R"("ab")", R"("abcdef"")"});
    check_case(R"({"title": "Foo", "type": "string", "pattern": "^[a-z]$"})", {R"("a")"}, {R"("1")"});
}

TEST_CASE("Outlines const and enum cases hold", "[json-schema]") {
    check_case(R"({"title": "Foo", "const": ".*", "type": "string"})", {R"(".*")"}, {R"("\s*")", R"("\.\*")"});
    check_case(R"({"title": "Foo", "const": "\"", "type": "string"})", {R"("\"")"}, {R"("""")"});
    check_case(R"({"title": "Foo", "const": "Marc", "type": "string"})", {R"("Marc")"}, {R"("Jonh")", R"("Mar")"});
    check_case(R"({"title": "Foo", "const": 0, "type": "integer"})", {"0"}, {"1", "a"});
    check_case(R"({"title": "Foo", "const": true, "type": "boolean"})", {"true"}, {"false", "null"});
    check_case(R"({"title": "Foo", "const": null, "type": "null"})", {"null"}, {"none", ""});
    check_case(R"({"title": "Foo", "enum": ["Marc", "Jean"], "type": "string"})", {R"("Marc")", R"("Jean")"},
               {R"("Jonh")"});
    check_case(R"({"title": "Foo", "enum": [".*", "\\s*"], "type": "string"})", {R"(".*")", R"("\\s*")"},
               {R"("\.\*")"});
    check_case(R"({"title": "Foo", "enum": [0, 1], "type": "integer"})", {"0", "1"}, {"a"});
    // Outlines lets spaces into enum arrays and objects ("[1, 2 ]"); values are written compactly
    // here, as llama.cpp does, so those passing strings are not ported (and must not match).
    check_case(R"({"title": "Foo", "enum": [[1,2],[3,4]], "type": "array"})", {"[1,2]", "[3,4]"},
               {"1", "[1,3]", "[1, 2 ]"});
    check_case(R"({"title": "Foo", "enum": [{"a":"b","c":"d"}, {"e":"f"}], "type": "object"})",
               {R"({"a":"b","c":"d"})", R"({"e":"f"})"}, {"a", R"({"a":"b"})", R"({"a" : "b", "c": "d" })"});
    check_case(R"({"title": "Foo", "enum": [6, 5.3, "potato", true, null, [1,2], {"a":"b"}]})",
               {"6", "5.3", R"("potato")", "true", "null", "[1,2]", R"({"a":"b"})"}, {"none", "53"});
    // "const": 0.2 with "type": "float": float is not a JSON-schema type, so the schema is refused.
    check_refused(R"({"title": "Foo", "const": 0.2, "type": "float"})", "\"float\"");
}

TEST_CASE("Outlines array cases hold", "[json-schema]") {
    check_case(R"({"title": "Foo", "type": "array", "items": {"type": "number"}})", {"[1e+9,1.3]", "[]"},
               {"[1", R"(["a"])"});
    check_case(R"({"title": "Foo", "type": "array", "items": {"type": "integer"}, "minItems": 3})",
               {"[1,2,3]", "[1,2,3,4]"}, {"[1]", "[1,2]", "[]"});
    check_case(R"({"title": "Foo", "type": "array", "items": {"type": "integer"}, "maxItems": 3})",
               {"[1,2,3]", "[1,2]", "[]"}, {"[1,2,3,4]"});
    check_case(R"({"title": "Foo", "type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 1})",
               {"[1]"}, {"[1, 2]", R"(["a"])", "[]"});
    check_case(R"({"title": "Foo", "type": "array", "items": {"type": "integer"}, "minItems": 0, "maxItems": 0})",
               {"[]"}, {"[1, 2]", "[1]", "[1,2,3,4]"});
}

TEST_CASE("Outlines format uuid and date cases hold", "[json-schema]") {
    check_case(R"({"title": "Foo", "type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
               {R"(123e4567-e89b-12d3-a456-426614174000)", R"("123e4567-e89b-12d3-a456-42661417400")",
                R"("123e4567-e89b-12d3-a456-42661417400g")", R"("123e4567-e89b-12d3-a456-42661417400-")", R"("")"});
    check_case(R"({"title": "Foo", "type": "object", "properties": {"uuid": {"type": "string", "format": "uuid"}}})",
               {R"({"uuid": "123e4567-e89b-12d3-a456-426614174000"})"},
               {R"({"uuid":"123e4567-e89b-12d3-a456-42661417400"})", R"({"uuid":"123e4567-e89b-12d3-a456-42661417400g"})",
                R"({"uuid":"123e4567-e89b-12d3-a456-42661417400-"})", R"({"uuid":123e4567-e89b-12d3-a456-426614174000})",
                R"({"uuid":""})"});
    check_case(R"({"title": "Foo", "type": "string", "format": "date"})",
               {R"("2018-11-13")", R"("2016-09-18")", R"("2008-05-11")"},
               {"2018-11-13", R"("2015-13-01")", R"("2022-01")", R"("2022/12/01")"});
    check_case(R"({"title": "Foo", "type": "object", "properties": {"date": {"type": "string", "format": "date"}}})",
               {R"({"date": "2018-11-13"})", R"({"date":"2016-09-18"})", R"({"date":"2008-05-11"})"},
               {R"({"date":"2015-13-01"})", R"({"date":"2022-01"})", R"({"date":"2022/12/01"})", R"({"date":2018-11-13})"});
    // date-time, time, uri and email are outside the subset (4 formats, 6 cases of mod.rs).
    for (const char* format : {"date-time", "time", "uri", "email"})
        check_refused(std::string(R"({"type": "string", "format": ")") + format + "\"}", "/format");
}

TEST_CASE("format date follows the Gregorian calendar", "[json-schema]") {
    const Matcher m(json_schema_regex(ojson::parse(R"({"type": "string", "format": "date"})")));
    auto leap = [](int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; };
    for (int y : {0, 4, 100, 400, 1800, 1896, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9996, 9999}) {
        for (int month = 0; month <= 13; ++month) {
            for (int day = 0; day <= 32; ++day) {
                const int days = month == 2 ? (leap(y) ? 29 : 28) : (month == 4 || month == 6 || month == 9 || month == 11) ? 30 : 31;
                char text[32];
                std::snprintf(text, sizeof text, "\"%04d-%02d-%02d\"", y, month, day);
                INFO(text);
                CHECK(m.matches(text) == (month >= 1 && month <= 12 && day >= 1 && day <= days));
            }
        }
    }
}

TEST_CASE("Outlines anyOf oneOf and type list cases hold", "[json-schema]") {
    const std::vector<std::string> not_one = {"null", "", "12true", R"(1.3"a")", R"(12.3true"a")"};
    check_case(R"({"title": "Foo", "oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]})",
               {"12.3", "true", R"("a")"}, not_one);
    check_case(R"({"title": "Foo", "anyOf": [{"type": "string"}, {"type": "integer"}]})", {"12", R"("a")"},
               {R"(1"a")"});
    check_case(R"({"title": "Foo", "type": ["string", "number", "boolean"]})", {"12.3", "true", R"("a")"}, not_one);
    check_refused(R"({"title": "Foo", "allOf": [{"type": "string"}, {"type": "integer"}]})", "\"allOf\" at /allOf");
}

TEST_CASE("Outlines object cases hold", "[json-schema]") {
    check_case(R"({"title": "Foo", "type": "object", "properties": {"count": {"title": "Count", "type": "integer"}},
                   "required": ["count"]})",
               {R"({ "count": 100 })"}, {R"({ "count": "a" })", ""});
    check_case(R"({"title": "Foo", "type": "object", "properties": {"count": {"title": "Count", "type": "number"}},
                   "required": ["count"]})",
               {R"({ "count": 100 })", R"({ "count": 100.5 })"}, {""});
    check_case(R"({"title": "Bar", "type": "object", "properties": {"fuzz": {"title": "Foo", "type": "object",
                   "properties": {"spam": {"title": "Spam", "type": "integer"}}, "required": ["spam"]}},
                   "required": ["fuzz"]})",
               {R"({ "fuzz": { "spam": 100 }})"},
               {R"({ "fuzz": { "spam": 100, "notspam": 500 }})", R"({ "fuzz": {}})", R"({ "spam": 5}")"});
    check_case(R"({"title": "User", "type": "object", "properties": {"user_id": {"title": "User Id", "type": "integer"},
                   "name": {"title": "Name", "type": "string"}, "a": {"$ref": "#/properties/name"}},
                   "required": ["user_id", "name", "a"]})",
               {R"({"user_id": 100, "name": "John", "a": "Marc"})"}, {R"({"user_id": 100, "name": "John", "a": 0})"});
    check_case(R"({"title": "User", "type": "object", "$defs": {"name": {"title": "Name2", "type": "string"}},
                   "properties": {"user_id": {"title": "User Id", "type": "integer"}, "name": {"title": "Name", "type": "string"},
                   "name2": {"$ref": "#/$defs/name"}}, "required": ["user_id", "name", "name2"]})",
               {R"({"user_id": 100, "name": "John", "name2": "Marc"})"},
               {R"({"user_id": 100, "name": "John", "name2": 0})"});
    // Optional properties around the last required one: first, middle, last, none required.
    check_case(R"({"properties": {"name": {"type": "string"}, "age": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                   "weapon": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["name"],
                   "title": "Character", "type": "object"})",
               {R"({ "name" : "Player" })", R"({ "name" : "Player", "weapon" : "sword" })"},
               {R"({ "age" : 10, "weapon" : "sword" })"});
    check_case(R"({"properties": {"name": {"type": "string"}, "age": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                   "weapon": {"type": "string"}, "strength": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
                   "required": ["name", "weapon"], "title": "Character", "type": "object"})",
               {R"({ "name" : "Player" , "weapon" : "sword" })",
                R"({ "name" : "Player", "age" : 10, "weapon" : "sword" , "strength" : 10 })"},
               {R"({ "weapon" : "sword" })"});
    check_case(R"({"properties": {"name": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "age": {"type": "integer"},
                   "armor": {"type": "string"}, "strength": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                   "weapon": {"title": "Weapon", "type": "string"}}, "required": ["age", "armor", "weapon"],
                   "title": "Character", "type": "object"})",
               {R"({ "name" : "Player", "age" : 10, "armor" : "plate", "strength" : 11, "weapon" : "sword" })",
                R"({ "age" : 10, "armor" : "plate", "weapon" : "sword" })"},
               {R"({ "name" : "Kahlhanbeh", "armor" : "plate", "weapon" : "sword" })"});
    check_case(R"({"properties": {"name": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                   "age": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                   "strength": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}, "title": "Character", "type": "object"})",
               {R"({ "name" : "Player" })", R"({ "name" : "Player", "age" : 10, "strength" : 10 })",
                R"({ "age" : 10, "strength" : 10 })", "{ }"},
               {R"({ "foo": 0 } )"});
    // oneOf of two $refs with a discriminator (outlines issue 823's schema)
    check_case(R"({"$defs": {
          "Cat": {"properties": {"pet_type": {"const": "cat", "enum": ["cat"], "title": "Pet Type", "type": "string"},
                  "meows": {"title": "Meows", "type": "integer"}}, "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
          "Dog": {"properties": {"pet_type": {"const": "dog", "enum": ["dog"], "title": "Pet Type", "type": "string"},
                  "barks": {"title": "Barks", "type": "number"}}, "required": ["pet_type", "barks"], "title": "Dog", "type": "object"}},
        "properties": {"pet": {"discriminator": {"mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}, "propertyName": "pet_type"},
                       "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "title": "Pet"},
                       "n": {"title": "N", "type": "integer"}},
        "required": ["pet", "n"], "title": "Model", "type": "object"})",
               {R"({ "pet": { "pet_type": "cat", "meows": 5 }, "n": 10 })",
                R"({ "pet": { "pet_type": "dog", "barks": 3.5 }, "n": 7 })"},
               {R"({ "pet": { "pet_type": "cat" }, "n": 10 })", R"({ "pet": { "pet_type": "bird", "meows": 2 }, "n": 5 })"});
    // tests/test_json_schema.py, test_build_regex_from_json_schema (pydantic's FooBar schema)
    const char* foobar = R"({"properties": {"foo": {"title": "Foo", "type": "integer"}, "bar": {"title": "Bar", "type": "string"}},
                             "required": ["foo", "bar"], "title": "FooBar", "type": "object"})";
    check_case(foobar, {R"({"foo" : 4 ,"bar":"baz    baz baz bar"})"}, {});
    // ... and with its whitespace pattern [\n ]* the text below: runs of up to 7 whitespace
    // characters, so it matches with max_spaces 7 and not with the default 1.
    const std::string spaced = "{     \"foo\"   :   4, \n\n\n   \"bar\": \"baz    baz baz bar\"\n\n}";
    check_case(foobar, {spaced}, {}, JsonWhitespace{7});
    check_case(foobar, {}, {spaced}, JsonWhitespace{6});
    // mod.rs with_whitespace_patterns, the default [ ]? case
    check_case(R"({"title": "Foo", "type": "object", "properties": {"date": {"type": "string", "format": "date"}}})",
               {R"({"date": "2018-11-13"})", R"({ "date": "2018-11-13"})", R"({"date": "2018-11-13" })"}, {});
}

TEST_CASE("Outlines cases outside the subset are refused", "[json-schema]") {
    // additionalProperties with a schema (2 cases), $id-qualified $ref, prefixItems, the
    // unconstrained {} / object / array, and every recursion test (the regex would need a depth).
    check_refused(R"({"type": "object", "properties": {"test_dict": {"title": "Test Dict", "additionalProperties": {"type": "string"},
                     "type": "object"}}, "required": ["test_dict"]})",
                  "/properties/test_dict/additionalProperties");
    check_refused(R"({"$id": "customer", "type": "object", "properties": {"address": {"$ref": "customer#/$defs/address"}},
                     "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}}})",
                  "not a local JSON pointer");
    check_refused(R"({"title": "Foo", "prefixItems": [{"type": "string"}, {"type": "integer"}]})", "\"prefixItems\" at /prefixItems");
    check_refused(R"({"title": "Foo", "type": "object"})", "without properties");
    check_refused(R"({"type": "array"})", "without items");
    check_refused(R"({"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}})",
                  "is recursive");
    check_refused(R"({"type": "object", "properties": {"node": {"$ref": "#/definitions/node"}}, "definitions": {"node": {"type": "object",
                     "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/definitions/node"}}}}})",
                  "is recursive");
    check_refused(R"({"definitions": {"typeA": {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#/definitions/typeB"}}},
                     "typeB": {"type": "object", "properties": {"value": {"type": "number"}, "next": {"$ref": "#/definitions/typeC"}}},
                     "typeC": {"type": "object", "properties": {"flag": {"type": "boolean"}, "parent": {"$ref": "#/definitions/typeA"}}}},
                     "$ref": "#/definitions/typeA"})",
                  "\"#/definitions/typeA\" at /definitions/typeC/properties/parent/$ref is recursive");
}

TEST_CASE("a $ref follows a JSON pointer with its escapes", "[json-schema]") {
    // RFC 6901: ~1 is / and ~0 is ~, undone once (so ~01 names "~1")
    check_case(R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~01"}},
                   "required": ["x", "y"], "$defs": {"a/b": {"type": "boolean"}, "c~1": {"type": "null"}, "c/": {"type": "string"}}})",
               {R"({"x":true,"y":null})"}, {R"({"x":true,"y":"s"})", R"({"x":null,"y":null})"});
}

// 3. Round trip: documents generated to satisfy a schema match; one violation and they do not.

namespace {

const char* kOrder = R"({"type": "object", "properties": {
    "id": {"type": "integer", "minimum": -50, "maximum": 5000},
    "note": {"type": "string", "maxLength": 6},
    "customer": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 12},
                 "vip": {"type": "boolean"}, "email": {"type": ["string", "null"]}}, "required": ["name"]},
    "lines": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "object", "properties": {
              "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"}, "qty": {"type": "integer", "minimum": 1, "maximum": 99},
              "unit": {"enum": ["kg", "piece", null]}, "price": {"type": "number", "minimum": 0}}, "required": ["sku", "qty"]}},
    "day": {"type": "string", "format": "date"},
    "ref": {"$ref": "#/$defs/ref"}},
  "required": ["id", "customer", "lines"],
  "$defs": {"ref": {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}]}}})";

// Random JSON values valid under the test schemas (only the keywords they use).
class Generator {
public:
    explicit Generator(uint32_t seed) : rng_(seed) {}

    ojson value(const ojson& s, const ojson& root) {
        if (s.contains("$ref")) return value(root["$defs"][s["$ref"].get<std::string>().substr(8)], root);
        if (s.contains("anyOf")) return value(s["anyOf"][pick(s["anyOf"].size())], root);
        if (s.contains("enum")) return s["enum"][pick(s["enum"].size())];
        std::string type = s.contains("properties") ? "object" : "string";
        if (s.contains("type")) type = s["type"].is_array() ? s["type"][pick(s["type"].size())] : s["type"];
        if (type == "object") return object(s, root);
        if (type == "array") {
            ojson a = ojson::array();
            for (int n = between(s.value("minItems", 0), s.value("maxItems", 5)); n > 0; --n) a.push_back(value(s["items"], root));
            return a;
        }
        if (type == "integer") return integer(s);
        if (type == "number") return (between(0, 1) ? 1.0 : 0.001) * between(s.contains("minimum") ? 0 : -9999, 99999);
        if (type == "boolean") return between(0, 1) == 1;
        if (type == "null") return nullptr;
        if (s.contains("pattern")) return sku();
        if (s.value("format", "") == "date") return "20" + digits(2) + "-0" + std::to_string(between(1, 9)) + "-2" + std::to_string(between(0, 8));
        if (s.value("format", "") == "uuid") return hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12);
        return text(between(s.value("minLength", 0), s.value("maxLength", 10)));
    }

    // A string of n characters, some of which JSON must escape and some outside the BMP.
    std::string text(int n) {
        static const char* pool[] = {"a", "Z", " ", "/", "\"", "\\", "\n", "\t", "\x01", "\x7F", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
        std::string out;
        for (int i = 0; i < n; ++i) out += pool[pick(std::size(pool))];
        return out;
    }

    int between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    size_t pick(size_t n) { return size_t(between(0, int(n) - 1)); }

private:
    std::mt19937 rng_;

    ojson object(const ojson& s, const ojson& root) {
        ojson o = ojson::object();
        const ojson required = s.value("required", ojson::array());
        for (const auto& [name, sub] : s["properties"].items())
            if (std::find(required.begin(), required.end(), name) != required.end() || between(0, 1))
                o[name] = value(sub, root);
        return o;
    }
    ojson integer(const ojson& s) {
        const int lo = s.contains("minimum") ? s["minimum"].get<int>() : s.contains("exclusiveMinimum") ? s["exclusiveMinimum"].get<int>() + 1 : -100000;
        const int hi = s.contains("maximum") ? s["maximum"].get<int>() : s.contains("exclusiveMaximum") ? s["exclusiveMaximum"].get<int>() - 1 : 100000;
        return between(lo, hi);
    }
    std::string digits(int n) {
        std::string out;
        while (n-- > 0) out += char('0' + between(0, 9));
        return out;
    }
    std::string hex(int n) {
        std::string out;
        while (n-- > 0) out += "0123456789abcdefABCDEF"[between(0, 21)];
        return out;
    }
    std::string sku() {
        std::string out;
        for (int i = 0; i < 3; ++i) out += char('A' + between(0, 25));
        return out + "-" + digits(between(2, 4));
    }
};

// The JSON text of a string, each character in one of the ways JSON allows (raw, short escape,
// \uXXXX in either case, a surrogate pair), chosen at random.
std::string spell_string(const std::string& s, Generator& g) {
    std::string out = "\"";
    for (size_t i = 0; i < s.size();) {
        const auto lead = static_cast<unsigned char>(s[i]);
        const size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        uint32_t cp = n == 1 ? lead : lead & (0xFF >> (n + 1));
        for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        auto u = [&](uint32_t v) {
            char buf[8];
            std::snprintf(buf, sizeof buf, g.between(0, 1) ? "\\u%04x" : "\\u%04X", v);
            return std::string(buf);
        };
        const std::string long_form = cp >= 0x10000 ? u(0xD800 + ((cp - 0x10000) >> 10)) + u(0xDC00 + ((cp - 0x10000) & 0x3FF)) : u(cp);
        std::string short_form;
        switch (cp) {
            case '"': short_form = "\\\""; break;
            case '\\': short_form = "\\\\"; break;
            case '/': short_form = "\\/"; break;
            case '\b': short_form = "\\b"; break;
            case '\f': short_form = "\\f"; break;
            case '\n': short_form = "\\n"; break;
            case '\r': short_form = "\\r"; break;
            case '\t': short_form = "\\t"; break;
        }
        const bool must = cp < 0x20 || cp == '"' || cp == '\\';
        const int way = g.between(0, 3);
        if (way == 0 || (must && short_form.empty()))
            out += long_form;
        else if (way == 1 && !short_form.empty())
            out += short_form;
        else
            out += must ? short_form : s.substr(i, n);
        i += n;
    }
    return out + "\"";
}

// Only a string with no pattern, format, enum or const may be spelled any way JSON allows; every
// other value and every key is written as json::dump writes it (the regex's canonical form).
bool free_string(const ojson& s) {
    if (!s.contains("type") || s.contains("pattern") || s.contains("format") || s.contains("enum") || s.contains("const"))
        return false;
    const ojson& t = s["type"];
    return t == "string" || (t.is_array() && std::find(t.begin(), t.end(), "string") != t.end());
}

// The JSON text of a value valid under schema s, with 0 to max_spaces whitespace characters
// between any two tokens.
std::string spell(const ojson& v, const ojson& s, Generator& g, int max_spaces) {
    auto ws = [&] {
        std::string out;
        for (int n = g.between(0, max_spaces); n > 0; --n) out += " \t\n\r"[g.between(0, 3)];
        return out;
    };
    if (v.is_string()) return free_string(s) ? spell_string(v.get<std::string>(), g) : v.dump();
    if (v.is_array() && s.contains("items")) {
        if (v.empty()) return "[" + ws() + "]";
        std::string out = "[" + ws();
        for (size_t i = 0; i < v.size(); ++i) out += (i ? ws() + "," + ws() : "") + spell(v[i], s["items"], g, max_spaces);
        return out + ws() + "]";
    }
    if (v.is_object() && s.contains("properties")) {
        if (v.empty()) return "{" + ws() + "}";
        std::string out = "{" + ws();
        bool first = true;
        for (const auto& [k, x] : v.items()) {
            out += (first ? "" : ws() + "," + ws()) + ojson(k).dump() + ws() + ":" + ws() + spell(x, s["properties"][k], g, max_spaces);
            first = false;
        }
        return out + ws() + "}";
    }
    return v.dump();
}

}  // namespace

TEST_CASE("generated documents match and one violation does not", "[json-schema]") {
    const ojson schema = ojson::parse(kOrder);
    Generator g(2024);
    for (int max_spaces : {0, 1, 3}) {
        const Matcher m(json_schema_regex(schema, JsonWhitespace{max_spaces}));
        for (int i = 0; i < 150; ++i) {
            ojson doc = g.value(schema, schema);
            const std::string text = spell(doc, schema, g, max_spaces);
            INFO("document: " << text);
            REQUIRE(nlohmann::ordered_json::parse(text) == doc);  // the generator's text is that JSON
            CHECK(m.matches(text));

            // one violation each, written compactly
            ojson bad = doc;
            switch (i % 7) {
                case 0: bad.erase("customer"); break;                                   // missing required key
                case 1: bad["extra"] = 1; break;                                        // extra key
                case 2: bad["id"] = std::to_string(doc["id"].get<int>()); break;        // wrong type
                case 3: bad["id"] = g.between(0, 1) ? 5001 : -51; break;                // out-of-range integer
                case 4: bad["customer"]["name"] = g.text(13); break;                    // too long string
                case 5: for (int k = int(doc["lines"].size()); k <= 4; ++k) bad["lines"].push_back(doc["lines"][0]); break;  // too many items
                case 6: bad["lines"][0]["qty"] = 0; break;                              // below an item's minimum
            }
            INFO("violation: " << bad.dump());
            CHECK_FALSE(m.matches(bad.dump()));
        }
    }
}

TEST_CASE("string lengths count characters with an escape as one", "[json-schema]") {
    Generator g(7);
    const Matcher m(json_schema_regex(ojson::parse(R"({"type": "string", "minLength": 2, "maxLength": 5})")));
    for (int i = 0; i < 2000; ++i) {
        const int n = g.between(0, 8);
        const std::string text = spell_string(g.text(n), g);
        INFO(text);
        const auto decoded = nlohmann::json::parse(text).get<std::string>();
        const auto characters = std::count_if(decoded.begin(), decoded.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
        REQUIRE(characters == n);
        CHECK(m.matches(text) == (n >= 2 && n <= 5));
    }
    // what JSON refuses, the regex refuses: a lone surrogate, a bad escape, a raw control character
    const Matcher any(json_schema_regex(ojson::parse(R"({"type": "string"})")));
    for (const std::string s : {R"("\ud800")", R"("\udc00x")", R"("\ud800\u0041")", R"("\x")", "\"a\nb\"", "\"\x1F\""}) {
        INFO(s);
        CHECK_FALSE(is_json(s));
        CHECK_FALSE(any.matches(s));
    }
    CHECK(any.matches(R"("\uD83D\uDE00")"));
}

TEST_CASE("every integer in a range matches and its neighbours do not", "[json-schema]") {
    for (auto [lo, hi] : {std::pair{-123, 456}, std::pair{25, 9999}, std::pair{-1000, -7}, std::pair{0, 0}}) {
        const std::string schema = R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" + std::to_string(hi) + "}";
        INFO(schema);
        const Matcher m(json_schema_regex(ojson::parse(schema)));
        for (int n = lo - 2000; n <= hi + 2000; ++n) {
            INFO(n);
            CHECK(m.matches(std::to_string(n)) == (n >= lo && n <= hi));
        }
        for (const char* never : {"-0", "007", "+5", "1e2", "1.0", " 5", "5 "}) CHECK_FALSE(m.matches(never));
    }
    // random ranges up to 16 digits, probed near both bounds and at random
    std::mt19937_64 rng(99);
    const int64_t largest = 9'999'999'999'999'999;
    std::uniform_int_distribution<int64_t> any(-largest, largest);
    for (int r = 0; r < 200; ++r) {
        int64_t lo = any(rng) >> (rng() % 60), hi = any(rng) >> (rng() % 60);
        if (lo > hi) std::swap(lo, hi);
        const std::string schema = R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" + std::to_string(hi) + "}";
        INFO(schema);
        const Matcher m(json_schema_regex(ojson::parse(schema)));
        for (int64_t d = -3; d <= 3; ++d)
            for (int64_t probe : {lo + d, hi + d})
                if (probe >= -largest && probe <= largest) CHECK(m.matches(std::to_string(probe)) == (probe >= lo && probe <= hi));
        for (int k = 0; k < 50; ++k) {
            const int64_t probe = any(rng) >> (rng() % 60);
            CHECK(m.matches(std::to_string(probe)) == (probe >= lo && probe <= hi));
        }
    }
}

TEST_CASE("number bounds at zero follow the sign of the value", "[json-schema]") {
    const std::vector<std::string> numbers = {"0", "-0", "0.0", "-0.000", "0e5", "-0E-3", "1", "-1", "0.5", "-0.5", "0.0001",
                                              "-0.0001", "1e-300", "-1e-300", "12.5E+3", "-3.25e2", "0.00000000000001"};
    for (auto [bounds, allowed] : std::vector<std::pair<std::string, std::function<bool(double)>>>{
             {R"("minimum": 0)", [](double x) { return x >= 0; }},
             {R"("exclusiveMinimum": 0)", [](double x) { return x > 0; }},
             {R"("maximum": 0)", [](double x) { return x <= 0; }},
             {R"("exclusiveMaximum": 0)", [](double x) { return x < 0; }},
             {R"("minimum": 0, "maximum": 0)", [](double x) { return x == 0; }},
             {R"("exclusiveMaximum": 0, "minimum": 0)", [](double) { return false; }}}) {
        const std::string schema = R"({"type": "number", )" + bounds + "}";
        INFO(schema);
        if (bounds == R"("exclusiveMaximum": 0, "minimum": 0)") {
            CHECK_THROWS_WITH(json_schema_regex(ojson::parse(schema)), Catch::Contains("no number satisfies"));
            continue;
        }
        const Matcher m(json_schema_regex(ojson::parse(schema)));
        for (const auto& n : numbers) {
            INFO(n);
            CHECK(m.matches(n) == allowed(std::stod(n)));
        }
    }
}

TEST_CASE("a pattern writes what it matches as nlohmann dump does", "[json-schema]") {
    // ^.x\s$: any character but a line terminator, x, then ASCII whitespace; each written the one way
    // json::dump writes it (a quote as \", a tab as \t, U+0001 as \u0001)
    const Matcher m(json_schema_regex(ojson::parse(R"({"pattern": "^.x\\s$"})")));
    const Matcher negated(json_schema_regex(ojson::parse(R"({"pattern": "^[^a-c]$"})")));
    for (uint32_t cp = 0; cp < 0x250; ++cp) {
        std::string ch;
        if (cp < 0x80) ch = std::string(1, char(cp));
        else ch = {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
        INFO(cp);
        CHECK(m.matches(nlohmann::json(ch + "x ").dump()) == (cp != '\n' && cp != '\r'));
        CHECK(m.matches(nlohmann::json(ch + "x\n").dump()) == (cp != '\n' && cp != '\r'));
        CHECK(m.matches(nlohmann::json("a" + ch + "\t").dump()) == (cp == 'x'));
        CHECK(negated.matches(nlohmann::json(ch).dump()) == (cp < 'a' || cp > 'c'));
    }
    CHECK(m.matches(nlohmann::json("\xF0\x9F\x98\x80x\r").dump()));
    // another spelling of the same string is not the canonical one
    CHECK_FALSE(m.matches(R"("\u0041x ")"));
    check_case(R"({"pattern": "^(ab|c){2,3}\\.[0-9]+\\x41\\x{e9}$"})", {R"("abc.7Aé")", R"("ccab.123Aé")"},
               {R"("ab.7Aé")", R"("abcabab.7Aé")", R"("abc.Aé")"});
}

// Catch2 reads a backslash in a test name as an escape when CTest passes the name back as a filter.
TEST_CASE("schema patterns take the upper-case classes and keep the dot off line terminators as ECMA-262 does", "[json-schema]") {
    // JSON Schema's patterns are ECMA-262 regexes: \S, \D and \W are common (^\S+@\S+$), and `.` is
    // any character but a LineTerminator (\n, \r, U+2028, U+2029), so "a\rb" never matches ^a.b$
    check_case(R"({"type": "string", "pattern": "^\\S+@\\S+$"})", {R"("a@b")", R"("x.y@z.org")"},
               {R"("a b@c")", R"("@b")", R"("a@")", R"("a@b\t")"});
    check_case(R"({"type": "string", "pattern": "^\\D\\W$"})", {R"("a-")", R"("x ")"}, {R"("1-")", R"("ab")", R"("a_")"});
    check_case(R"({"type": "string", "pattern": "^[\\S]$"})", {R"("a")"}, {R"(" ")", R"("\n")"});
    const Matcher dot(json_schema_regex(ojson::parse(R"({"type": "string", "pattern": "^a.b$"})")));
    CHECK(dot.matches(nlohmann::json("axb").dump()));
    CHECK(dot.matches(nlohmann::json("a\u00e9b").dump()));
    for (const std::string t : {"a\nb", "a\rb", "a\u2028b", "a\u2029b"}) {
        INFO(nlohmann::json(t).dump());
        CHECK_FALSE(dot.matches(nlohmann::json(t).dump()));
    }
}

TEST_CASE("a schema nested past the limit is refused before anything recurses that deep", "[json-schema]") {
    // 10,000 nested arrays (240 KB) used to overflow the converter's stack: exit 139 in every program
    std::string deep;
    for (int i = 0; i < 10000; ++i) deep += R"({"type": "array", "items": )";
    deep += R"({"type": "integer"})" + std::string(10000, '}');
    CHECK_THROWS_WITH(parse_json_schema(deep, "deep.json"),
                      Catch::Contains("the JSON schema deep.json nests objects and arrays more than 128 levels deep"));
    // a deep const value, parsed without the bound and handed to the converter: measured, not followed
    const ojson value = ojson::parse(std::string(2000, '[') + "1" + std::string(2000, ']'));
    CHECK_THROWS_WITH(json_schema_regex(ojson{{"const", value}}), Catch::Contains("more than 128 levels deep"));
    // single-branch anyOf, two levels (an object and a list) per schema: 63 of them are 127 deep, 64 are 129
    const auto nested_any_of = [](int n) {
        std::string s;
        for (int i = 0; i < n; ++i) s += R"({"anyOf": [)";
        s += R"({"type": "integer"})";
        for (int i = 0; i < n; ++i) s += "]}";
        return s;
    };
    const Matcher at_limit(json_schema_regex(parse_json_schema(nested_any_of(63), "63.json")));
    CHECK(at_limit.matches("42"));
    CHECK_THROWS_WITH(parse_json_schema(nested_any_of(64), "64.json"), Catch::Contains("more than 128 levels deep"));
    CHECK_THROWS_WITH(json_schema_regex(ojson::parse(nested_any_of(64))), Catch::Contains("more than 128 levels deep"));
}

// Found by fuzz_json_schema's hour-long run (29 Nov 2026): a pattern's groups were read by a
// recursion of their own, unbounded, and a few thousand nested ( overflowed the stack (ASan's
// stack-overflow in PatternReader::sequence; in a server, any client could end it).
TEST_CASE("a schema pattern nested past the limit is refused before its reader recurses that deep", "[json-schema]") {
    const auto with_groups = [](int n) {
        return ojson{{"type", "string"}, {"pattern", "^" + std::string(static_cast<size_t>(n), '(') + "a" +
                                                         std::string(static_cast<size_t>(n), ')') + "$"}};
    };
    const Matcher at_limit(json_schema_regex(with_groups(100)));
    CHECK(at_limit.matches("\"a\""));
    CHECK_THROWS_WITH(json_schema_regex(with_groups(101)), Catch::Contains("groups nested more than 100 deep"));
    CHECK_THROWS_WITH(json_schema_regex(with_groups(200000)), Catch::Contains("groups nested more than 100 deep"));
    // unclosed, as the fuzzer's input was: refused at the limit too, not at the end
    const ojson open{{"type", "string"}, {"pattern", "^" + std::string(100000, '(') + "$"}};
    CHECK_THROWS_WITH(json_schema_regex(open), Catch::Contains("groups nested more than 100 deep"));
}

// Issue 42 item 2: an array writes its items' regex twice, so 20 nested arrays (518 bytes) asked
// for some 100 MB of regex, and the DFA compiler took 15-30 s and 2.7 GB to refuse it. The
// converter now refuses a part that grows past kMaxRegexBytes (1 MiB) as it builds it, naming it.
TEST_CASE("a schema whose regex doubles per level is refused as it grows naming where", "[json-schema]") {
    const auto nested_arrays = [](int n) {
        std::string s;
        for (int i = 0; i < n; ++i) s += R"({"type":"array","items":)";
        return s + R"({"type":"integer"})" + std::string(static_cast<size_t>(n), '}');
    };
    CHECK(nested_arrays(20).size() == 518);
    try {
        (void)json_schema_regex(parse_json_schema(nested_arrays(20), "arrays.json"));
        FAIL("20 nested arrays converted");
    } catch (const Error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK_THAT(what, Catch::StartsWith("the regex of the schema at /items/items/"));
        CHECK_THAT(what, Catch::Contains("grows past 1048576 bytes") && Catch::Contains("nested arrays double it"));
        CHECK_THAT(what, Catch::Contains("fix: make the schema smaller") && !Catch::Contains("{m,n}"));
    }
    // a few levels convert as before: the bound only refuses
    CHECK(json_schema_regex(parse_json_schema(nested_arrays(3), "arrays.json")).size() < 2000);
    // n optional properties write about n^2 / 2 members (one alternative per last member present)
    ojson properties = ojson::object();
    for (int i = 0; i < 1000; ++i) properties["p" + std::to_string(i)] = ojson{{"type", "integer"}};
    CHECK_THROWS_WITH(json_schema_regex(ojson{{"type", "object"}, {"properties", properties}}),
                      Catch::StartsWith("the regex of the root schema grows past 1048576 bytes") &&
                          Catch::Contains("each one is written again after every one before it"));
    // a $ref target is converted once: 40 definitions each naming the one before twice (anyOf
    // keeps one of equal branches) visited the first 2^40 times, and never finished
    ojson defs = ojson::object();
    defs["d0"] = ojson{{"type", "integer"}};
    for (int i = 1; i <= 40; ++i) {
        const std::string before = "#/$defs/d" + std::to_string(i - 1);
        defs["d" + std::to_string(i)] = ojson{{"anyOf", ojson::array({ojson{{"$ref", before}}, ojson{{"$ref", before}}})}};
    }
    CHECK(json_schema_regex(ojson{{"$defs", defs}, {"$ref", "#/$defs/d40"}}) ==
          json_schema_regex(ojson{{"type", "integer"}}));
}

TEST_CASE("whitespace between tokens is bounded by max_spaces", "[json-schema]") {
    const ojson schema = ojson::parse(R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "object", "properties": {}}, "c": {"type": "string"}}, "required": ["a"]})");
    // the tokens of one document; whitespace may stand only between two of them
    const std::vector<std::string> tokens = {"{", "\"a\"", ":", "[", "1", ",", "2", "]", ",", "\"b\"", ":", "{", "}",
                                             ",", "\"c\"", ":", "\"x y\"", "}"};
    std::string compact;
    std::vector<size_t> gaps;
    for (const auto& t : tokens) {
        if (!compact.empty()) gaps.push_back(compact.size());
        compact += t;
    }
    for (int k : {0, 1, 2, 5}) {
        const std::string regex = json_schema_regex(schema, JsonWhitespace{k});
        INFO("max_spaces " << k << ": " << regex);
        // the whitespace class never repeats without bound
        CHECK(regex.find("\\r]*") == std::string::npos);
        CHECK(regex.find("\\r]+") == std::string::npos);
        const Matcher m(regex);
        CHECK(m.matches(compact));
        for (size_t gap : gaps) {
            INFO("gap at " << gap);
            CHECK(m.matches(compact.substr(0, gap) + std::string(k, '\n') + compact.substr(gap)));
            CHECK_FALSE(m.matches(compact.substr(0, gap) + std::string(k + 1, ' ') + compact.substr(gap)));
        }
        CHECK_FALSE(m.matches(" " + compact));
        CHECK_FALSE(m.matches(compact + " "));
    }
    // the unbounded rule the peers used ([ \t\n\r]*, Outlines' whitespace_pattern, llama.cpp before
    // PR #7866) accepts a thousand spaces after the brace; the regex emitted does not
    std::string unbounded = json_schema_regex(schema, JsonWhitespace{1});
    const std::string bounded_ws = "[ \\t\\n\\r]?";
    for (size_t p; (p = unbounded.find(bounded_ws)) != std::string::npos;) unbounded.replace(p, bounded_ws.size(), "[ \\t\\n\\r]*");
    const std::string runaway = "{" + std::string(1000, ' ') + R"("a":[]})";
    CHECK(Matcher(unbounded).matches(runaway));
    CHECK_FALSE(Matcher(json_schema_regex(schema, JsonWhitespace{1})).matches(runaway));
    CHECK_THROWS_WITH(json_schema_regex(schema, JsonWhitespace{-1}), Catch::Contains("max_spaces"));
}

TEST_CASE("nlohmann json sorts properties and ordered_json keeps the schema order", "[json-schema]") {
    const std::string schema = R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}, "required": ["a", "b"]})";
    const Matcher sorted(json_schema_regex(nlohmann::json::parse(schema)));
    const Matcher ordered(json_schema_regex(ojson::parse(schema)));
    CHECK(sorted.matches(R"({"a":1,"b":2})"));
    CHECK_FALSE(sorted.matches(R"({"b":2,"a":1})"));
    CHECK(ordered.matches(R"({"b":2,"a":1})"));
    CHECK_FALSE(ordered.matches(R"({"a":1,"b":2})"));
}

// 4. Errors: every keyword outside the subset is named with its JSON pointer; malformed schemas
//    say what is wrong.

TEST_CASE("unsupported keywords are refused with their name and pointer", "[json-schema]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"type": "object", "properties": {"x": {"type": "string"}}, "patternProperties": {"^y": {}}})", "\"patternProperties\" at /patternProperties"},
        {R"({"type": "object", "properties": {"x": {"type": "integer", "if": {"minimum": 1}, "then": {}, "else": {}}}})", "\"if\" at /properties/x/if"},
        {R"({"type": "array", "items": {"type": "string"}, "uniqueItems": true})", "\"uniqueItems\" at /uniqueItems"},
        {R"({"type": "object", "properties": {"a~b/c": {"type": "string", "format": "email"}}})", "\"format\" at /properties/a~0b~1c/format"},
        {R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "object", "properties": {"y": {"$ref": "#/$defs/x"}}}}})", "is recursive"},
        {R"({"type": "object", "properties": {}, "minProperties": 1})", "\"minProperties\" at /minProperties"},
        {R"({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}})", "\"additionalProperties\" at /additionalProperties"},
        {R"({"allOf": [{"type": "string"}]})", "\"allOf\" at /allOf"},
        {R"({"not": {"type": "string"}})", "\"not\" at /not"},
        {R"({"type": "integer", "multipleOf": 5})", "\"multipleOf\" at /multipleOf"},
        {R"({"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}})", "\"contains\" at /contains"},
        {R"({"type": "string", "nullable": true})", "\"nullable\" at /nullable"},
        {R"({"type": "string", "frobnicate": 1})", "\"frobnicate\" at /frobnicate"},
        {R"({"type": "number", "minimum": 1.5})", "\"minimum\" at /minimum bounds a number at 1.5"},
        {R"({"type": "integer", "minLength": 1})", "\"minLength\" at /minLength does not apply to type integer"},
        {R"({"type": "string", "enum": ["a"], "minLength": 3})", "\"minLength\" at /minLength stands beside enum or const"},
        {R"({"anyOf": [{"type": "string"}], "type": "string"})", "\"type\" at /type stands beside anyOf"},
        {R"({"anyOf": [{"type": "string"}, {"type": "object", "properties": {"q": {"type": "string", "pattern": "^a$", "maxLength": 3}}}]})", "/anyOf/1/properties/q combines pattern and a length"},
        {R"({"type": "string", "pattern": "abc"})", "does not start with ^ and end with $"},
        {R"({"type": "string", "pattern": "^(?=a)b$"})", "a group (?...) other than (?:"},
        {R"({"type": "string", "pattern": "^a*?$"})", "a quantifier after a quantifier"},
        {R"({"type": "string", "pattern": "^\\bword$"})", "the escape \\b"},
        {R"({"type": "string", "pattern": "^a{2000}$"})", "a count above 1000"},
        {R"({"type": "string", "maxLength": 5000})", "\"maxLength\" at /maxLength is 5000"},
        {R"({"type": "array", "items": {"type": "null"}, "maxItems": 5000})", "\"maxItems\" at /maxItems is 5000"},
        {R"({"$ref": "https://example.com/a.json"})", "not a local JSON pointer"},
        {R"({"$ref": "#/$defs/missing"})", "points to nothing"},
        {R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]})", "names \"b\", which is not among the properties"},
        {R"({"enum": [1, 2], "const": 3})", "is not among the enum values"},
        {R"({"enum": [1, 2], "type": "string"})", "has the schema's type"},
        {R"({"type": "integer", "minimum": 10, "maximum": 9})", "no integer of at most 16 digits"},
        {"true", "the boolean schema true"},
    };
    for (const auto& [schema, words] : cases) check_refused(schema, words);
}

TEST_CASE("malformed schemas are refused clearly", "[json-schema]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"type": ["string", 1]})", "malformed schema: \"type\" at /type is [\"string\",1], not a type name"},
        {R"({"type": {"name": "string"}})", "\"type\" at /type is {\"name\":\"string\"}"},
        {R"({"type": "integer", "minimum": "5"})", "malformed schema: \"minimum\" at /minimum is \"5\", not a number"},
        {R"({"type": "integer", "exclusiveMinimum": true, "minimum": 0})", "is a boolean (draft 4), not a number"},
        {R"({"type": "string", "minLength": -1})", "\"minLength\" at /minLength is -1, not a count"},
        {R"({"type": "string", "maxLength": 2.5})", "is 2.5, not a count"},
        {R"({"type": "object", "properties": []})", "\"properties\" at /properties is not an object"},
        {R"({"type": "object", "properties": {"a": 5}})", "the schema at /properties/a is number, not an object"},
        {R"({"type": "object", "properties": {}, "required": "a"})", "\"required\" at /required is not a list"},
        {R"({"enum": []})", "\"enum\" at /enum is not a non-empty list"},
        {R"({"anyOf": {}})", "\"anyOf\" at /anyOf is not a non-empty list of schemas"},
        {R"({"$ref": 5})", "\"$ref\" at /$ref is not a string"},
        {R"({"type": "string", "pattern": 5})", "\"pattern\" at /pattern is not a string"},
        {R"({"type": "string", "pattern": "^[a-$"})", "an unclosed ["},
        {R"({"type": "string", "pattern": "^(a$"})", "an unclosed ("},
    };
    for (const auto& [schema, words] : cases) check_refused(schema, words);
    // every message carries a fix
    CHECK_THROWS_WITH(json_schema_regex(ojson::parse(R"({"type": "integer", "minimum": "5"})")), Catch::Contains("fix: write a number"));
}

TEST_CASE("regex lengths of the Product schema and a nested schema stay modest", "[json-schema]") {
    // Not a speed test: the lengths the DFA compiler receives, printed for the chapter.
    const std::string product = json_schema_regex(product_without_unique_items());
    const std::string order = json_schema_regex(ojson::parse(kOrder));
    WARN("Product regex: " << product.size() << " characters; nested order schema: " << order.size() << " characters");
    CHECK(product.size() < 20000);
    CHECK(order.size() < 20000);
}

#pragma once
/// @file constrain/json_schema.hpp
/// @brief A JSON-schema subset compiled to one regex over the JSON text (chapter 09), in the style
/// of Outlines (outlines-core src/json_schema/parsing.rs, `build_regex_from_schema`) and of
/// llama.cpp (common/json-schema-to-grammar.cpp). The regex is what chapter 09's byte DFA compiles.
///
/// The regex matches a whole text (no anchors are written: the DFA matches whole strings) and
/// uses only the syntax the DFA compiler reads: concatenation, `|`, `( )`, `(?: )`, `* + ?`,
/// `{m}`, `{m,}`, `{m,n}` with n at most 1000, classes with ranges and negation, the escapes
/// `\\ \. \| \( \) \[ \] \{ \} \* \+ \? \^ \$ \/ \- \"`, `\n \t \r`, `\xHH` (below 0x80),
/// `\x{HHHH}`, and `.`.
///
/// **The subset.** Anything else is refused with an `Error` naming the keyword and its JSON
/// pointer (`/properties/tags/uniqueItems`), never silently ignored.
/// - Annotations are ignored: `title`, `description`, `$schema`, `$id`, `$comment`, `default`,
///   `examples`, `deprecated`, `readOnly`, `writeOnly`, OpenAPI's `discriminator` (a hint; the
///   `oneOf` branches already say it), and the containers `$defs` and `definitions`.
/// - `type`: one name or a list of names (`["array", "null"]`: the alternatives). Without
///   `type`, a schema with `properties` is an object, with `items` an array, with `pattern` a
///   string (llama.cpp's inference); any other schema without a type (`{}`, "any JSON value") is
///   refused.
/// - `object`: `properties`, written **in schema order** (Outlines, llama.cpp's tests), with
///   `required` (names that must be among the properties); optional properties may each be
///   absent, and commas follow Outlines' construction (parsing.rs, `parse_properties`). No other
///   property is allowed: `additionalProperties` may be absent or `false`, any other value is
///   refused. An object needs `properties` (a free-form object is refused). The schema order is
///   the order the json value iterates: `nlohmann::ordered_json` keeps the file's order, while
///   `nlohmann::json` sorts keys alphabetically, so parse schemas as `ordered_json`.
/// - `string`: any JSON string (`"`, then characters other than `"`, `\` and U+0000 to U+001F, or
///   the escapes `\" \\ \/ \b \f \n \r \t \uXXXX`, then `"`; a `\u` escape of a lone surrogate is
///   refused, a surrogate pair is one character); `minLength` / `maxLength` count characters (an
///   escape is one). Or `pattern`, which must start with `^` and end with `$` (llama.cpp's rule;
///   JSON Schema's patterns are unanchored searches) and use the syntax above (`\d \w \s` are
///   ASCII, `\D \W \S` their complements; `.` is any character but a line terminator, `\n` `\r`
///   U+2028 U+2029, as in ECMA-262, the dialect of JSON Schema's patterns); each character it matches is written the one way `nlohmann::json::dump` writes it
///   (raw, except `"` `\` and control characters, which take their escapes: a newline that `\s`
///   matches is written `\n`), so other spellings such as `\u0041` for `A` do not match. Or
///   `format`: `date` (full-date of RFC 3339, leap years included) or `uuid`. The three kinds do
///   not combine.
/// - `integer`: canonical JSON integers (no leading zeros, no `-0`, no fraction or exponent);
///   `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, draft 6 and later)
///   compiled to digit ranges as llama.cpp's `build_min_max_int` does; a side without a bound
///   allows at most 16 digits (llama.cpp's `integral-part`).
/// - `number`: JSON number syntax with at most 16 digits in the integer part, the fraction and
///   the exponent each (llama.cpp's `decimal-part`); bounds only at 0 (`minimum: 0`,
///   `exclusiveMinimum: 0`, `maximum: 0`, `exclusiveMaximum: 0`), since sign and zero survive
///   any exponent; other number bounds are refused.
/// - `boolean`, `null`.
/// - `array`: `items` (one schema) with `minItems` / `maxItems` (at most 1001 items).
/// - `enum` / `const` of any JSON values, written compactly as `nlohmann::json::dump` writes them
///   (llama.cpp: `[1,2]`, not `[1, 2]`); `type` beside them keeps the values of that type.
/// - `anyOf` / `oneOf` of schemas, with no keyword beside them but annotations: the
///   alternation of the branches. `oneOf` is read as `anyOf` (as Outlines and llama.cpp do): a
///   text valid under two branches is not refused.
/// - `$ref` to a local JSON pointer (`#/$defs/Name`, `#/definitions/Name`, `#/properties/a`),
///   not recursive: a `$ref` reached again through itself is refused (a regex cannot nest
///   without bound).
/// - Refused with a fix: `allOf`, `not`, `if`/`then`/`else`, `patternProperties`,
///   `propertyNames`, `minProperties`, `maxProperties`, `dependentRequired`, `dependentSchemas`,
///   `unevaluatedProperties`, `prefixItems`, `contains`, `uniqueItems`, `multipleOf`, other
///   formats, recursive or remote `$ref`, and any keyword not named here.
///
/// **Whitespace is bounded.** Between two tokens of the JSON text (after `{` `[` `,` `:`, before
/// `}` `]` `,` `:`) the regex allows 0 to `max_spaces` of the four JSON whitespace characters,
/// and nowhere else (not before or after the whole value): never `[ \t\n\r]*`, whose unbounded
/// repetition lets a model write whitespace forever (llama.cpp PR #7866, dottxt-ai/outlines#484).
/// Introduced in chapter 09.
#include <nlohmann/json_fwd.hpp>

#include <string>

namespace decodebook {

/// The deepest nesting of objects and arrays a schema file may have (its values, `enum` and
/// `const` included): deeper is refused while parsing and while converting, before the
/// recursion it would take. Introduced in chapter 09.
constexpr int kMaxSchemaNesting = 128;

/// Parse a schema file's text keeping its key order, refusing nesting deeper than
/// kMaxSchemaNesting as it reads (nlohmann's parser callback), so no later step recurses that
/// deep. Introduced in chapter 09.
/// @param text the file's bytes
/// @param name the file, for the messages
/// @throws Error for text that is not JSON or nests too deep.
nlohmann::ordered_json parse_json_schema(const std::string& text, const std::string& name);

/// How the JSON a schema allows may be spaced. Introduced in chapter 09.
struct JsonWhitespace {
    int max_spaces = 1;  ///< at most this many whitespace characters where JSON allows whitespace (0: compact)
};

/// A regex matching exactly the JSON texts the schema allows (its supported subset, above), with
/// properties in the order `nlohmann::json` iterates them: alphabetical. Introduced in chapter 09.
/// @param schema the JSON schema, parsed
/// @param whitespace how many whitespace characters may stand between two tokens
/// @return the regex, to be matched against a whole text
/// @throws Error naming the first keyword outside the subset (its JSON pointer), a malformed schema,
/// nesting deeper than kMaxSchemaNesting, or a part whose regex grows past 1 MiB as it is built
/// (nested arrays double it), naming the part.
std::string json_schema_regex(const nlohmann::json& schema, const JsonWhitespace& whitespace = {});

/// The same regex with properties in the schema's own order, which `nlohmann::ordered_json`
/// keeps (parse a schema file with `nlohmann::ordered_json::parse`). Introduced in chapter 09.
/// @param schema the JSON schema, parsed keeping its key order
/// @param whitespace how many whitespace characters may stand between two tokens
/// @return the regex, to be matched against a whole text
/// @throws Error naming the first keyword outside the subset (its JSON pointer), a malformed schema,
/// nesting deeper than kMaxSchemaNesting, or a part whose regex grows past 1 MiB as it is built.
std::string json_schema_regex(const nlohmann::ordered_json& schema, const JsonWhitespace& whitespace = {});

}  // namespace decodebook

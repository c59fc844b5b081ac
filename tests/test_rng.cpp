// The project's RNG (chapter 00): bit-exact against the reference and the published splitmix64.
#include <catch2/catch.hpp>

#include <string>

#include "decodebook/base/rng.hpp"
#include "golden.hpp"

using namespace decodebook;

TEST_CASE("splitmix64 gives its published first output", "[rng]") {
    // splitmix64 seeded with 0: first output 0xE220A8397B1DCDAF (Vigna's reference code)
    CHECK(splitmix64(0) == 0xE220A8397B1DCDAFull);
}

TEST_CASE("coins lie in the unit interval and seeds give different streams", "[rng]") {
    Rng a(1), b(2);
    bool differ = false;
    for (int i = 0; i < 10000; ++i) {
        const double x = a.coin();
        REQUIRE(x >= 0.0);
        REQUIRE(x < 1.0);
        differ = differ || x != b.coin();
    }
    CHECK(differ);
}

TEST_CASE("the RNG matches the reference bit for bit", "[rng][reference]") {
    const nlohmann::json g = golden::load("rng.json");
    REQUIRE(g["cases"].size() >= 4);
    for (const auto& c : g["cases"]) {
        Rng rng(c["seed"].get<uint64_t>());
        INFO("seed " << c["seed"].get<uint64_t>());
        for (const auto& u : c["u64"]) CHECK(std::to_string(rng.next_u64()) == u.get<std::string>());
        for (const auto& coin : c["coins"]) CHECK(rng.coin() == coin.get<double>());
    }
}

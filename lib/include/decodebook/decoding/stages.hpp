#pragma once
/// @file decoding/stages.hpp
/// @brief Every logits stage as one row, and each engine's order as a list of stage names
/// (chapters 02-04, 10). Which engine has which knob, and which knobs a mirostat chain ignores,
/// are derived from these rows and orders; nothing else states them.
///
/// Adding a processor: a pure function in sampling/, one StageRow here (with its knob, if new,
/// in the knob table), and its name in the orders of the engines that have it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/processor.hpp"

namespace decodebook {

/// One knob that switches a stage on. Introduced in chapter 10.
struct StageSwitch {
    const char* knob;                           ///< as the knob table spells it, e.g. "typical_p"
    bool (*on)(const GenerationConfig& config);  ///< the one place this knob's "on" is written
    const char* off;                            ///< the value that turns it off, for messages ("1")
};

/// A logits stage: everything the library knows about it, in one row. Introduced in chapter 10.
struct StageRow {
    const char* name;  ///< what the orders list, e.g. "typical_p"
    /// A warper shapes only the distribution a sample is drawn from: a greedy chain skips it.
    bool warper;
    /// The knobs that switch it on; the stage runs when any of them is on.
    std::vector<StageSwitch> switches;
    /// The processor the config asks for. Nothing only where the stage's own rule leaves it inert
    /// with a switch on (XTC's threshold above 0.5, DRY's window of 0).
    std::optional<Processor> (*make)(const GenerationConfig& config);
    /// A stage of the same order this one takes the place of while it is on (dynamic
    /// temperature replaces temperature), or nullptr.
    const char* replaces = nullptr;
    /// True when any switch is on.
    bool on(const GenerationConfig& config) const;
};

/// An engine's chain, as stage names, first to last. Introduced in chapter 03.
struct EngineOrder {
    ChainOrder order;                 ///< the engine (`--order`)
    std::vector<std::string> stages;  ///< the chain that ends in argmax or a sample
    /// The chain that mirostat ends (llama.cpp's common_sampler_init); empty: the engine has no mirostat.
    std::vector<std::string> mirostat_stages{};
};

/// The rows and the orders. The library's is stage_table(); a test may build its own.
/// Introduced in chapter 10.
struct StageTable {
    std::vector<StageRow> rows;       ///< one per stage; the refusals walk them in this order
    std::vector<EngineOrder> orders;  ///< one per engine
    /// @throws Error for a name no row has.
    const StageRow& row(std::string_view name) const;
    /// @throws Error for an order the table has no row for.
    const EngineOrder& order(ChainOrder order) const;
    /// The orders with a stage that `knob` switches (a mirostat chain counts for "mirostat"), in
    /// the table's order of orders: derived, never written down.
    std::vector<ChainOrder> orders_with(std::string_view knob) const;
    /// The processors of the stages `config` switches on, in its order's chain (the mirostat chain
    /// when config.mirostat is set); warpers only when `warpers` (runs_warpers(config)); a stage
    /// replaced by another that is on is skipped.
    std::vector<Processor> processors(const GenerationConfig& config, bool warpers) const;
    /// A knob that is on under an order none of whose stages it switches is refused, naming the
    /// orders that have it; with mirostat, a knob that switches a stage its order's mirostat chain
    /// lacks is refused rather than ignored.
    /// @throws Error naming the knob, its value and the fix.
    void check_engine(const GenerationConfig& config) const;
};

/// The library's stages and the three engines' orders (hf, llama.cpp, vllm), each following the
/// engine's code (cited in decoding/stages.cpp). Introduced in chapter 10.
const StageTable& stage_table();

}  // namespace decodebook

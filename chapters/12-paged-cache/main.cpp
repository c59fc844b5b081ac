// Chapter 12 - The cache as shared memory: paged keys and values, prefix caching, n samples,
// chunked prefill and preemption.
//
// Chapter 07 gave every running request a row of the cache as long as the longest request, and two
// requests that share a system prompt computed it twice. Here the cache is a pool of small blocks:
// a request's block table lists its blocks, a prompt whose first blocks are cached (hashed over
// their tokens and every token before) reuses them, n samples of one prompt share its blocks, a
// long prompt can be prefilled in chunks between decode steps, and a request the pool cannot hold
// gives its blocks back to be recomputed later. This program draws the tables, replays vLLM's
// worked example, and measures each idea on the embedded model.
//
// Library code this chapter introduces: BlockPool, FreeBlockQueue, hash_block_tokens,
// hash_full_blocks (decoding/block_pool.hpp); PagedKvCache, PagedSlot (model/paged_kv_cache.hpp);
// Gpt2's paged prefill and decode, attend_rows over block tables (kernels.hpp); serve_paged,
// PagedServeOptions, PagedServeStats (decoding/paged_serving.hpp); ServeRequest::n,
// ServeClock::computed, ServedRequest::token_times, check_serve_requests (serving.hpp).
#include <cstdio>
#include <optional>

#include "chapter12.hpp"

using namespace decodebook;
using namespace chapter12;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-12", "The cache as shared memory: paged blocks, prefix caching, "
                                        "n samples, chunked prefill, preemption.",
                                        "What is the meaning of life? A:");
    info.defaults.temperature = 0.8f;   // the workload samples: each seed its own text
    info.defaults.top_k = 40;
    info.defaults.max_new_tokens = 24;  // every request of parts 3, 4 and 6 runs this long (no EOS)
    info.show_steps = false;            // its parts are tables of their own
    info.csv_columns = "series,x,y";    // part 5's token times, for the page's plot
    info.steers = {{"parts 3, 4 and 6", {"max-new-tokens", "do-sample", "temperature", "top-k", "top-p", "min-p"}}};
    // --prompt: the first question after the preamble, in parts 1, 3, 4 and 6
    info.extra = {{"block-size", "positions per block in parts 3 and 4 (1..64; vLLM's default is 16)", "16"}};
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const int block_size = opt.extra_int("block-size", 1, 64);  // checked before anything runs
        const Session session = open_session(opt);
        const Questions questions{opt.prompt, kMoreQuestions[0], kMoreQuestions[1]};  // each after the preamble

        std::printf("== 1. Block tables: two prompts that share a preamble, and a second sample of one ==\n");
        block_tables(session, questions);

        std::printf("\n== 2. vLLM's worked example of prefix caching, replayed ==\n");
        vllm_example();

        std::printf("\n== 3. Requests that share a system prompt: rows, the pool, prefix caching, n samples ==\n");
        shared_prompt(session, questions, block_size);

        std::printf("\n== 4. A hot cache against the cold run ==\n");
        hot_against_cold(session, questions, block_size);

        std::printf("\n== 5. Chunked prefill: a long prompt among running requests ==\n");
        SeriesRows csv;
        chunked_prefill(session, questions, csv);

        std::printf("\n== 6. Preemption: a pool too small for everything that runs ==\n");
        preemption(session, questions);

        if (!opt.csv.empty()) {
            write_series_csv(opt.csv, info.csv_columns, csv);
            std::printf("\n(wrote part 5's token times on the cost clock to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 12 grades them):\n");
        report_exercises(session, questions);
        return 0;
    });
}

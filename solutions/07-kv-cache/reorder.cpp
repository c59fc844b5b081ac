// Exercise 07.3 - Reordering the cache for beam search (worked solution; the library's twin is
// decodebook::reorder_rows).
#include <algorithm>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

void your_reorder_rows(xt::xtensor<float, 3>& rows, const std::vector<int>& source) {
    const size_t R = rows.shape(0), row_size = rows.shape(1) * rows.shape(2);
    if (source.size() != R)
        throw Error(std::to_string(source.size()) + " sources for " + std::to_string(R) + " rows",
                    "pass one source row per row");
    for (int s : source)
        if (s < 0 || static_cast<size_t>(s) >= R)
            throw Error("source row " + std::to_string(s) + " does not exist", std::string("pass rows 0..") + std::to_string(R - 1));
    // Copying row by row in place would read rows already overwritten (source {1, 0} gives B B):
    // copy the old rows first, then write every row from that copy.
    const xt::xtensor<float, 3> old = rows;
    for (size_t r = 0; r < R; ++r)
        std::copy_n(old.data() + static_cast<size_t>(source[r]) * row_size, row_size, rows.data() + r * row_size);
}

}  // namespace decodebook

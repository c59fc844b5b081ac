// Chapter 07: the vocabulary as a value (chapter 09's token masks read it).
#include "decodebook/base/vocabulary.hpp"

#include <algorithm>

namespace decodebook {

bool Vocabulary::is_special(int id) const { return std::binary_search(special.begin(), special.end(), id); }

}  // namespace decodebook

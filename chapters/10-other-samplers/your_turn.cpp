// Chapter 10: the chapter's examples through your exercises (exercises/10-other-samplers/).
#include "chapter10.hpp"

using namespace decodebook;

namespace chapter10 {

void report_exercises(const Session&) {}

}  // namespace chapter10

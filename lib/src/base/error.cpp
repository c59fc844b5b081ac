#include "decodebook/base/error.hpp"

namespace decodebook {

Error::Error(const std::string& problem, const std::string& fix)
    : std::runtime_error(problem + "\n  fix: " + fix), problem_(problem), fix_(fix) {}

}  // namespace decodebook

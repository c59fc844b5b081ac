// The module (the student's code as a shared object) this test program grades: compiled into
// each test program with its own path (tests/CMakeLists.txt).
#include "sandbox.hpp"

const char* sandbox::module_path() { return DECODEBOOK_STUDENT_MODULE; }

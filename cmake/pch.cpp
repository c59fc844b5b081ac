// Empty: the target decodebook_pch exists only to build the precompiled header (see CMakeLists.txt).

# add_chapter(NN-name): builds chapters/NN-name/*.cpp into the executable `chapter-NN`,
# linked against the shared library (lib/), your exercises (or the solutions) and the shared
# option parser.
function(add_chapter dir)
  string(SUBSTRING "${dir}" 0 2 number)
  set(target chapter-${number})
  file(GLOB sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/chapters/${dir}/*.cpp")
  add_executable(${target} ${sources})
  target_link_libraries(${target} PRIVATE decodebook decodebook_student decodebook_cli)
  set_property(GLOBAL APPEND PROPERTY DECODEBOOK_CHAPTERS ${target})
endfunction()

# add_chapter(NN-name): one chapter of the course, isolated from the others.
#
#   chapter-NN       the executable: chapters/NN-name/*.cpp, linked against the shared library
#                    (lib/), the option parser, and this chapter's exercises only
#   exercises_NN     your stubs of this chapter: ${DECODEBOOK_EXERCISES_DIR}/NN-name/*.cpp
#   solutions_NN     the worked answers: solutions/NN-name/*.cpp
#   student_NN       what chapter-NN and exercise_tests_NN use: exercises_NN, or solutions_NN
#                    when DECODEBOOK_SOLUTIONS is ON
# A stub of chapter 04 that does not compile breaks only exercises_04, chapter-04 and
# exercise_tests_04: `make chapter-00` and `./grade 00` still work. The tests of each chapter
# are added by tests/CMakeLists.txt (exercise_tests_NN, solution_tests_NN).
#
# USES MM ...: this chapter's exercises call yours from chapter MM (01.2 runs your 00.2 loop with
# your 01.1 argmax), so exercises_NN links exercises_MM.
function(add_chapter dir)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "USES")
  string(SUBSTRING "${dir}" 0 2 number)
  file(GLOB exercise_sources CONFIGURE_DEPENDS "${DECODEBOOK_EXERCISES_DIR}/${dir}/*.cpp")
  file(GLOB solution_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/solutions/${dir}/*.cpp")
  if(exercise_sources)
    add_library(exercises_${number} STATIC ${exercise_sources})
    add_library(solutions_${number} STATIC ${solution_sources})
    if(NOT DECODEBOOK_SOLUTIONS AND NOT DECODEBOOK_COURSE_TESTS)  # built only when something uses them
      set_target_properties(solutions_${number} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
    target_link_libraries(exercises_${number} PUBLIC decodebook)
    target_link_libraries(solutions_${number} PUBLIC decodebook)
    foreach(used IN LISTS arg_USES)
      target_link_libraries(exercises_${number} PUBLIC exercises_${used})
      target_link_libraries(solutions_${number} PUBLIC solutions_${used})
    endforeach()
    if(DECODEBOOK_SOLUTIONS)
      add_library(student_${number} ALIAS solutions_${number})
    else()
      add_library(student_${number} ALIAS exercises_${number})
    endif()
    set_property(GLOBAL APPEND PROPERTY DECODEBOOK_COURSE_CHAPTERS ${number})
  endif()

  # A chapter whose program is not written yet (its exercises came first) builds only its exercises.
  file(GLOB sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/chapters/${dir}/*.cpp")
  if(NOT sources)
    return()
  endif()
  set(target chapter-${number})
  add_executable(${target} ${sources})
  target_link_libraries(${target} PRIVATE decodebook decodebook_cli)
  if(exercise_sources)
    target_link_libraries(${target} PRIVATE student_${number})
  endif()
  set_property(GLOBAL APPEND PROPERTY DECODEBOOK_CHAPTERS ${target})
endfunction()

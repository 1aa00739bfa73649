# Helpers that give every lesson the same shape.
#
#   attn_lesson(NUMBER 1
#               KERNELS v1_naive.cu probes.cu ...    # launchers: go into the lesson and libattn_lessons
#               HOST    cpu_model.c ...               # host C the launchers or tests need (optional)
#               MAIN    main.c                        # the runnable program
#               [ARCHS  86]                           # CUDA architectures (default: ATTN_ARCHS)
#               [HOPPER])                             # sm_90a only (ATTN_ARCHS_HOPPER); left out,
#                                                     # with a message, when that list lacks 90a
#
# makes
#   attn_lNN        an object library (PIC) with the kernels and host code, linked into the lesson
#                   program, the tests and the shared library libattn_lessons
#   lesson-N        the program (bin/lesson-N); `make lesson-N` builds it and points ./run at it
#
# The lesson's folder is on the include path of whatever links attn_lNN, so tests include "<name>.h".

set_property(GLOBAL PROPERTY ATTN_LESSON_OBJECT_LIBS "")

function(attn_lesson)
  cmake_parse_arguments(L "HOPPER" "NUMBER;MAIN" "KERNELS;HOST;ARCHS" ${ARGN})
  if(NOT L_NUMBER OR NOT L_MAIN)
    message(FATAL_ERROR "attn_lesson: NUMBER and MAIN are required")
  endif()
  if(NOT L_ARCHS)
    set(L_ARCHS "${ATTN_ARCHS}")
  endif()
  # A Hopper lesson (wgmma, setmaxnreg) is built only for sm_90a; without it, it is left out, loudly.
  if(L_HOPPER)
    set(L_ARCHS "${ATTN_ARCHS_HOPPER}")
    if(NOT "90a" IN_LIST L_ARCHS AND NOT "90a-real" IN_LIST L_ARCHS)
      message(STATUS "lesson ${L_NUMBER}: not built: it needs sm_90a, and ATTN_ARCHS_HOPPER is "
                     "\"${ATTN_ARCHS_HOPPER}\" (make ARCH_HOPPER=90a)")
      return()
    endif()
  endif()
  if(L_NUMBER LESS 10)
    set(nn "0${L_NUMBER}")
  else()
    set(nn "${L_NUMBER}")
  endif()

  set(objlib attn_l${nn})
  add_library(${objlib} OBJECT ${L_KERNELS} ${L_HOST})
  target_include_directories(${objlib} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${objlib} PUBLIC attn_common)
  set_target_properties(${objlib} PROPERTIES CUDA_ARCHITECTURES "${L_ARCHS}")
  target_compile_options(${objlib} PRIVATE $<$<COMPILE_LANGUAGE:C>:${ATTN_C_WARNINGS}>)

  add_executable(lesson-${L_NUMBER} ${L_MAIN})
  target_link_libraries(lesson-${L_NUMBER} PRIVATE ${objlib} attn_common)
  target_compile_options(lesson-${L_NUMBER} PRIVATE ${ATTN_C_WARNINGS})
  # nvcc links device code of the objects; the program itself is C.
  set_target_properties(lesson-${L_NUMBER} PROPERTIES LINKER_LANGUAGE CUDA CUDA_ARCHITECTURES "${L_ARCHS}")

  set_property(GLOBAL APPEND PROPERTY ATTN_LESSON_OBJECT_LIBS ${objlib})
endfunction()

# libattn_lessons: every lesson's launchers plus the harness, for tests, bench scripts (ctypes) and
# readers' own programs. Called once, after every lesson folder has been added.
function(attn_add_shared_library)
  get_property(objlibs GLOBAL PROPERTY ATTN_LESSON_OBJECT_LIBS)
  set(objects "")
  foreach(o IN LISTS objlibs)
    list(APPEND objects $<TARGET_OBJECTS:${o}>)
  endforeach()
  add_library(attn_lessons SHARED ${objects} $<TARGET_OBJECTS:attn_common_obj>)
  target_link_libraries(attn_lessons PUBLIC CUDA::cudart)
  if(OpenMP_C_FOUND)
    target_link_libraries(attn_lessons PUBLIC OpenMP::OpenMP_C)
  endif()
  target_link_libraries(attn_lessons PUBLIC m)
  set_target_properties(attn_lessons PROPERTIES LINKER_LANGUAGE CUDA)
endfunction()

# A drill: the checklist tests of lesson N, built twice.
#
#   attn_drill(NUMBER 2 CHECKLIST checklist.c DRILL ${CMAKE_SOURCE_DIR}/drills/02_online_softmax.c
#              SOLUTION state.c)
#
#   drill-N        the checklist against the reader's file in drills/ (`make drill-N` runs it). The file
#                  ships with empty bodies, so out of the box this program FAILS: `make drill-check`
#                  (run by CI) insists on that, which proves the checklist can fail.
#   checklist-N    the same checklist against the lesson's own code; a ctest case that must pass.
function(attn_drill)
  cmake_parse_arguments(D "" "NUMBER;CHECKLIST;DRILL" "SOLUTION" ${ARGN})
  if(NOT CHECK_FOUND)
    message(STATUS "drill-${D_NUMBER}: Check not found, drill not built")
    return()
  endif()
  add_executable(drill-${D_NUMBER} ${D_CHECKLIST} ${D_DRILL})
  add_executable(checklist-${D_NUMBER} ${D_CHECKLIST} ${D_SOLUTION})
  foreach(t drill-${D_NUMBER} checklist-${D_NUMBER})
    target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/drills)
    target_link_libraries(${t} PRIVATE PkgConfig::CHECK m)
    target_compile_options(${t} PRIVATE ${ATTN_C_WARNINGS})
  endforeach()
  add_test(NAME checklist-${D_NUMBER} COMMAND checklist-${D_NUMBER})
  set_tests_properties(checklist-${D_NUMBER} PROPERTIES LABELS "cpu;checklist")
  set_property(GLOBAL APPEND PROPERTY ATTN_DRILLS ${D_NUMBER})
endfunction()

# A Check test program registered with ctest.
#
#   attn_test(NAME test_rng SOURCES test_rng.c [GPU] [LIBS attn_l01] [LABELS ...])
#
# GPU tests exit 77 when no usable device exists; ctest then lists them as skipped, not passed.
function(attn_test)
  cmake_parse_arguments(T "GPU" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT CHECK_FOUND)
    return()
  endif()
  # .cu sources build apart from the C ones: Check's and -Werror's flags are for the C compiler only.
  set(c_sources ${T_SOURCES})
  set(cu_sources ${T_SOURCES})
  list(FILTER c_sources EXCLUDE REGEX "\\.cu$")
  list(FILTER cu_sources INCLUDE REGEX "\\.cu$")
  add_executable(${T_NAME} ${c_sources})
  if(cu_sources)
    add_library(${T_NAME}_kernels OBJECT ${cu_sources})
    target_include_directories(${T_NAME}_kernels PRIVATE ${CMAKE_SOURCE_DIR}/tests)
    target_link_libraries(${T_NAME}_kernels PRIVATE attn_common)
    target_link_libraries(${T_NAME} PRIVATE ${T_NAME}_kernels)
  endif()
  target_include_directories(${T_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} attn_common PkgConfig::CHECK m)
  target_compile_options(${T_NAME} PRIVATE ${ATTN_C_WARNINGS})
  set_target_properties(${T_NAME} PROPERTIES LINKER_LANGUAGE CUDA)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  if(T_GPU)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;${T_LABELS}")
  else()
    set_tests_properties(${T_NAME} PROPERTIES LABELS "cpu;${T_LABELS}")
  endif()
endfunction()

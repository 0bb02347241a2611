# tern_module(<name> [DEPS <tern modules>] [LIBS <system libs>])
#
# Every module lives in one folder: include/ (public API), src/ (private),
# bin/<name>.c (programs), test/test_*.c (unit tests, one program each, run by the harness),
# fuzz/fuzz_*.c (libFuzzer targets, built with TERN_FUZZ=ON).
# The library is libtern<name>.so; a module sees only the public headers of
# the modules it names in DEPS.
function(tern_module name)
  cmake_parse_arguments(M "" "" "DEPS;LIBS" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/src/*.c)
  set(lib tern${name})
  add_library(${lib} SHARED ${srcs})
  target_include_directories(${lib} PUBLIC ${dir}/include PRIVATE ${dir}/src)
  set(deps)
  foreach(d ${M_DEPS})
    list(APPEND deps tern${d})
  endforeach()
  target_link_libraries(${lib} PUBLIC ${deps} ${M_LIBS})
  install(TARGETS ${lib} LIBRARY DESTINATION lib)
  install(DIRECTORY ${dir}/include/ DESTINATION include)

  # Programs: bin/<name>.c becomes build/bin/<name>, linked with the module.
  file(GLOB progs CONFIGURE_DEPENDS ${dir}/bin/*.c)
  foreach(pg ${progs})
    get_filename_component(pn ${pg} NAME_WE)
    add_executable(${pn} ${pg})
    target_link_libraries(${pn} PRIVATE ${lib})
    install(TARGETS ${pn} RUNTIME DESTINATION bin)
  endforeach()

  file(GLOB tests CONFIGURE_DEPENDS ${dir}/test/test_*.c)
  foreach(t ${tests})
    get_filename_component(tn ${t} NAME_WE)
    set(exe ${name}_${tn})
    add_executable(${exe} ${t})
    target_include_directories(${exe} PRIVATE ${dir}/src)
    target_link_libraries(${exe} PRIVATE ${lib} terntest)
    # test/vectors/: captures of real peers' traffic that tests replay
    target_compile_definitions(${exe} PRIVATE TERN_TEST_VECTORS="${dir}/test/vectors")
    set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  endforeach()

  if(TERN_FUZZ)
    file(GLOB fuzzers CONFIGURE_DEPENDS ${dir}/fuzz/fuzz_*.c)
    foreach(f ${fuzzers})
      get_filename_component(fn ${f} NAME_WE)
      add_executable(${fn} ${f})
      # tern_fuzz.h (the stateful targets' watchdog) lives with the test harness
      target_include_directories(${fn} PRIVATE ${dir}/src ${CMAKE_SOURCE_DIR}/stack/common/testing)
      target_link_libraries(${fn} PRIVATE ${lib})
      target_link_options(${fn} PRIVATE -fsanitize=fuzzer)
      set_target_properties(${fn} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
    endforeach()
  endif()
endfunction()

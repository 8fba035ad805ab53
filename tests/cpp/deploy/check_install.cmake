# Tests of a C++ installation of ember, run by ctest as `cmake -P` scripts (the deploy.* tests
# of CMakeLists.txt):
#
#   STEP=install     installs the build (then moves it to WORK/prefix), checks its files,
#                    configures and builds examples/cpp against it as an outside project
#                    (find_package(ember)), and checks with nm that run_saved holds no
#                    compiler code
#   STEP=run         the outside save_model (ember::ember) compiles and saves a model with a
#                    symbolic batch, writes an input and the expected output; the outside
#                    run_saved (ember::runtime) runs it; the outputs must be the same bytes
#   STEP=pkg-config  builds run_saved with `c++ $(pkg-config --cflags --libs ember-runtime)`
#                    and save_model with ember.pc, and runs them the same way
#
# Variables: STEP, BUILD_DIR (ember's build), SOURCE_DIR, WORK (a scratch directory),
# GENERATOR, CXX, LAUNCHER (may be empty), NM.
cmake_minimum_required(VERSION 3.24)

set(prefix ${WORK}/prefix)
set(outside ${WORK}/examples)

function(run_checked)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(JOIN " " command ${ARGN})
    message(FATAL_ERROR "failed (${rc}): ${command}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# save_model then run_saved, in `dir`; the outputs must be the same bytes.
function(save_and_run save_model run_saved dir)
  file(REMOVE_RECURSE ${dir})
  run_checked(${save_model} ${dir} --batch 7)
  message(STATUS "${run_output}")
  run_checked(${run_saved} ${dir}/model.ember -i ${dir}/x.npy -o ${dir}/out --runs 3)
  message(STATUS "${run_output}")
  foreach(expected IN ITEMS "x: float32[n, 16]" "y: float32[n, 8]" "wrote    ${dir}/out/y.npy")
    string(FIND "${run_output}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "run_saved did not print '${expected}'")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${dir}/out/y.npy ${dir}/expected.npy
                  RESULT_VARIABLE differ)
  if(NOT differ EQUAL 0)
    message(FATAL_ERROR "run_saved's ${dir}/out/y.npy differs from ${dir}/expected.npy")
  endif()
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${WORK})
  # Installed elsewhere and moved: the CMake package and the .pc files find the prefix from
  # where they are.
  run_checked(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/staged)
  file(RENAME ${WORK}/staged ${prefix})
  foreach(f IN ITEMS lib/libember_runtime.a lib/libember.a lib/cmake/ember/emberConfig.cmake
                     lib/cmake/ember/emberConfigVersion.cmake lib/cmake/ember/emberTargets.cmake
                     lib/pkgconfig/ember-runtime.pc lib/pkgconfig/ember.pc
                     include/ember/runtime/artifact.h include/ember/runtime/npy.h
                     include/ember/ops/ops.h share/ember/runtime_include/ember_rt/kernel.h
                     lib/cmake/ember/runtime_include_default.cpp.in)
    if(NOT EXISTS ${prefix}/${f})
      message(FATAL_ERROR "the installation lacks ${f}")
    endif()
  endforeach()
  file(GLOB python_files ${prefix}/ember ${prefix}/lib/python*)
  if(python_files)
    message(FATAL_ERROR "the C++ installation holds Python files: ${python_files}")
  endif()

  set(configure ${CMAKE_COMMAND} -G ${GENERATOR} -S ${SOURCE_DIR}/examples/cpp -B ${outside}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX})
  if(LAUNCHER)
    list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
  endif()
  run_checked(${configure})
  run_checked(${CMAKE_COMMAND} --build ${outside} --target run_saved save_model)

  # run_saved links the runtime library only; save_model, the compiler (the nm check works).
  foreach(program IN ITEMS run_saved save_model)
    run_checked(${NM} -C ${outside}/${program})
    string(REGEX MATCHALL "ember::(build_graph|get_or_build|optimize)\\(" found "${run_output}")
    if(program STREQUAL "run_saved" AND found)
      message(FATAL_ERROR "run_saved links compiler code: ${found}")
    elseif(program STREQUAL "save_model" AND NOT found)
      message(FATAL_ERROR "nm finds no compiler code in save_model: the check above sees nothing")
    endif()
  endforeach()

elseif(STEP STREQUAL "run")
  # With EMBER_RUNTIME_INCLUDE unset, the outside save_model compiles its kernels with the
  # installed headers: the only place it can find them is the one the CMake package
  # registers (no library holds a path, and it runs from no installation's bin/).
  unset(ENV{EMBER_RUNTIME_INCLUDE})
  save_and_run(${outside}/save_model ${outside}/run_saved ${WORK}/model)

elseif(STEP STREQUAL "pkg-config")
  find_program(PKG_CONFIG pkg-config)
  if(NOT PKG_CONFIG)
    message("pkg-config is not installed: skipped")
    return()
  endif()
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  set(bin ${WORK}/pkg-config)
  file(MAKE_DIRECTORY ${bin})
  foreach(pc_program IN ITEMS "ember-runtime run_saved" "ember save_model")
    separate_arguments(pc_program)
    list(GET pc_program 0 pc)
    list(GET pc_program 1 program)
    run_checked(${PKG_CONFIG} --cflags --libs ${pc})
    separate_arguments(flags UNIX_COMMAND "${run_output}")
    run_checked(${CXX} -std=c++20 -O2 ${SOURCE_DIR}/examples/cpp/${program}.cpp ${flags}
                -o ${bin}/${program})
  endforeach()
  # ember.pc registers nothing: save_model finds the kernel headers through the variable.
  set(ENV{EMBER_RUNTIME_INCLUDE} ${prefix}/share/ember/runtime_include)
  save_and_run(${bin}/save_model ${bin}/run_saved ${WORK}/pkg-config-model)

else()
  message(FATAL_ERROR "STEP must be install, run or pkg-config, not '${STEP}'")
endif()

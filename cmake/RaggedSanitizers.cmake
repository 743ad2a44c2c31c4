# Instrumented builds, each in its own build folder:
#   -DRAGGED_SANITIZE=ON  ASan + UBSan over everything (make sanitize: build-sanitize)
#   -DRAGGED_FUZZ=ON      the same plus libFuzzer coverage, and the tests/fuzz executables
#                         (clang only: CC=clang-14 CXX=clang++-14; scripts/fuzz)
# Both stop at the first finding (-fno-sanitize-recover=all).
option(RAGGED_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(RAGGED_FUZZ "Build the libFuzzer targets (clang) with ASan and UBSan" OFF)

if(RAGGED_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "RAGGED_FUZZ=ON needs clang with libFuzzer: configure with CC=clang-14 CXX=clang++-14")
endif()
if(RAGGED_SANITIZE OR RAGGED_FUZZ)
  set(_ragged_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options(${_ragged_sanitizers} -g)
  add_link_options(-fsanitize=address,undefined)
  if(RAGGED_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()

# Every third-party dependency is found here, once. Debian packages provide
# them all (scripts/install-deps); optional ones are detected automatically.

find_package(Protobuf REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)

if(RAGGED_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(RAGGED_BENCH)
  find_package(benchmark REQUIRED)
endif()

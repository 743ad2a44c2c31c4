# Thin wrapper around CMake, like DuckDB's. The README's two commands:
#   make demo   install what is missing, build, run the main job on the default scenario
#   make test   install what is missing, build, run every test with ctest
#   make sanitize   the same in build-sanitize with ASan + UBSan (docs/results/fuzz.md)
#   make fuzz       every libFuzzer target for FUZZ_MINUTES (default 10) each, in build-fuzz (clang 14)
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
RAGGED := $(BUILD_DIR)/ragged

SANITIZE_DIR ?= build-sanitize
FUZZ_MINUTES ?= 10
# Leaks are reported everywhere but in the tests mpirun launches (tests/backend/CMakeLists.txt).
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all deps configure build demo test sanitize fuzz clean format

all: build

deps:
	@./scripts/install-deps

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS); \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo builds what it runs, the CLI alone without the executors (`ragged run`
# execs ragged-run, which `make` builds); `make test` builds the rest.
demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target ragged
	$(RAGGED) simulate

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# ASan + UBSan over the whole suite, in its own build folder (CUDA off:
# the CUDA runtime and ASan's shadow memory do not mix).
sanitize: deps
	@if [ ! -f $(SANITIZE_DIR)/build.ninja ]; then \
	  cmake -S . -B $(SANITIZE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DRAGGED_SANITIZE=ON -DRAGGED_CUDA=OFF -DRAGGED_BENCH=OFF \
	    $(CMAKE_FLAGS); \
	fi
	cmake --build $(SANITIZE_DIR) -j $(JOBS)
	$(SANITIZE_ENV) ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j $(JOBS)

fuzz: deps
	./scripts/fuzz $(FUZZ_MINUTES)

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)

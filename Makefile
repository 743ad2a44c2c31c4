# Thin wrapper around CMake, like DuckDB's. The README's two commands:
#   make demo   install what is missing, build, run the main job on the default scenario
#   make test   install what is missing, build, run every test with ctest
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
RAGGED := $(BUILD_DIR)/ragged

.PHONY: all deps configure build demo test clean format

all: build

deps:
	@./scripts/install-deps

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS); \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(RAGGED) simulate

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)

# Tern: the commands the README shows. The work is done by scripts in tools/.
#   make test                 install what is missing, build, run C unit tests and pytest
#   make test TERN_SANITIZE='address;undefined'   the same under ASan+UBSan
#   make bench [B=<name>]     run benchmarks (bench/<name>), JSON + PNG in bench/results/
#   make demo                 the main job on a built-in example network
#   make fuzz [FUZZ_TIME=60]  run every libFuzzer target (needs clang)
#   make build | deps | format | clean

BUILD_DIR ?= build
TERN_SANITIZE ?=
FUZZ_TIME ?= 60
export BUILD_DIR TERN_SANITIZE FUZZ_TIME

.PHONY: all build test deps bench demo fuzz format clean

all: build

deps:
	@tools/deps.sh

build: deps
	@tools/build.sh

test: deps
	@tools/test.sh

bench: deps
	@tools/bench.sh $(B)

demo: build
	@/usr/bin/python3 tools/demo.py

fuzz: deps
	@tools/fuzz.sh $(FUZZ_TIME)

format:
	@git ls-files '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf build build-* bench/results

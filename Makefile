# Thin front door over CMake. `make help` lists the targets.
#
#   make lesson-1 && ./run        build lesson 1, point ./run at it, run it
#   make test                     build everything, run every test (GPU suites skip without a GPU)
#
# ARCH=86 (or "80;90") overrides the CUDA architectures of every lesson but 05;
# ARCH_HOPPER=90a those of lesson 05 and lesson 09's versions 6-7 (ARCH_HOPPER=none leaves them
# out). BUILD=Debug adds -G to device code.

BUILD_DIR ?= build
BUILD     ?= Release
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE     ?= cmake
CTEST     ?= ctest

CONFIG_ARGS := -DCMAKE_BUILD_TYPE=$(BUILD)
ifdef ARCH
CONFIG_ARGS += "-DATTN_ARCHS=$(ARCH)" "-DCMAKE_CUDA_ARCHITECTURES=$(ARCH)"
endif
ifdef ARCH_HOPPER
CONFIG_ARGS += "-DATTN_ARCHS_HOPPER=$(ARCH_HOPPER)"
endif

# The course's lessons are numbered 1..LAST_LESSON; LESSONS are the ones present in this checkout.
# Lesson N lives in lessons/NN_name/, NN its number in two digits (01..09, 10).
LAST_LESSON := 10
LESSONS := $(sort $(patsubst lessons/%/CMakeLists.txt,%,$(wildcard lessons/*/CMakeLists.txt)))

# Shell, for the recipes of lesson-N, diff-N and drill-N: $$n must be a lesson number,
# 1..LAST_LESSON, written without a leading zero (else one line on stderr, exit 2); nn is then its
# two digits, as the folders lessons/NN_name/ and drills/NN_*.c spell it. $(1): the target's name.
LESSON_NUMBER = case "$$n" in [1-9]|[1-9][0-9]) [ "$$n" -le $(LAST_LESSON) ];; *) false;; esac || \
	{ echo "make $(1)-N: N is a lesson number, 1..$(LAST_LESSON); got '$$n'" >&2; exit 2; }; \
	nn=$$(printf '%02d' "$$n")

.PHONY: help configure all test docs plots clean bench drill-check format format-check FORCE

help:
	@echo "Targets:"
	@echo "  make lesson-N        build lesson N (1..$(LAST_LESSON)) and point ./run at it; then ./run --help"
	@echo "  make diff-N A=2 B=3  show what lesson N's version B changes from version A (the lesson);"
	@echo "                       whitespace ignored, the files' header comments left out (HEADER=1 keeps them)"
	@echo "  make test           build everything and run every test with ctest"
	@echo "  make drill-N        build lesson N's checklist against your drills/NN_*.c file and run it"
	@echo "  make drill-check    require every untouched drill stub to FAIL its checklist (CI)"
	@echo "  make docs           Doxygen HTML into $(BUILD_DIR)/docs/html (warnings are errors)"
	@echo "  make plots          draw docs/figures/*.png from docs/results/ with gnuplot (CI: must match)"
	@echo "  make bench          the PyTorch peer comparison (GPU machine with PyTorch)"
	@echo "  make format         clang-format every C and CUDA source in place"
	@echo "  make format-check   list the sources clang-format would change (CI)"
	@echo "  make all            build everything"
	@echo "  make clean          remove $(BUILD_DIR)/ and ./run"
	@echo "Variables: ARCH=\"80;90\"  ARCH_HOPPER=90a|none  BUILD=Debug|Release  BUILD_DIR=build  JOBS=N"
	@echo "Lessons present: $(LESSONS)"

# Configure when the build directory is new, or when ARCH/BUILD are given (cheap when unchanged).
configure:
	@if [ ! -f $(BUILD_DIR)/CMakeCache.txt ] || [ -n "$(ARCH)$(ARCH_HOPPER)" ] || [ "$(BUILD)" != "Release" ]; then \
	  $(CMAKE) -S . -B $(BUILD_DIR) $(CONFIG_ARGS); \
	fi

all: configure
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

# The number is checked before anything is configured, so a lesson that is not there costs nothing.
lesson-%: FORCE
	@n=$*; $(call LESSON_NUMBER,lesson); \
	dir=$$(ls -d lessons/$${nn}_*/ 2>/dev/null | head -n 1); \
	if [ -z "$$dir" ] || [ ! -f "$${dir}CMakeLists.txt" ]; then \
	  echo "lesson $$n is not written yet; present: $(or $(LESSONS),none)" >&2; exit 2; fi; \
	$(MAKE) --no-print-directory configure || exit $$?; \
	why=$$(awk -F'\t' -v n=$$n '$$1 == n { print $$2 }' $(BUILD_DIR)/lessons-left-out.txt 2>/dev/null); \
	if [ -n "$$why" ]; then echo "lesson $$n is not in this build: $$why" >&2; exit 2; fi; \
	$(CMAKE) --build $(BUILD_DIR) --target lesson-$$n -j $(JOBS) && \
	ln -sfn $(BUILD_DIR)/bin/lesson-$$n run && echo "./run -> $(BUILD_DIR)/bin/lesson-$$n"

# diff-N A=2 B=3: the version files vA_*.cu and vB_*.cu of lesson N, unified diff. B alone means
# A=B-1. Whitespace is ignored, and each file's header comment (what changed, why, prediction,
# measured, run) is blanked out, so the diff shows the code's one idea with its true line numbers;
# HEADER=1 keeps the headers.
diff-%: FORCE
	@n=$*; $(call LESSON_NUMBER,diff); \
	dir=$$(ls -d lessons/$${nn}_*/ 2>/dev/null | head -n 1); \
	if [ -z "$$dir" ]; then echo "lesson $$n is not written yet; present: $(or $(LESSONS),none)" >&2; exit 2; fi; \
	b="$(B)"; a="$(A)"; \
	case "$$b" in [1-9]|[1-9][0-9]) ;; *) echo "make diff-$$n: give the versions as numbers, e.g. make diff-$$n A=1 B=2" >&2; exit 2;; esac; \
	[ -n "$$a" ] || a=$$((b - 1)); \
	case "$$a" in [1-9]|[1-9][0-9]) ;; *) echo "make diff-$$n: A must be a version number, got '$$a'" >&2; exit 2;; esac; \
	pick() { ls "$$dir"v$$1_*.cu 2>/dev/null | head -n 1; }; \
	fa=$$(pick $$a); fb=$$(pick $$b); \
	for pair in "$$a:$$fa" "$$b:$$fb"; do \
	  if [ -z "$${pair#*:}" ]; then \
	    echo "lesson $$n has no version file v$${pair%%:*}_*; its version files: $$(cd $$dir && ls v[0-9]*_*.cu 2>/dev/null | tr '\n' ' ' | grep . || echo none yet)" >&2; exit 2; fi; \
	done; \
	if [ -n "$(HEADER)" ]; then \
	  echo "diff -u -w $$fa $$fb"; diff -u -w "$$fa" "$$fb"; rc=$$?; \
	else \
	  tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  for f in "$$fa" "$$fb"; do \
	    awk 'NR == 1 && /^\/\/ clang-format off/ { skip = "on" } NR == 1 && /^\/\*/ { skip = "end" } \
	         skip == "on" { print ""; if (/^\/\/ clang-format on/) skip = ""; next } \
	         skip == "end" { print ""; if (/\*\//) skip = ""; next } { print }' "$$f" \
	      >"$$tmp/$$(basename $$f)"; \
	  done; \
	  echo "diff -u -w -B $$fa $$fb   (header comments left out: HEADER=1 shows them)"; \
	  diff -u -w -B --label "$$fa" --label "$$fb" "$$tmp/$$(basename $$fa)" "$$tmp/$$(basename $$fb)"; rc=$$?; \
	fi; [ $$rc -le 1 ]

test: configure
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure

# drill-N: as for lesson-N, the number (and that lesson N has a drill, drills/NN_*.c) is checked
# before anything is configured. A drill is plain C: it builds even where its lesson is left out.
drill-%: FORCE
	@n=$*; $(call LESSON_NUMBER,drill); \
	if ! ls drills/$${nn}_*.c >/dev/null 2>&1; then \
	  echo "lesson $$n has no drill yet; drills present: $$(cd drills 2>/dev/null && ls [0-9][0-9]_*.c 2>/dev/null | tr '\n' ' ')" >&2; exit 2; fi; \
	$(MAKE) --no-print-directory configure || exit $$?; \
	$(CMAKE) --build $(BUILD_DIR) --target drill-$$n -j $(JOBS) || exit $$?; \
	"$(abspath $(BUILD_DIR))/bin/drill-$$n"

drill-check: configure
	@bash scripts/drill-check.sh $(BUILD_DIR) $(JOBS)

docs: configure
	$(CMAKE) --build $(BUILD_DIR) --target docs

# The README figures, from the archived runs (no build needed; gnuplot and python3).
plots:
	@bash scripts/plots.sh

bench:
	@bash bench/run.sh

format:
	@bash scripts/check-format.sh --fix

format-check:
	@bash scripts/check-format.sh

clean:
	rm -rf $(BUILD_DIR) run

FORCE:

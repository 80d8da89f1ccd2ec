# adaptkv — one Makefile for the library, tools, tests, demo and benchmarks.
#
#   make            library (static + shared) and tools into build/
#   make test       install missing packages, build, run every test
#   make demo       install missing packages, build, run the main demo
#   make bench      the full benchmark matrix (slow; writes docs/benchmarks.md)
#   make asan|tsan  the tests under AddressSanitizer+UBSan / ThreadSanitizer
#   make crashtest  ITER=1000: the kill-and-recover loop alone
#   make DEBUG=1 test-run  the tests with the lock order checked (as asan/tsan do)
#   make install    PREFIX=/usr/local: library, headers, tools, adaptkv.pc
#   make format | format-check | lint | clean

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= $(if $(filter 1,$(DEBUG)),build/debug,build)
SAN     ?=
OPT     ?= -O2
# The release number is written once, in the public header (AKV_VERSION_STRING).
VERSION := $(shell sed -n 's/^\#define AKV_VERSION_STRING "\(.*\)"/\1/p' include/adaptkv/adaptkv.h)
# The shared library's ABI version: its SONAME is libadaptkv.so.$(SOMAJOR).
# Bump it on any incompatible change of the public API (include/adaptkv).
SOMAJOR := 0
SONAME  := libadaptkv.so.$(SOMAJOR)

# -fvisibility=hidden: the shared library exports only the functions the
# public headers mark AKV_API (include/adaptkv/api.h).
CFLAGS_BASE := -std=c17 $(OPT) -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden -D_GNU_SOURCE -pthread -I. -Iinclude -MMD -MP
# The C++ files (engine/sstwriter.cc, engine/sstreader.cc) reach RocksDB's
# SstFileWriter option and SstFileReader, which its C API does not; same
# warnings, nothing exported.
CXXFLAGS_BASE := -std=c++17 $(OPT) -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden -fvisibility-inlines-hidden \
                 -D_GNU_SOURCE -pthread -I. -Iinclude -MMD -MP
ifneq ($(SAN),)
# -fno-sanitize-recover: a UBSan finding ends the test (it would only print).
CFLAGS_BASE += -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
CXXFLAGS_BASE += -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDSAN := -fsanitize=$(SAN)
endif
# Debug builds check the engine's lock order on every lock
# (engine/lockorder.h): the sanitizer builds, and DEBUG=1.
ifneq ($(SAN)$(filter 1,$(DEBUG)),)
CFLAGS_BASE += -DAKVI_LOCK_ORDER
endif
CFLAGS  += $(CFLAGS_BASE)
CXXFLAGS += $(CXXFLAGS_BASE)
LIBS    := -lrocksdb -lxxhash -lzstd -lm -pthread -lstdc++
TESTLIBS := -lcriterion
TEST_INC :=
# Criterion cannot run under ThreadSanitizer; TSan builds of the same test
# sources use the small compatible runner in test/shim instead.
ifneq ($(findstring thread,$(SAN)),)
TESTLIBS := $(BUILD)/obj/test/shim/runner.o
TEST_INC := -Itest/shim
endif

LIB_SRC   := $(wildcard util/*.c filters/*.c revmap/*.c engine/*.c) $(wildcard engine/*.cc)
LIB_OBJ   := $(patsubst %.cc,$(BUILD)/obj/%.o,$(LIB_SRC:%.c=$(BUILD)/obj/%.o))
TOOLS     := $(basename $(notdir $(wildcard tools/*.c)))
TOOL_BINS := $(TOOLS:%=$(BUILD)/%)
TEST_SRC  := $(wildcard test/test_*.c)
TEST_BINS := $(TEST_SRC:test/%.c=$(BUILD)/test/%)
TEST_SUPPORT := $(wildcard test/support/*.c)

.PHONY: all lib tools tests test check-deps demo bench asan tsan install uninstall clean format format-check lint crashtest

all: lib tools

lib: $(BUILD)/libadaptkv.a $(BUILD)/libadaptkv.so $(BUILD)/$(SONAME)

tools: $(TOOL_BINS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/libadaptkv.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The real file is libadaptkv.so.$(VERSION) with SONAME libadaptkv.so.$(SOMAJOR);
# libadaptkv.so.$(SOMAJOR) (what programs load) and libadaptkv.so (what -ladaptkv
# finds) are symlinks to it, here and where `make install` puts them.
$(BUILD)/libadaptkv.so.$(VERSION): $(LIB_OBJ) adaptkv.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=adaptkv.map $(LDSAN) -o $@ $(filter %.o,$^) $(LIBS)

$(BUILD)/$(SONAME) $(BUILD)/libadaptkv.so: $(BUILD)/libadaptkv.so.$(VERSION)
	ln -sf libadaptkv.so.$(VERSION) $@

# A tool is tools/NAME.c plus tools/NAME/*.c.
.SECONDEXPANSION:
$(BUILD)/%: tools/%.c $$(wildcard tools/%/*.c) $(BUILD)/libadaptkv.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$^) $(BUILD)/libadaptkv.a $(LIBS) $(if $(filter kvshell,$*),-ledit) $(LDSAN)

# costbench draws its keys with filterbench's dataset generators.
$(BUILD)/costbench: tools/filterbench/datasets.c

$(BUILD)/obj/test/shim/runner.o: test/shim/runner.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itest/shim -c $< -o $@

# The fault-injection shim, preloaded into test_faults' and test_repair's
# children. Built without sanitizers: it only counts and forwards calls.
FAULTFS := $(BUILD)/test/faultfs.so
$(FAULTFS): test/shim/faultfs.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -O2 -g -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE -shared -o $@ $< -ldl

$(BUILD)/test/test_faults $(BUILD)/test/test_repair: $(FAULTFS)

$(BUILD)/test/%: test/%.c $(TEST_SUPPORT) $(BUILD)/libadaptkv.a $(filter %.o,$(TESTLIBS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_INC) -o $@ $(filter %.c,$^) $(BUILD)/libadaptkv.a $(LIBS) $(TESTLIBS) $(LDSAN)

tests: $(TEST_BINS) tools

check-deps:
	@tools/install-deps.sh

# Test binaries are run one after another; each prints Criterion's synthesis,
# and the runner prints the total "N passed, N failed" line at the end.
test: check-deps
	@$(MAKE) --no-print-directory tests
	@tools/run-tests.sh $(BUILD) $(TEST_BINS)

# make test-install: only test/test_install.c (make install into a temporary
# prefix, then a C++ program built there with pkg-config).
.PHONY: test-install
test-install: check-deps
	@$(MAKE) --no-print-directory all $(BUILD)/test/test_install
	@tools/run-tests.sh $(BUILD) $(BUILD)/test/test_install

# Under AddressSanitizer the fault sweep tries every 6th of its faults (all
# of them would take ~4x its time); FAULT_STRIDE=1 for all.
asan: check-deps
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=address,undefined OPT=-O1 FAULT_STRIDE=$(or $(FAULT_STRIDE),6) test-run

tsan: check-deps
	@$(MAKE) --no-print-directory BUILD=build/tsan SAN=thread OPT=-O1 test-run

.PHONY: test-run
test-run: tests
	@AKV_SANITIZER=$(SAN) AKV_BUILD=$(BUILD) AKV_FAULT_STRIDE=$(or $(FAULT_STRIDE),1) \
	  TSAN_OPTIONS="suppressions=$(CURDIR)/test/tsan.supp die_after_fork=0 $(TSAN_OPTIONS)" \
	  tools/run-tests.sh $(BUILD) $(TEST_BINS)

# The kill-and-recover loop alone, ITER iterations split between the two
# layouts (make test runs 20); prints what the kills hit.
crashtest: check-deps
	@$(MAKE) --no-print-directory tests
	@AKV_CRASH_ITER=$(or $(ITER),200) $(BUILD)/test/test_crash --verbose --jobs 2

# make fixture FIXTURE=test/fixtures/NAME: a migration fixture written by
# this commit's format, one database per layout in NAME/hash and
# NAME/ordered (test/fixtures/README.md). The writer refuses a NAME that
# exists: a fixture is written once and kept, never regenerated.
.PHONY: fixture
$(BUILD)/test/fixture-writer: test/fixtures/writer.c test/support/fixture.c $(BUILD)/libadaptkv.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$^) $(BUILD)/libadaptkv.a $(LIBS) $(LDSAN)

fixture: $(BUILD)/test/fixture-writer
	@test -n "$(FIXTURE)" || { echo "make fixture FIXTURE=test/fixtures/NAME"; exit 2; }
	@test ! -e "$(FIXTURE)" || { echo "$(FIXTURE) exists: a fixture is never written again"; exit 1; }
	mkdir -p $(FIXTURE)
	$(BUILD)/test/fixture-writer $(FIXTURE)/hash hash
	$(BUILD)/test/fixture-writer $(FIXTURE)/ordered ordered

demo: check-deps
	@$(MAKE) --no-print-directory all
	@tools/demo.sh $(BUILD)

bench: check-deps
	@$(MAKE) --no-print-directory all
	@tools/bench.sh $(BUILD)

# adaptkv.pc's Libs carry -Wl,-rpath,${libdir} for every prefix but /usr, so
# that a program built with `pkg-config --libs adaptkv` finds libadaptkv.so.0
# without LD_LIBRARY_PATH or ldconfig; PC_RPATH= (empty) leaves it out.
PC_RPATH ?= $(if $(filter /usr /usr/,$(PREFIX)),,-Wl$(,)-rpath$(,)$${libdir})
, := ,

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -d $(DESTDIR)$(PREFIX)/include/adaptkv
	install -m 644 $(BUILD)/libadaptkv.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libadaptkv.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libadaptkv.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libadaptkv.so
	install -m 644 include/adaptkv/api.h include/adaptkv/adaptkv.h include/adaptkv/filter.h \
	  include/adaptkv/hash.h $(DESTDIR)$(PREFIX)/include/adaptkv/
	install -m 755 $(TOOL_BINS) $(DESTDIR)$(PREFIX)/bin/
	sed -e 's#@PREFIX@#$(PREFIX)#' -e 's#@VERSION@#$(VERSION)#' -e 's#@RPATH@#$(PC_RPATH)#' \
	  adaptkv.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/adaptkv.pc

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/adaptkv $(DESTDIR)$(PREFIX)/lib/libadaptkv.* \
	       $(DESTDIR)$(PREFIX)/lib/pkgconfig/adaptkv.pc $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(TOOLS))

# The format check covers the C and C++ lines changed since the commit in
# .ci/format-baseline (tools/format-check.sh says why); `make format`
# formats exactly those lines.
format:
	@tools/format-check.sh --fix

format-check:
	@tools/format-check.sh

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --inline-suppr --suppress=missingIncludeSystem -I. -Iinclude -D__GNUC__ \
	  $(shell git ls-files '*.c' '*.cc' '*.h')

clean:
	rm -rf build

# make fuzz [SECONDS=N]: the libFuzzer targets of test/fuzz, built with clang
# and sanitizers into build/fuzz/ (apart from the normal build), each run N
# seconds with its seed corpus, one at a time (docs/reliability.md, "Fuzzing").
SECONDS ?= 60
.PHONY: fuzz
fuzz:
	@MAKE="$(MAKE)" test/fuzz/run.sh run $(SECONDS)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

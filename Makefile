# samplefs build.  `make` builds the daemon and tools, `make test` runs every
# test (unit + integration, plain and ASan/UBSan, and each fuzz target briefly),
# `make fuzz` runs the libFuzzer targets for FUZZ_SECONDS each, `make demo`
# mounts a small generated dataset, `make bench` runs the benchmark (tables
# and charts).  When run as root, missing Debian packages are installed first
# (tools/deps.sh).

PREFIX   ?= /usr/local
CC       ?= cc
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
PKGS     := fuse3 zlib libarchive libcurl expat libcrypto
# compressed sources besides gzip (core/io/codecs/zxz.c, zzstd.c, zbz2.c); Debian's
# libbz2-dev has no .pc file, hence -lbz2 below
PKGS     += liblzma libzstd
# ISA-L's igzip inflates gzip spans 2-3x faster than zlib (core/io/codecs/zgzip.c);
# without it zlib does (the same bytes)
ifeq ($(shell pkg-config --exists libisal 2>/dev/null && echo y),y)
PKGS     += libisal
CPPFLAGS += -DHAVE_ISAL
endif
DEPCFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEPLIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lbz2 -lpthread
CPPFLAGS += -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Icore

JOBS     ?= $(shell nproc 2>/dev/null || echo 2)	# parallel compiles in `make test`

# BUILD=build (plain), BUILD=build-asan (SAN=1) or BUILD=build-tsan (SAN=thread)
SAN      ?= 0
ifeq ($(SAN),1)
BUILD    ?= build-asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(SAN),thread)
BUILD    ?= build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
BUILD    ?= build
SANFLAGS :=
endif
ALLCFLAGS = $(CFLAGS) $(SANFLAGS) $(WARN) $(CPPFLAGS) $(DEPCFLAGS) -MMD -MP

CORE_SRC  := $(wildcard core/*.c core/*/*.c core/*/*/*.c)
FS_SRC    := $(wildcard fs/*.c)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
CORE_OBJ  := $(CORE_SRC:%.c=$(BUILD)/%.o)
FS_OBJ    := $(FS_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# linked into every unit test: a default timeout per test (a hang fails it)
UNIT_TIMEOUT = $(BUILD)/tests/unit/timeout.o
TOOL_BIN  := $(BUILD)/samplefs-inspect $(BUILD)/samplefs-floorfs $(BUILD)/samplefs-download \
	     $(BUILD)/samplefs-stat $(BUILD)/samplefs-zblocks

.PHONY: all deps test test-build unit integration demo bench install uninstall clean asan tsan fuzz fuzz-build
all: $(BUILD)/samplefs $(TOOL_BIN)

deps:
	@bash tools/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -c $< -o $@

$(BUILD)/libsamplefs.a: $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/samplefs: $(FS_OBJ) $(BUILD)/libsamplefs.a
	$(CC) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $(FS_OBJ) $(BUILD)/libsamplefs.a $(DEPLIBS)

$(BUILD)/samplefs-inspect: $(BUILD)/tools/inspect/samplefs-inspect.o $(BUILD)/libsamplefs.a
	$(CC) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(DEPLIBS)

DL_OBJ    := $(BUILD)/tools/download/samplefs-download.o $(BUILD)/tools/download/select.o
$(BUILD)/samplefs-download: $(DL_OBJ) $(BUILD)/libsamplefs.a
	$(CC) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(DEPLIBS)

# the downloader's selection, unit-tested apart from its command line
$(BUILD)/tests/test_download: tests/unit/test_download.c $(BUILD)/tools/download/select.o $(BUILD)/libsamplefs.a $(UNIT_TIMEOUT)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itools/download -o $@ $^ $(DEPLIBS) -lcriterion

$(BUILD)/samplefs-stat: $(BUILD)/tools/stat/samplefs-stat.o $(BUILD)/tools/stat/statdoc.o
	$(CC) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $^

$(BUILD)/samplefs-floorfs: $(BUILD)/tools/bench/floorfs.o $(BUILD)/fs/devpoll.o $(BUILD)/fs/readahead.o
	$(CC) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(DEPLIBS)

# zbench.sh's floor: the decompressors alone, a block per read (not installed)
$(BUILD)/samplefs-zblocks: $(BUILD)/tools/bench/zblocks.o
	$(CC) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(DEPLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libsamplefs.a $(UNIT_TIMEOUT)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -o $@ $< $(UNIT_TIMEOUT) $(BUILD)/libsamplefs.a $(DEPLIBS) -lcriterion

# the one unit test of the daemon's own code: its listings' guess
$(BUILD)/tests/test_rdplus: tests/unit/test_rdplus.c $(BUILD)/fs/rdplus.o $(UNIT_TIMEOUT)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Ifs -o $@ $^ -lpthread -lcriterion

unit: $(UNIT_BIN)
	@bash tests/run_unit.sh $(BUILD) $(UNIT_BIN)

asan:
	$(MAKE) SAN=1 all $(UNIT_SRC:tests/unit/%.c=build-asan/tests/%)

# The daemon under ThreadSanitizer, for tests/integration/test_soak.sh.
tsan:
	$(MAKE) SAN=thread build-tsan/samplefs

# libFuzzer targets (tests/fuzz/README.md): Debian's clang, core/ compiled
# with coverage for the fuzzer, ASan and UBSan, into build-fuzz/.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SECONDS_CI ?= 5
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer
FUZZ_CFLAGS   = -O1 -g $(FUZZ_SAN) $(WARN) $(CPPFLAGS) $(DEPCFLAGS) -MMD -MP
FUZZ_TARGETS := npy pickle zip zipdir kaggle tar tarindex mat5 devkit strokes index autoindex bucketlist awscred classes download httphdr checkpoint zindex zfind statdoc archive
FUZZ_BIN     := $(FUZZ_TARGETS:%=build-fuzz/fuzz_%)

build-fuzz/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build-fuzz/libsamplefs.a: $(CORE_SRC:%.c=build-fuzz/%.o)
	$(AR) rcs $@ $^

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) build-fuzz/libsamplefs.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< build-fuzz/libsamplefs.a $(DEPLIBS)

fuzz-build: $(FUZZ_BIN)

fuzz: deps
	$(MAKE) fuzz-build
	bash tests/fuzz/run.sh fuzz $(FUZZ_SECONDS)

# The whole suite: deps, plain and sanitizer builds, unit and integration
# tests, fuzz regressions and a short run of each fuzz target.  The builds
# most checks need (plain and ASan, with their unit tests) come first, one
# make's prerequisites sharing the JOBS slots (asan is a sub-make on the
# same jobserver); tests/run_all.sh then runs the checks side by side
# (TEST_JOBS at a time, see there) and meanwhile makes SFS_LATE_BUILD, the
# ThreadSanitizer daemon and the fuzz targets, which only two checks need
# (they wait for it): the first checks spend much of their time waiting
# on mounts and servers, time the late build's compiles use.
# `make test-build` builds all four at once.
test: deps
	$(MAKE) -j$(JOBS) all $(UNIT_BIN) asan
	FUZZ_SECONDS_CI=$(FUZZ_SECONDS_CI) SFS_LATE_BUILD="tsan fuzz-build" SFS_LATE_JOBS=$(strip $(JOBS)) \
		bash tests/run_all.sh

test-build: all $(UNIT_BIN) asan tsan fuzz-build

demo: deps all
	bash tools/demo.sh

bench: deps all
	bash tools/bench/bench.sh

# `make install PREFIX=/usr DESTDIR=/tmp/pkg`: the commands, their man
# pages, and the bash completion under each command's name (one file:
# bash-completion loads a command's completion by its name).  samplefs-stat
# goes in when it was built; samplefs-floorfs and samplefs-zblocks are bench
# tools, not installed.
# `make uninstall` (same PREFIX and DESTDIR) removes these files, no directory.
INSTALL_CMDS := samplefs samplefs-inspect samplefs-download
OPT_CMDS     := samplefs-stat
BINDIR        = $(DESTDIR)$(PREFIX)/bin
MAN1DIR       = $(DESTDIR)$(PREFIX)/share/man/man1
COMPDIR       = $(DESTDIR)$(PREFIX)/share/bash-completion/completions

install: all
	install -d $(BINDIR) $(MAN1DIR) $(COMPDIR)
	for c in $(INSTALL_CMDS) $(OPT_CMDS); do \
		case " $(OPT_CMDS) " in *" $$c "*) [ -e $(BUILD)/$$c ] || continue ;; esac; \
		install -m 0755 $(BUILD)/$$c $(BINDIR)/$$c && \
		install -m 0644 docs/man/$$c.1 $(MAN1DIR)/$$c.1 && \
		install -m 0644 completions/samplefs $(COMPDIR)/$$c || exit 1; \
	done

uninstall:
	for c in $(INSTALL_CMDS) $(OPT_CMDS); do \
		rm -f $(BINDIR)/$$c $(MAN1DIR)/$$c.1 $(COMPDIR)/$$c; \
	done

clean:
	rm -rf build build-asan build-tsan build-fuzz

-include $(shell find $(BUILD) build-fuzz -name '*.d' 2>/dev/null)

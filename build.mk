# Invoked by make.sh: make -f build.mk O=<out dir> SAN=<''|asan|tsan> CUDA_HOME=<dir or ''>.
# Each component adds its targets to ALL from its own <dir>/build.mk.
O ?= build
SAN ?=
CUDA_HOME ?=
CC := gcc
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -O2 -g -fPIC -pthread
ifeq ($(SAN),asan)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(SAN),tsan)
SAN_FLAGS := -fsanitize=thread
else
SAN_FLAGS :=
endif
CFLAGS := $(BASE_CFLAGS) $(SAN_FLAGS) -Icontroller
LDFLAGS := $(SAN_FLAGS) -pthread
ALL :=
CONTROLLER_LIB := $(O)/lib/libgycontrol.a
SERVICE_LIB := $(O)/lib/libgyservice.a
# The one place the version lives; controller/version.c turns it into gy_version().
GY_VERSION := $(shell cat VERSION)
ifeq ($(shell grep -Ex '[0-9]+\.[0-9]+\.[0-9]+' VERSION),)
$(error VERSION must hold one line MAJOR.MINOR.PATCH, not '$(GY_VERSION)')
endif

# make.sh passes CUDA_HOME only for a toolkit that has cuda.h; say so if a direct call does not.
ifneq ($(CUDA_HOME),)
ifeq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
$(error CUDA_HOME=$(CUDA_HOME) has no include/cuda.h: pass the toolkit root (e.g. /usr/local/cuda) or CUDA_HOME= to build without CUDA)
endif
endif

# What every object was compiled under, kept in the build folder: when a folder is reused with
# another CUDA_HOME or SAN, every object is made again. Without it objects made without CUDA (no
# NVTX ranges in the hook) stayed beside ones made with it, and the NVTX test failed on the mix.
BUILD_FLAGS := $(CC) $(CFLAGS) $(LDFLAGS) CUDA_HOME=$(CUDA_HOME)
FLAGS_STAMP := $(O)/obj/.build-flags
ifneq ($(file <$(FLAGS_STAMP)),$(BUILD_FLAGS))
$(shell mkdir -p $(O)/obj)
$(file >$(FLAGS_STAMP),$(BUILD_FLAGS))
endif

.PHONY: all
all: all_targets

$(O)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

include $(sort $(wildcard */build.mk))

all_targets: $(ALL)

# What an installation carries: the tools, the hook and compat libraries, the controller library
# and the fake driver of `run_exp --simulate`. `./make.sh package DIR` (setup.py, for pip) builds
# these alone; the Makefile's install copies the same files out of a whole build.
INSTALLED := $(O)/bin/expcontroller $(O)/bin/run_exp $(O)/bin/nsight-parser $(O)/bin/gpuyield-standin \
	$(HOOKS_LIB) $(GEEK_LIB) $(CUINTERPOSE_LIBS) $(CONTROLLER_LIB) $(FAKECUDA_LIB)
.PHONY: installed
installed: $(INSTALLED)

-include $(shell find $(O)/obj $(O)/obj-old -name '*.d' 2>/dev/null)

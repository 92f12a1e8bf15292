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

.PHONY: all
all: all_targets

$(O)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

include $(sort $(wildcard */build.mk))

all_targets: $(ALL)

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)

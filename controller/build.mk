# The controller library: the shared-memory protocol alone (static, linked by everything).
CONTROLLER_SRC := $(wildcard controller/*.c)
# CONTROLLER_LIB is defined in build.mk (other fragments may be read first)
$(O)/obj/controller/version.o: CFLAGS += -DGY_VERSION='"$(GY_VERSION)"'
$(O)/obj/controller/version.o: VERSION

$(CONTROLLER_LIB): $(CONTROLLER_SRC:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

ALL += $(CONTROLLER_LIB)

# The controller's test program (also built in the asan and tsan variants); it also tests the
# service room's metrics textfile writer, hence -Iservice and SERVICE_LIB.
$(O)/obj/tests/controller/%.o: CFLAGS += -Iservice
$(O)/tests/test_controller: $(O)/obj/tests/controller/test_controller.o $(SERVICE_LIB) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@


ALL += $(O)/tests/test_controller

# Preloaded by 10-controller.sh: SIGTERM right after the segment is created (serve's early stop).
$(O)/tests/libgy_term_after_create.so: $(O)/obj/tests/controller/term_after_create.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) $^ -ldl -o $@

ALL += $(O)/tests/libgy_term_after_create.so

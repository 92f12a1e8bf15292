# The controller library (static, linked by everything) and expcontroller.
CONTROLLER_SRC := $(filter-out controller/expcontroller.c,$(wildcard controller/*.c))
# CONTROLLER_LIB is defined in build.mk (other fragments may be read first)
$(O)/obj/controller/version.o: CFLAGS += -DGY_VERSION='"$(GY_VERSION)"'
$(O)/obj/controller/version.o: VERSION

$(CONTROLLER_LIB): $(CONTROLLER_SRC:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(O)/bin/expcontroller: $(O)/obj/controller/expcontroller.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(CONTROLLER_LIB) $(O)/bin/expcontroller

# The controller's test program (also built in the asan and tsan variants).
$(O)/tests/test_controller: $(O)/obj/tests/controller/test_controller.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@


ALL += $(O)/tests/test_controller

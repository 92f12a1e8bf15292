# The services around the protocol: expcontroller, the metrics (HTTP and textfile), the MPS
# daemon manager and private directories. SERVICE_LIB is defined in build.mk.
SERVICE_SRC := $(filter-out service/expcontroller.c,$(wildcard service/*.c))
# Its headers are seen by the rooms above it (run_exp, the tests), never by controller/.
SERVICE_CFLAGS := -Iservice
$(O)/obj/service/%.o: CFLAGS += $(SERVICE_CFLAGS)

$(SERVICE_LIB): $(SERVICE_SRC:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(O)/bin/expcontroller: $(O)/obj/service/expcontroller.o $(SERVICE_LIB) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(SERVICE_LIB) $(O)/bin/expcontroller

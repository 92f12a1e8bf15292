# Test programs that belong to no single component: tests/reliability/ (suite 80-reliability),
# built in every variant (plain, asan, tsan) like the other test programs.
$(O)/obj/tests/reliability/%.o: CFLAGS += -Itests/lib

$(O)/tests/reliability/load_test: $(O)/obj/tests/reliability/load_test.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(O)/tests/reliability/load_test

$(O)/tests/reliability/corrupt_test: $(O)/obj/tests/reliability/corrupt_test.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(O)/tests/reliability/corrupt_test

$(O)/tests/reliability/isolation_test: $(O)/obj/tests/reliability/isolation_test.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(O)/tests/reliability/isolation_test

# The guarded policy's rule on synthetic durations, and inside the protocol (suite 10-controller).
# It reads /metrics' text too, which the service room writes.
$(O)/obj/tests/controller/test_guarded.o: CFLAGS += -Itests/lib -Iservice

$(O)/tests/test_guarded: $(O)/obj/tests/controller/test_guarded.o $(SERVICE_LIB) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -lm -o $@

ALL += $(O)/tests/test_guarded

# The service's status view: UTF-8 cleaning and one row per process (suite 15-metrics).
$(O)/obj/tests/metrics/%.o: CFLAGS += -Itests/lib -Iservice

$(O)/tests/test_status_view: $(O)/obj/tests/metrics/test_status_view.o $(SERVICE_LIB) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(O)/tests/test_status_view

# Private directories along a path: the walk, races, links, umask (suite 55-mps). The test
# defines mkdir/mkdirat itself (a racing user, made deterministic).
$(O)/obj/tests/service/%.o: CFLAGS += -Itests/lib -Iservice

$(O)/tests/test_private_dir: $(O)/obj/tests/service/test_private_dir.o $(SERVICE_LIB) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(O)/tests/test_private_dir

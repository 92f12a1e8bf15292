# run_exp (the experiment runner, jansson) and gpuyield-standin (the simulated worker of --simulate).
RUN_EXP_SRC := $(filter-out run_exp/standin_worker.c,$(wildcard run_exp/*.c))
RUN_EXP_LIBS := -ljansson -lm
$(O)/obj/run_exp/%.o: CFLAGS += -Iservice # the MPS daemon manager (main.c)

$(O)/bin/run_exp: $(RUN_EXP_SRC:%.c=$(O)/obj/%.o) $(SERVICE_LIB) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(RUN_EXP_LIBS) -o $@

$(O)/bin/gpuyield-standin: $(O)/obj/run_exp/standin_worker.o $(O)/obj/run_exp/protocol.o \
		$(O)/obj/run_exp/models.o $(O)/obj/run_exp/image.o $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -ldl -lm -o $@

ALL += $(O)/bin/run_exp $(O)/bin/gpuyield-standin

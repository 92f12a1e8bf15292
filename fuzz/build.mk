# The fuzz targets (fuzz/*_fuzz.c) built with gcc as plain replay programs (fuzz/replay_main.c):
# suite 80 replays the committed corpora through them in every variant. The libFuzzer builds
# are fuzz/build.sh's (clang), run by fuzz/run.sh, not by CI.
FUZZ_OBJ := $(O)/obj/fuzz/replay_main.o $(O)/obj/fuzz/fuzz_file.o
$(O)/obj/fuzz/run_exp_config_fuzz.o: CFLAGS += -Irun_exp
$(O)/obj/fuzz/nsight_csv_fuzz.o: CFLAGS += -Insight-parser
NSIGHT_PARSER_LIB_OBJ := $(filter-out $(O)/obj/nsight-parser/main.o,$(patsubst %.c,$(O)/obj/%.o,$(wildcard nsight-parser/*.c)))

$(O)/fuzz/replay_segment_open: $(O)/obj/fuzz/segment_open_fuzz.o $(FUZZ_OBJ) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@
$(O)/fuzz/replay_guard_state: $(O)/obj/fuzz/guard_state_fuzz.o $(FUZZ_OBJ) $(CONTROLLER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@
$(O)/fuzz/replay_run_exp_config: $(O)/obj/fuzz/run_exp_config_fuzz.o $(FUZZ_OBJ) $(O)/obj/run_exp/config.o \
		$(O)/obj/run_exp/image.o $(O)/obj/run_exp/models.o $(O)/obj/controller/policies.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -ljansson -lm -o $@
$(O)/fuzz/replay_nsight_csv: $(O)/obj/fuzz/nsight_csv_fuzz.o $(FUZZ_OBJ) $(NSIGHT_PARSER_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -lsqlite3 -ljansson -lm -o $@

ALL += $(O)/fuzz/replay_segment_open $(O)/fuzz/replay_guard_state $(O)/fuzz/replay_run_exp_config $(O)/fuzz/replay_nsight_csv

# nsight-parser: per-model kernel tables from an Nsight Systems report (libsqlite3, jansson).
NSIGHT_PARSER_OBJ := $(patsubst %.c,$(O)/obj/%.o,$(wildcard nsight-parser/*.c))

$(O)/bin/nsight-parser: $(NSIGHT_PARSER_OBJ) $(O)/obj/controller/version.o $(O)/obj/controller/option_text.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -lsqlite3 -ljansson -lm -o $@

ALL += $(O)/bin/nsight-parser

# Unit tests of its parts (tests/suites/60-nsight.sh runs them, plain and ASan+UBSan).
$(O)/obj/tests/nsight-parser/%.o: CFLAGS += -Insight-parser -Itests/lib
$(O)/tests/test_nsight_units: $(O)/obj/tests/nsight-parser/test_nsight_units.o $(O)/obj/nsight-parser/stats.o \
		$(O)/obj/nsight-parser/int_map.o $(O)/obj/nsight-parser/string_table.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

ALL += $(O)/tests/test_nsight_units

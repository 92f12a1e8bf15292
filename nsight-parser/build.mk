# nsight-parser: per-model kernel tables from an Nsight Systems report (libsqlite3, jansson).
NSIGHT_PARSER_OBJ := $(patsubst %.c,$(O)/obj/%.o,$(wildcard nsight-parser/*.c))

$(O)/bin/nsight-parser: $(NSIGHT_PARSER_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -lsqlite3 -ljansson -lm -o $@

ALL += $(O)/bin/nsight-parser

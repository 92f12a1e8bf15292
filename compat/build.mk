# compat/: the drop-in for the original gpu-sharing experiment's libraries.
#  - libgeek.so: its ctypes interface (setMem, waitForEmptyGPU, ...) on gpuyield segments, built on
#    the controller library; exports only those calls (compat/libgeek.map).
#  - libcuinterpose.so, libcuinterpose_sync.so, libcuinterpose_event.so: hard links of
#    libgpuyield.so, the one hook library; it reads its own file name at run time (dladdr) to take
#    the original's SUFFIX, ID, SYNC_KERNELS, EVENT_GROUP_SIZE (hooks/compat_env.c).
# (This fragment is read before hooks/build.mk: name libgpuyield.so by path, not $(HOOKS_LIB).)
GEEK_LIB := $(O)/lib/libgeek.so
$(O)/obj/compat/%.o: CFLAGS += -fvisibility=hidden -fno-semantic-interposition

$(GEEK_LIB): $(O)/obj/compat/libgeek.o $(CONTROLLER_LIB) compat/libgeek.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libgeek.so -Wl,--version-script=compat/libgeek.map -Wl,-Bsymbolic \
		-Wl,-z,defs $(filter %.o %.a,$^) -o $@

CUINTERPOSE_LIBS := $(O)/lib/libcuinterpose.so $(O)/lib/libcuinterpose_sync.so $(O)/lib/libcuinterpose_event.so
# A hard link, or a copy where the file system has none: the same bytes either way.
$(CUINTERPOSE_LIBS): $(O)/lib/libgpuyield.so
	@mkdir -p $(dir $@)
	rm -f $@ && (ln $< $@ 2>/dev/null || cp $< $@)

ALL += $(GEEK_LIB) $(CUINTERPOSE_LIBS)

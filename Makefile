# Conventional entry points; the build itself is make.sh (CUDA detection, the Python package) and
# build.mk (the compile rules).
#   make                                   ./make.sh
#   make test                              ./make.sh test
#   make install [PREFIX=/usr/local] [DESTDIR=]
#       PREFIX/bin        expcontroller, run_exp, nsight-parser, gpuyield-standin
#       PREFIX/lib        libgpuyield.so (the hook), libgeek.so and libcuinterpose*.so (compat),
#                         libgycontrol.a (the controller library), pkgconfig/gpuyield.pc
#       PREFIX/include/gpuyield   gpuyield.h, segment_layout.h, guarded_layout.h, policies.h
#       PREFIX/lib/gpuyield/python  the Python package run_exp's workers import (for your own
#                         scripts: pip install .)
#       PREFIX/lib/gpuyield/fakecuda  the fake driver of run_exp --simulate
#       PREFIX/share/doc/gpuyield   README.md, LICENSE
#   make uninstall [PREFIX=...] [DESTDIR=...]
PREFIX ?= /usr/local
DESTDIR ?=
O := build
BINDIR := $(DESTDIR)$(PREFIX)/bin
LIBDIR := $(DESTDIR)$(PREFIX)/lib
INCDIR := $(DESTDIR)$(PREFIX)/include/gpuyield
PYDIR := $(LIBDIR)/gpuyield/python
DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/gpuyield
VERSION := $(shell cat VERSION)

TOOLS := expcontroller run_exp nsight-parser gpuyield-standin
LIBS := libgpuyield.so libgeek.so libcuinterpose.so libcuinterpose_sync.so libcuinterpose_event.so libgycontrol.a
HEADERS := controller/gpuyield.h controller/segment_layout.h controller/guarded_layout.h controller/policies.h
FAKECUDA := $(O)/fakecuda/libcuda.so.1
BUILT := $(TOOLS:%=$(O)/bin/%) $(LIBS:%=$(O)/lib/%) $(FAKECUDA) $(O)/python/gpuyield/__init__.py

.PHONY: all test install uninstall
all:
	./make.sh
test:
	./make.sh test

$(BUILT) &:
	./make.sh

install: $(BUILT)
	@case "$(PREFIX)" in /*) ;; *) echo "make install: PREFIX must be an absolute path, not '$(PREFIX)'" >&2; exit 2 ;; esac
	install -d $(BINDIR) $(LIBDIR)/pkgconfig $(INCDIR) $(PYDIR)/gpuyield $(LIBDIR)/gpuyield/fakecuda $(DOCDIR)
	install -m 755 $(TOOLS:%=$(O)/bin/%) $(BINDIR)/
	install -m 755 $(filter %.so,$(LIBS:%=$(O)/lib/%)) $(LIBDIR)/
	install -m 644 $(O)/lib/libgycontrol.a $(LIBDIR)/
	install -m 755 $(FAKECUDA) $(LIBDIR)/gpuyield/fakecuda/
	install -m 644 $(HEADERS) $(INCDIR)/
	install -m 644 $(wildcard $(O)/python/gpuyield/*.py) $(PYDIR)/gpuyield/
	install -m 755 $(wildcard $(O)/python/gpuyield/*.so) $(PYDIR)/gpuyield/
	install -m 644 README.md LICENSE $(DOCDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PREFIX)/lib|' -e 's|@VERSION@|$(VERSION)|' gpuyield.pc.in \
		> $(LIBDIR)/pkgconfig/gpuyield.pc
	@echo "make install: installed gpuyield $(VERSION) under $(DESTDIR)$(PREFIX)"

uninstall:
	rm -f $(TOOLS:%=$(BINDIR)/%) $(LIBS:%=$(LIBDIR)/%) $(LIBDIR)/pkgconfig/gpuyield.pc
	rm -rf $(INCDIR) $(LIBDIR)/gpuyield $(DOCDIR)

/* The gpuyield version: the top-level VERSION file, passed by the build as GY_VERSION (build.mk,
 * setup.py), so that every tool, library and the Python package report the same one. */
#include "gpuyield.h"

#ifndef GY_VERSION
#error "GY_VERSION is not defined: build through build.mk or setup.py, which read it from VERSION"
#endif

const char *gy_version(void)
{
    return GY_VERSION;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* api.c: version, bounds and level queries. */
#include "frame.h"

unsigned glyd_versionNumber(void) { return GLYD_VERSION_NUMBER; }
const char* glyd_versionString(void) { return GLYD_VERSION_STRING; }

int glyd_minCLevel(void) { return GLYD_LEVEL_MIN; }
int glyd_maxCLevel(void) { return GLYD_LEVEL_MAX; }
int glyd_defaultCLevel(void) { return GLYD_LEVEL_DEFAULT; }

size_t glyd_compressBound(size_t srcSize)
{
    RETURN_ERROR_IF(srcSize > SIZE_MAX / 2, srcSize_wrong, "input too large");
    return GLYD_COMPRESSBOUND(srcSize);
}

# SPDX-License-Identifier: BSD-3-Clause
# A CUDA source made C++ for cudacpu.h, line for line: a launch
# `k<<<grid, block[, smem[, stream]]>>>(args)` becomes
# `cudacpu::launch(k, grid, block[, smem[, stream]])(args)`; dynamic
# shared memory (`extern __shared__ T name[];`) the block's allocation; a
# static shared declaration (`__shared__ [__align__(n)] T a[..], b;`, one a
# line) is followed by cudacpu_poisonShared(a, b), which fills the
# variables once a block, before any thread can write them.
s/([A-Za-z_][A-Za-z0-9_]*(<[^<>]*>)?)<<<(.*)>>>\(/cudacpu::launch(\1, \3)(/
s/extern __shared__ (__align__\([0-9]+\) )?([A-Za-z_][A-Za-z0-9_]*) ([A-Za-z_][A-Za-z0-9_]*)\[\];/\2* const \3 = (\2*)cudacpu_dynamicShared();/
/^[[:space:]]*__shared__ /{
    s/^([[:space:]]*__shared__ (__align__\([0-9]+\) )?(typename )?[A-Za-z_][A-Za-z0-9_:]* )([^;]*);/\1\4; cudacpu_poisonShared(\4);/
    :dims
    s/(cudacpu_poisonShared\([^)]*)\[[^]]*\]/\1/
    t dims
}

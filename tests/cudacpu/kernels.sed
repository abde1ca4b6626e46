# A CUDA source made C++ for cudacpu.h, line for line: a launch
# `k<<<grid, block[, smem[, stream]]>>>(args)` becomes
# `cudacpu::launch(k, grid, block[, smem[, stream]])(args)`, and dynamic
# shared memory (`extern __shared__ T name[];`) the block's allocation.
s/([A-Za-z_][A-Za-z0-9_]*(<[^<>]*>)?)<<<(.*)>>>\(/cudacpu::launch(\1, \3)(/
s/extern __shared__ (__align__\([0-9]+\) )?([A-Za-z_][A-Za-z0-9_]*) ([A-Za-z_][A-Za-z0-9_]*)\[\];/\2* const \3 = (\2*)cudacpu_dynamicShared();/

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cub/block/block_scan.cuh of cudacpu: BlockScan's exclusive sum, through
 * its storage and one barrier, as CUB's: the caller syncs before the
 * storage is used again.
 */
#ifndef CUDACPU_CUB_BLOCK_SCAN_CUH
#define CUDACPU_CUB_BLOCK_SCAN_CUH

#include "../../../cudacpu.h"

namespace cub {

template <class T, int THREADS> class BlockScan {
public:
    struct TempStorage {
        T v[THREADS];
    };
    __device__ explicit BlockScan(TempStorage& s) : s_(s) {}
    __device__ void ExclusiveSum(T in, T& out, T& total)
    {
        unsigned const me = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        s_.v[me] = in;
        __syncthreads();
        T sum = T(), all = T();
        for (unsigned i = 0; i < THREADS; i++) {
            if (i == me) sum = all;
            all += s_.v[i];
        }
        out = sum;
        total = all;
    }

private:
    TempStorage& s_;
};

} // namespace cub

#endif /* CUDACPU_CUB_BLOCK_SCAN_CUH */

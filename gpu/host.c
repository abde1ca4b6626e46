/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host.c: the host's half of uploading a tensor: the blob checked and
 * described for the kernels by libglyd's C code, so that the CUDA sources
 * need nothing but the kernels' header.
 */
#include "tensor_gpu.h"

size_t glyd_cudaDescribeBlob(const void* blob, size_t size, gk_tensor* t, gk_huf_tables* tables);

size_t glyd_cudaDescribeBlob(const void* blob, size_t size, gk_tensor* t, gk_huf_tables* tables)
{
    glyd_tensorView v;
    size_t const r = glyd_tensorOpen(&v, blob, size);
    FORWARD_IF_ERROR(r);
    RETURN_ERROR_IF(r != size, corruption_detected, "bytes after the blob");
    return glyd_tensorDescribe(&v, blob, t, tables);
}

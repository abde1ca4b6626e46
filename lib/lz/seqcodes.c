/* SPDX-License-Identifier: BSD-3-Clause */
/* seqcodes.c: the code tables of sequence fields (docs/FORMAT.md,
 * "Sequence codes") and the predefined distributions. */
#include "lz.h"

const uint32_t glyd_llBase[GLYD_LL_MAX_CODE + 1] = {
    0,      1,      2,      3,      4,     5,     6,     7,
    8,      9,      10,     11,     12,    13,    14,    15,
    16,     18,     20,     22,     24,    28,    32,    40,
    48,     64,     128,    256,    512,   1024,  2048,  4096,
    8192,   16384,  32768,  65536,  131072, 262144, 524288, 1048576 };

const uint8_t glyd_llBits[GLYD_LL_MAX_CODE + 1] = {
    0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 2, 2, 3, 3,  4, 6, 7, 8, 9, 10, 11, 12,
    13, 14, 15, 16, 17, 18, 19, 20 };

const uint32_t glyd_mlBase[GLYD_ML_MAX_CODE + 1] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
    32, 34, 36, 38, 40, 44, 48, 56, 64, 80, 96, 128, 256, 512, 1024, 2048,
    4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576 };

const uint8_t glyd_mlBits[GLYD_ML_MAX_CODE + 1] = {
    0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 2, 2, 3, 3,  4, 4, 5, 7, 8, 9, 10, 11,
    12, 13, 14, 15, 16, 17, 18, 19, 20 };

/* Predefined distributions (sum 2^log each); zero entries cannot be coded
 * with them. */
const int16_t glyd_llDefaultNorm[GLYD_LL_MAX_CODE + 1] = {
    5, 3, 2, 2, 2, 2, 2, 2,  2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2,  2, 2, 2, 1, 1, 1, 1, 1,
    1, 0, 0, 0, 0, 0, 0, 0 };

const int16_t glyd_mlDefaultNorm[GLYD_ML_MAX_CODE + 1] = {
    3, 3, 3, 3, 3, 3, 3, 3,  3, 3, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1,  1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1,  1, 1, 1, 1, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0 };

const int16_t glyd_ofDefaultNorm[GLYD_OF_MAX_CODE + 1] = {
    4, 3, 2, 1, 1, 1, 1, 1,  1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1,  1, 1, 0, 0, 0, 0, 0, 0 };

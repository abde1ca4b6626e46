/* SPDX-License-Identifier: BSD-3-Clause */
/* error.c: names and codes of the library's errors (see glyd_ErrorCode). */
#include "common.h"

unsigned glyd_isError(size_t code) { return code > GLYD_ERROR(maxCode); }

glyd_ErrorCode glyd_getErrorCode(size_t code)
{
    if (!GLYD_IS_ERROR(code)) return GLYD_error_no_error;
    return (glyd_ErrorCode)(0 - code);
}

const char* glyd_getErrorName(size_t code) { return glyd_getErrorString(glyd_getErrorCode(code)); }

const char* glyd_getErrorString(glyd_ErrorCode code)
{
    switch (code) {
    case GLYD_error_no_error: return "No error detected";
    case GLYD_error_GENERIC: return "Error (generic)";
    case GLYD_error_prefix_unknown: return "Unknown frame descriptor (not a glyd frame)";
    case GLYD_error_version_unsupported: return "Frame format version not supported";
    case GLYD_error_frameParameter_unsupported: return "Unsupported frame parameter";
    case GLYD_error_frameParameter_windowTooLarge: return "Frame requires too much memory for decoding";
    case GLYD_error_corruption_detected: return "Data corruption detected";
    case GLYD_error_checksum_wrong: return "Restored data doesn't match checksum";
    case GLYD_error_contentSize_wrong: return "Decoded size differs from the size declared in the frame";
    case GLYD_error_srcSize_truncated: return "Input is truncated: the frame is incomplete";
    case GLYD_error_dictionary_corrupted: return "Dictionary is corrupted";
    case GLYD_error_dictionary_wrong: return "Dictionary mismatch";
    case GLYD_error_parameter_unsupported: return "Unsupported parameter";
    case GLYD_error_parameter_outOfBound: return "Parameter is out of bound";
    case GLYD_error_stage_wrong: return "Operation not authorized at current processing stage";
    case GLYD_error_memory_allocation: return "Allocation error: not enough memory";
    case GLYD_error_dstSize_tooSmall: return "Destination buffer is too small";
    case GLYD_error_srcSize_wrong: return "Source size differs from the pledged size";
    case GLYD_error_dstBuffer_null: return "Operation on NULL destination buffer";
    case GLYD_error_seekTable_missing: return "Frame has no independent segments to seek to";
    case GLYD_error_threads_unavailable: return "Worker threads could not be started";
    case GLYD_error_io_failed: return "I/O error: a file could not be read or written";
    case GLYD_error_safetensors_invalid: return "Invalid safetensors file";
    case GLYD_error_pack_invalid: return "Not a packed model, or a damaged one";
    case GLYD_error_content_mismatch: return "Contents differ from the source";
    case GLYD_error_model_unsupported: return "Model architecture or setting not supported";
    case GLYD_error_model_invalid: return "Model tensors missing or of the wrong shape";
    case GLYD_error_maxCode:
    default: return "Unspecified error code";
    }
}

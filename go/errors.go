// SPDX-License-Identifier: BSD-3-Clause
// errors.go: the library's error codes as Go errors: *Error carries the
// code and message of a failed call, and the sentinel values below let
// callers test for a kind of failure with errors.Is.

package glyd

// #include <glyd.h>
import "C"

import "errors"

// ErrorCode is a stable error code of libglyd (glyd_ErrorCode in glyd.h).
// Its values never change between versions.
type ErrorCode int

// The codes a codec call can return.
const (
	CodeGeneric                   ErrorCode = C.GLYD_error_GENERIC
	CodePrefixUnknown             ErrorCode = C.GLYD_error_prefix_unknown
	CodeVersionUnsupported        ErrorCode = C.GLYD_error_version_unsupported
	CodeFrameParameterUnsupported ErrorCode = C.GLYD_error_frameParameter_unsupported
	CodeWindowTooLarge            ErrorCode = C.GLYD_error_frameParameter_windowTooLarge
	CodeCorruptionDetected        ErrorCode = C.GLYD_error_corruption_detected
	CodeChecksumWrong             ErrorCode = C.GLYD_error_checksum_wrong
	CodeContentSizeWrong          ErrorCode = C.GLYD_error_contentSize_wrong
	CodeSrcSizeTruncated          ErrorCode = C.GLYD_error_srcSize_truncated
	CodeDictionaryCorrupted       ErrorCode = C.GLYD_error_dictionary_corrupted
	CodeDictionaryWrong           ErrorCode = C.GLYD_error_dictionary_wrong
	CodeParameterUnsupported      ErrorCode = C.GLYD_error_parameter_unsupported
	CodeParameterOutOfBound       ErrorCode = C.GLYD_error_parameter_outOfBound
	CodeStageWrong                ErrorCode = C.GLYD_error_stage_wrong
	CodeMemoryAllocation          ErrorCode = C.GLYD_error_memory_allocation
	CodeDstSizeTooSmall           ErrorCode = C.GLYD_error_dstSize_tooSmall
	CodeSrcSizeWrong              ErrorCode = C.GLYD_error_srcSize_wrong
	CodeDstBufferNull             ErrorCode = C.GLYD_error_dstBuffer_null
	CodeThreadsUnavailable        ErrorCode = C.GLYD_error_threads_unavailable
)

// String returns the library's description of the code.
func (c ErrorCode) String() string {
	return C.GoString(C.glyd_getErrorString(C.glyd_ErrorCode(c)))
}

// Error is a failure reported by libglyd: its code, and the library's
// message for it (glyd_getErrorName).
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string { return "glyd: " + e.Message }

// Is reports whether the error is of the kind of target: one of the
// sentinel errors of this package, or an *Error with the same Code.
func (e *Error) Is(target error) bool {
	if t, ok := target.(*Error); ok {
		return t.Code == e.Code
	}
	switch target {
	case ErrCorrupt:
		return e.Code == CodeCorruptionDetected || e.Code == CodeChecksumWrong ||
			e.Code == CodeContentSizeWrong
	case ErrChecksum:
		return e.Code == CodeChecksumWrong
	case ErrTruncated:
		return e.Code == CodeSrcSizeTruncated
	case ErrUnknownFormat:
		return e.Code == CodePrefixUnknown || e.Code == CodeVersionUnsupported ||
			e.Code == CodeFrameParameterUnsupported
	case ErrTooLarge:
		return e.Code == CodeWindowTooLarge || e.Code == CodeDstSizeTooSmall
	case ErrDictionary:
		return e.Code == CodeDictionaryCorrupted || e.Code == CodeDictionaryWrong
	case ErrParameter:
		return e.Code == CodeParameterUnsupported || e.Code == CodeParameterOutOfBound
	}
	return false
}

// Sentinel errors, for errors.Is. An *Error matches the ones its code
// belongs to; errors made by this package itself wrap them.
var (
	// ErrCorrupt: the input is damaged (corruption detected, a wrong
	// checksum or a content size that differs from the header's).
	ErrCorrupt = errors.New("glyd: corrupt input")
	// ErrChecksum: the content checksum does not match (also ErrCorrupt).
	ErrChecksum = errors.New("glyd: checksum mismatch")
	// ErrTruncated: the input ended inside a frame, or was empty.
	ErrTruncated = errors.New("glyd: truncated input")
	// ErrUnknownFormat: the input is not a glyd frame, or one of a version
	// or with parameters this library does not support.
	ErrUnknownFormat = errors.New("glyd: not a supported glyd frame")
	// ErrTooLarge: decoding would take more memory than allowed (a window
	// above the decoder's limit, or output above WithMaxDecodedSize).
	ErrTooLarge = errors.New("glyd: output or window too large")
	// ErrDictionary: a dictionary is damaged, missing, or not the frame's.
	ErrDictionary = errors.New("glyd: dictionary corrupted or wrong")
	// ErrParameter: a level or option outside what the library accepts.
	ErrParameter = errors.New("glyd: parameter unsupported or out of bound")
	// ErrClosed: a Writer, Reader, Encoder or Decoder used after Close.
	ErrClosed = errors.New("glyd: use after Close")
)

// isError reports whether a size_t result of the library is an error.
func isError(r C.size_t) bool { return C.glyd_isError(r) != 0 }

// toError turns an error result of the library into an *Error.
func toError(r C.size_t) error {
	return &Error{
		Code:    ErrorCode(C.glyd_getErrorCode(r)),
		Message: C.GoString(C.glyd_getErrorName(r)),
	}
}

// codeError makes an *Error for a code the package detects itself (a
// stream that ends inside a frame).
func codeError(c ErrorCode) error {
	return &Error{Code: c, Message: c.String()}
}

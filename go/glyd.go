// SPDX-License-Identifier: BSD-3-Clause
// glyd.go: the package's one-shot side: levels, Compress and Decompress,
// and the reusable Encoder and Decoder with their options.

// Package glyd binds libglyd, the Glyd codec, with cgo: one-shot
// Compress and Decompress, reusable Encoder and Decoder contexts, and a
// streaming Writer and Reader. Frames are those of the glyd command and
// of the C library (docs/FORMAT.md); errors are *Error values that
// errors.Is matches against ErrCorrupt, ErrTruncated and the other
// sentinels of this package.
//
// Only libglyd, the codec, is linked: by default the build/libglyd.a of
// the source tree this package sits in, with -tags glyd_pkgconfig the
// installed library that pkg-config names, with -tags glyd_external the
// one CGO_CFLAGS and CGO_LDFLAGS point at.
package glyd

// #include <glyd.h>
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Levels: 1..19 trade speed for size, negative levels are the --fast=N
// modes (level -N), MaxLevel is --max, and 0 means DefaultLevel.
const (
	MinLevel     = C.GLYD_LEVEL_MIN
	MaxLevel     = C.GLYD_LEVEL_MAX
	DefaultLevel = C.GLYD_LEVEL_DEFAULT
)

// DefaultMaxDecodedSize bounds what Decompress and a Decoder without
// WithMaxDecodedSize produce (1 GiB): a frame that declares or decodes
// to more is refused with an error that matches ErrTooLarge rather than
// allocated. Readers have no such bound; they stream.
const DefaultMaxDecodedSize = 1 << 30

const (
	contentSizeUnknown = ^uint64(0)
	contentSizeError   = ^uint64(0) - 1
)

// A declared content size up to trustSize, or up to trustRatio times the
// input, is allocated at once and decoded in one call; a larger one
// (possibly forged) is decoded in steps into a growing buffer. Variables
// so that the tests can take either path.
var (
	trustSize  uint64 = 64 << 20
	trustRatio uint64 = 1024
)

// Version returns the version of the libglyd linked, as "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.glyd_versionString()) }

// CompressBound returns the largest frame Compress can produce from n bytes.
func CompressBound(n int) int { return n + n>>7 + 64 }

// ptr returns the address of b's first byte, or nil when b is empty. The
// library keeps no pointer past a call's return, as cgo requires.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// grow returns b with room for at least n more bytes past its length.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// Compress returns src compressed into one frame at level, with a content
// checksum and the content size in its header.
func Compress(src []byte, level int) ([]byte, error) {
	return CompressAppend(nil, src, level)
}

// CompressAppend appends to dst the frame of src compressed at level and
// returns the extended slice; on error it returns dst unchanged.
func CompressAppend(dst, src []byte, level int) ([]byte, error) {
	bound := CompressBound(len(src))
	out := grow(dst, bound)
	free := out[len(out) : len(out)+bound]
	r := C.glyd_compress(ptr(free), C.size_t(bound), ptr(src), C.size_t(len(src)), C.int(level))
	if isError(r) {
		return dst, toError(r)
	}
	return out[:len(out)+int(r)], nil
}

// Decompress returns the content of every frame of src (concatenated
// frames decode as one stream, skippable frames are skipped), checking
// their checksums. It refuses output above DefaultMaxDecodedSize; use a
// Decoder with WithMaxDecodedSize for more. Empty input is an error
// matching ErrTruncated, as in the C library.
func Decompress(src []byte) ([]byte, error) {
	return DecompressAppend(nil, src)
}

// DecompressAppend appends the content of src to dst, as Decompress does,
// and returns the extended slice; on error it returns dst unchanged.
func DecompressAppend(dst, src []byte) ([]byte, error) {
	return decompressAppend(nil, dst, src, DefaultMaxDecodedSize)
}

// decompressAppend decodes src after dst with dctx (a temporary context
// where nil), producing at most max bytes.
func decompressAppend(dctx *C.glyd_DCtx, dst, src []byte, max int) ([]byte, error) {
	if len(src) == 0 {
		return dst, codeError(CodeSrcSizeTruncated)
	}
	size := uint64(C.glyd_findDecompressedSize(ptr(src), C.size_t(len(src))))
	if size != contentSizeUnknown && size != contentSizeError {
		if size > uint64(max) {
			return dst, fmt.Errorf("glyd: content of %d bytes is above the limit of %d: %w", size, max, ErrTooLarge)
		}
		if size <= trustSize || size/trustRatio <= uint64(len(src)) {
			n := int(size)
			out := grow(dst, n)
			free := out[len(out) : len(out)+n]
			var r C.size_t
			if dctx != nil {
				r = C.glyd_decompressDCtx(dctx, ptr(free), C.size_t(n), ptr(src), C.size_t(len(src)))
			} else {
				r = C.glyd_decompress(ptr(free), C.size_t(n), ptr(src), C.size_t(len(src)))
			}
			if isError(r) {
				return dst, toError(r)
			}
			return out[:len(out)+int(r)], nil
		}
	}
	// Unknown, untrusted or unreadable sizes: decode step by step, so that
	// memory follows what the frames really hold (and a malformed input
	// gets the decoder's own diagnosis).
	if dctx == nil {
		dctx = C.glyd_createDCtx()
		if dctx == nil {
			return dst, codeError(CodeMemoryAllocation)
		}
		defer C.glyd_freeDCtx(dctx)
	} else {
		C.glyd_DCtx_reset(dctx, C.glyd_reset_session_only)
	}
	return decodeSteps(dctx, dst, src, max)
}

// EncoderOption sets a parameter of an Encoder or a Writer.
type EncoderOption func(*encoderConfig)

type cparam struct {
	param C.glyd_cParameter
	value int
}

type encoderConfig struct {
	params []cparam
	dict   []byte
}

// WithThreads compresses on n worker threads (glyd_c_nbWorkers): the
// input is cut into independent segments, compressed in parallel. 0, the
// default, compresses in the calling goroutine's thread.
func WithThreads(n int) EncoderOption {
	return func(c *encoderConfig) { c.params = append(c.params, cparam{C.glyd_c_nbWorkers, n}) }
}

// WithChecksum writes a content checksum into each frame (true, the
// default) or not.
func WithChecksum(on bool) EncoderOption {
	return func(c *encoderConfig) { c.params = append(c.params, cparam{C.glyd_c_checksumFlag, b2i(on)}) }
}

// WithWindowLog sets the log2 of the largest match distance, 10..31 (0:
// from the level). Decoders refuse windows above their own limit.
func WithWindowLog(n int) EncoderOption {
	return func(c *encoderConfig) { c.params = append(c.params, cparam{C.glyd_c_windowLog, n}) }
}

// WithLongMatching also finds repeats as far back as the window reaches
// (the CLI's --long), for large inputs with distant repeats.
func WithLongMatching(on bool) EncoderOption {
	return func(c *encoderConfig) { c.params = append(c.params, cparam{C.glyd_c_longMatching, b2i(on)}) }
}

// WithEncoderDictionary compresses with dict (a trained dictionary or raw
// content); the same dictionary must be given to decompress.
func WithEncoderDictionary(dict []byte) EncoderOption {
	return func(c *encoderConfig) { c.dict = append([]byte(nil), dict...) }
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newCCtx makes a compression context at level with opts applied.
func newCCtx(level int, opts []EncoderOption) (*C.glyd_CCtx, error) {
	var cfg encoderConfig
	for _, o := range opts {
		o(&cfg)
	}
	cctx := C.glyd_createCCtx()
	if cctx == nil {
		return nil, codeError(CodeMemoryAllocation)
	}
	params := append([]cparam{{C.glyd_c_compressionLevel, level}}, cfg.params...)
	for _, p := range params {
		if r := C.glyd_CCtx_setParameter(cctx, p.param, C.int(p.value)); isError(r) {
			C.glyd_freeCCtx(cctx)
			return nil, toError(r)
		}
	}
	if len(cfg.dict) > 0 {
		if r := C.glyd_CCtx_loadDictionary(cctx, ptr(cfg.dict), C.size_t(len(cfg.dict))); isError(r) {
			C.glyd_freeCCtx(cctx)
			return nil, toError(r)
		}
	}
	return cctx, nil
}

// Encoder compresses buffers with one reusable context, at one level and
// with the options it was made with. Its methods may be called from
// several goroutines; they take turns.
type Encoder struct {
	mu   sync.Mutex
	cctx *C.glyd_CCtx
}

// NewEncoder returns an Encoder compressing at level with opts. Close
// frees its context.
func NewEncoder(level int, opts ...EncoderOption) (*Encoder, error) {
	cctx, err := newCCtx(level, opts)
	if err != nil {
		return nil, err
	}
	e := &Encoder{cctx: cctx}
	runtime.SetFinalizer(e, (*Encoder).Close)
	return e, nil
}

// Compress returns src compressed into one frame.
func (e *Encoder) Compress(src []byte) ([]byte, error) { return e.CompressAppend(nil, src) }

// CompressAppend appends to dst the frame of src and returns the extended
// slice; on error it returns dst unchanged.
func (e *Encoder) CompressAppend(dst, src []byte) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cctx == nil {
		return dst, ErrClosed
	}
	bound := CompressBound(len(src))
	out := grow(dst, bound)
	free := out[len(out) : len(out)+bound]
	r := C.glyd_compress2(e.cctx, ptr(free), C.size_t(bound), ptr(src), C.size_t(len(src)))
	runtime.KeepAlive(e)
	if isError(r) {
		return dst, toError(r)
	}
	return out[:len(out)+int(r)], nil
}

// Close frees the Encoder's context. Later calls return ErrClosed.
func (e *Encoder) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cctx != nil {
		C.glyd_freeCCtx(e.cctx)
		e.cctx = nil
		runtime.SetFinalizer(e, nil)
	}
	return nil
}

// DecoderOption sets a parameter of a Decoder or a Reader.
type DecoderOption func(*decoderConfig)

type dparam struct {
	param C.glyd_dParameter
	value int
}

type decoderConfig struct {
	params []dparam
	dict   []byte
	max    int
}

// WithDecoderThreads decodes the segments of segmented frames on n worker
// threads (glyd_d_nbWorkers); 0, the default, uses the calling thread.
func WithDecoderThreads(n int) DecoderOption {
	return func(c *decoderConfig) { c.params = append(c.params, dparam{C.glyd_d_nbWorkers, n}) }
}

// WithMaxWindowLog refuses frames whose window is above 2^n bytes, the
// memory streaming them takes (default 27, 128 MiB; 10..31).
func WithMaxWindowLog(n int) DecoderOption {
	return func(c *decoderConfig) { c.params = append(c.params, dparam{C.glyd_d_windowLogMax, n}) }
}

// WithMaxDecodedSize bounds the output of one Decompress call of a
// Decoder (default DefaultMaxDecodedSize). Readers ignore it.
func WithMaxDecodedSize(n int) DecoderOption {
	return func(c *decoderConfig) { c.max = n }
}

// WithDecoderDictionary decompresses with dict, the dictionary the frames
// were compressed with.
func WithDecoderDictionary(dict []byte) DecoderOption {
	return func(c *decoderConfig) { c.dict = append([]byte(nil), dict...) }
}

// newDCtx makes a decompression context with opts applied.
func newDCtx(opts []DecoderOption) (*C.glyd_DCtx, decoderConfig, error) {
	cfg := decoderConfig{max: DefaultMaxDecodedSize}
	for _, o := range opts {
		o(&cfg)
	}
	dctx := C.glyd_createDCtx()
	if dctx == nil {
		return nil, cfg, codeError(CodeMemoryAllocation)
	}
	for _, p := range cfg.params {
		if r := C.glyd_DCtx_setParameter(dctx, p.param, C.int(p.value)); isError(r) {
			C.glyd_freeDCtx(dctx)
			return nil, cfg, toError(r)
		}
	}
	if len(cfg.dict) > 0 {
		if r := C.glyd_DCtx_loadDictionary(dctx, ptr(cfg.dict), C.size_t(len(cfg.dict))); isError(r) {
			C.glyd_freeDCtx(dctx)
			return nil, cfg, toError(r)
		}
	}
	return dctx, cfg, nil
}

// Decoder decompresses buffers with one reusable context. Its methods may
// be called from several goroutines; they take turns.
type Decoder struct {
	mu   sync.Mutex
	dctx *C.glyd_DCtx
	max  int
}

// NewDecoder returns a Decoder with opts. Close frees its context.
func NewDecoder(opts ...DecoderOption) (*Decoder, error) {
	dctx, cfg, err := newDCtx(opts)
	if err != nil {
		return nil, err
	}
	d := &Decoder{dctx: dctx, max: cfg.max}
	runtime.SetFinalizer(d, (*Decoder).Close)
	return d, nil
}

// Decompress returns the content of every frame of src, as the package's
// Decompress does, within the Decoder's size bound.
func (d *Decoder) Decompress(src []byte) ([]byte, error) { return d.DecompressAppend(nil, src) }

// DecompressAppend appends the content of src to dst and returns the
// extended slice; on error it returns dst unchanged.
func (d *Decoder) DecompressAppend(dst, src []byte) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dctx == nil {
		return dst, ErrClosed
	}
	out, err := decompressAppend(d.dctx, dst, src, d.max)
	runtime.KeepAlive(d)
	return out, err
}

// Close frees the Decoder's context. Later calls return ErrClosed.
func (d *Decoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dctx != nil {
		C.glyd_freeDCtx(d.dctx)
		d.dctx = nil
		runtime.SetFinalizer(d, nil)
	}
	return nil
}

// SPDX-License-Identifier: BSD-3-Clause
// reader.go: streaming decompression: the Reader (an io.ReadCloser over
// concatenated frames) and the step-by-step decoding that Decompress uses
// for content whose size it does not trust.

package glyd

/*
#include <glyd.h>

typedef struct { size_t ret, inPos, outPos; } glydgo_step;

// One glyd_decompressStream call over buffers given by address and size.
// The glyd_inBuffer and glyd_outBuffer are built here, on the C stack,
// since Go memory passed to C may not itself hold Go pointers.
static glydgo_step glydgo_decompressStream(glyd_DCtx* d, void* dst, size_t dstSize,
                                           const void* src, size_t srcSize)
{
    glyd_outBuffer out = { dst, dstSize, 0 };
    glyd_inBuffer in = { src, srcSize, 0 };
    glydgo_step s;
    s.ret = glyd_decompressStream(d, &out, &in);
    s.inPos = in.pos;
    s.outPos = out.pos;
    return s;
}
*/
import "C"

import (
	"fmt"
	"io"
	"runtime"
)

// decodeSteps streams src through dctx into a buffer grown as needed,
// failing once the output passes max bytes.
func decodeSteps(dctx *C.glyd_DCtx, dst, src []byte, max int) ([]byte, error) {
	start := len(dst)
	out := dst
	pos := 0
	step := 64 << 10
	if len(src) < step/4 {
		step = 4*len(src) + 64
	}
	inFrame := true // src is not empty: a frame has begun
	for {
		produced := len(out) - start
		if produced > max {
			return dst, fmt.Errorf("glyd: content above the limit of %d bytes: %w", max, ErrTooLarge)
		}
		if cap(out) == len(out) {
			n := step
			if produced > n {
				n = produced // double the output at each step
			}
			if n > max+1-produced {
				n = max + 1 - produced // one byte more than allowed shows the excess
			}
			out = grow(out, n)
		}
		free := out[len(out):cap(out)]
		res := C.glydgo_decompressStream(dctx, ptr(free), C.size_t(len(free)),
			ptr(src[pos:]), C.size_t(len(src)-pos))
		if isError(res.ret) {
			return dst, toError(res.ret)
		}
		out = out[:len(out)+int(res.outPos)]
		pos += int(res.inPos)
		if res.inPos > 0 || res.outPos > 0 {
			inFrame = res.ret != 0
		}
		if pos == len(src) && int(res.outPos) < len(free) {
			// all input read, the output not full: nothing is pending
			if inFrame {
				return dst, codeError(CodeSrcSizeTruncated)
			}
			if len(out)-start > max {
				continue // reported above
			}
			return out, nil
		}
	}
}

// Reader decompresses a stream of frames read from an io.Reader:
// concatenated frames read as one stream, skippable frames are skipped,
// checksums are checked at each frame's end. A stream that ends inside a
// frame, or holds nothing at all, is an error matching ErrTruncated, not
// io.EOF. Errors are sticky. A Reader is not safe for concurrent use.
type Reader struct {
	r       io.Reader
	dctx    *C.glyd_DCtx
	in      []byte
	inPos   int
	inLen   int
	inFrame bool  // a frame has begun and not ended
	seen    bool  // the stream held at least one byte
	srcErr  error // what the source returned once its bytes are used up
	err     error
	opts    []DecoderOption
}

// NewReader returns a Reader decompressing what it reads from r, with
// opts (WithMaxDecodedSize does not apply). Close frees its context; it
// does not close r.
func NewReader(r io.Reader, opts ...DecoderOption) (*Reader, error) {
	dctx, _, err := newDCtx(opts)
	if err != nil {
		return nil, err
	}
	z := &Reader{dctx: dctx, in: make([]byte, int(C.glyd_DStreamInSize())), opts: opts}
	z.reset(r)
	runtime.SetFinalizer(z, (*Reader).free)
	return z, nil
}

func (z *Reader) reset(r io.Reader) {
	z.r = r
	z.inPos, z.inLen = 0, 0
	z.inFrame, z.seen = false, false
	z.srcErr, z.err = nil, nil
}

// Reset makes z read a new stream from r, reusing its context (or making
// a new one after Close).
func (z *Reader) Reset(r io.Reader) error {
	if z.dctx == nil {
		dctx, _, err := newDCtx(z.opts)
		if err != nil {
			return err
		}
		z.dctx = dctx
		runtime.SetFinalizer(z, (*Reader).free)
	} else {
		C.glyd_DCtx_reset(z.dctx, C.glyd_reset_session_only)
	}
	z.reset(r)
	return nil
}

// Read decompresses into p. It returns io.EOF once every frame read has
// ended with the stream; an error that matches ErrTruncated where the
// stream ends inside a frame; ErrCorrupt and the other sentinels where the
// library finds the input damaged (bytes already returned are then
// suspect, as with any stream whose checksum is checked at its end).
func (z *Reader) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	empty := 0
	for {
		res := C.glydgo_decompressStream(z.dctx, ptr(p), C.size_t(len(p)),
			ptr(z.in[z.inPos:z.inLen]), C.size_t(z.inLen-z.inPos))
		runtime.KeepAlive(z)
		if isError(res.ret) {
			z.err = toError(res.ret)
			return int(res.outPos), z.err
		}
		z.inPos += int(res.inPos)
		if res.inPos > 0 || res.outPos > 0 {
			z.inFrame = res.ret != 0
		}
		if res.outPos > 0 {
			return int(res.outPos), nil
		}
		if res.inPos > 0 {
			continue
		}
		if z.inPos < z.inLen { // input at hand, output room, no progress
			z.err = codeError(CodeGeneric)
			return 0, z.err
		}
		if z.srcErr != nil {
			switch {
			case z.srcErr != io.EOF:
				z.err = z.srcErr
			case z.inFrame || !z.seen:
				z.err = codeError(CodeSrcSizeTruncated)
			default:
				z.err = io.EOF
			}
			return 0, z.err
		}
		n, err := z.r.Read(z.in)
		z.inPos, z.inLen = 0, n
		if n > 0 {
			z.seen = true
			empty = 0
		} else if err == nil {
			if empty++; empty >= 100 {
				z.err = io.ErrNoProgress
				return 0, z.err
			}
		}
		z.srcErr = err
	}
}

// Close frees the Reader's context; later reads return ErrClosed until
// Reset. It does not close the source.
func (z *Reader) Close() error {
	z.free()
	z.err = ErrClosed
	return nil
}

func (z *Reader) free() {
	if z.dctx != nil {
		C.glyd_freeDCtx(z.dctx)
		z.dctx = nil
		runtime.SetFinalizer(z, nil)
	}
}

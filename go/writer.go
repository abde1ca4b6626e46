// SPDX-License-Identifier: BSD-3-Clause
// writer.go: streaming compression: the Writer, an io.WriteCloser that
// writes one frame to an io.Writer, with Flush for block boundaries.

package glyd

/*
#include <glyd.h>

typedef struct { size_t ret, inPos, outPos; } glydgo_cstep;

// One glyd_compressStream call over buffers given by address and size,
// the buffer structs built on the C stack (see glydgo_decompressStream).
static glydgo_cstep glydgo_compressStream(glyd_CCtx* c, void* dst, size_t dstSize,
                                          const void* src, size_t srcSize, int end)
{
    glyd_outBuffer out = { dst, dstSize, 0 };
    glyd_inBuffer in = { src, srcSize, 0 };
    glydgo_cstep s;
    s.ret = glyd_compressStream(c, &out, &in, (glyd_EndDirective)end);
    s.inPos = in.pos;
    s.outPos = out.pos;
    return s;
}
*/
import "C"

import (
	"io"
	"runtime"
)

// Writer compresses what is written to it into one frame on an underlying
// io.Writer; Close ends the frame. Errors, the library's or the
// underlying writer's, are sticky. A Writer is not safe for concurrent
// use.
type Writer struct {
	w     io.Writer
	cctx  *C.glyd_CCtx
	out   []byte
	err   error
	level int
	opts  []EncoderOption
}

// NewWriter returns a Writer compressing to w at level with opts (such as
// WithThreads). It refuses a level or an option out of bounds with an
// error matching ErrParameter.
func NewWriter(w io.Writer, level int, opts ...EncoderOption) (*Writer, error) {
	cctx, err := newCCtx(level, opts)
	if err != nil {
		return nil, err
	}
	z := &Writer{w: w, cctx: cctx, out: make([]byte, int(C.glyd_CStreamOutSize())), level: level, opts: opts}
	runtime.SetFinalizer(z, (*Writer).free)
	return z, nil
}

// step runs the library once over in with directive end and writes what
// it produced; it returns the input consumed and the library's result.
func (z *Writer) step(in []byte, end C.int) (int, C.size_t, error) {
	res := C.glydgo_compressStream(z.cctx, ptr(z.out), C.size_t(len(z.out)), ptr(in), C.size_t(len(in)), end)
	runtime.KeepAlive(z)
	if isError(res.ret) {
		return int(res.inPos), res.ret, toError(res.ret)
	}
	if res.outPos > 0 {
		n, err := z.w.Write(z.out[:res.outPos])
		if err == nil && n < int(res.outPos) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return int(res.inPos), res.ret, err
		}
	} else if res.inPos == 0 && res.ret != 0 && end == C.glyd_e_continue {
		return 0, res.ret, codeError(CodeGeneric) // no progress
	}
	return int(res.inPos), res.ret, nil
}

// Write compresses p. Output reaches the underlying writer a block at a
// time; Flush forces out what is pending.
func (z *Writer) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	n := 0
	for n < len(p) {
		used, _, err := z.step(p[n:], C.glyd_e_continue)
		n += used
		if err != nil {
			z.err = err
			return n, err
		}
	}
	return n, nil
}

// finish repeats directive end until the library has nothing left.
func (z *Writer) finish(end C.int) error {
	if z.err != nil {
		return z.err
	}
	for {
		_, r, err := z.step(nil, end)
		if err != nil {
			z.err = err
			return err
		}
		if r == 0 {
			return nil
		}
	}
}

// Flush ends the current block and writes it: every byte written so far
// can then be decompressed by a reader of the output, before the frame
// ends. It costs a little ratio; call it where a reader must not wait.
func (z *Writer) Flush() error { return z.finish(C.glyd_e_flush) }

// Close ends the frame, writes its last bytes and frees the context. It
// does not close the underlying writer. Writing after Close returns
// ErrClosed; a second Close returns nil.
func (z *Writer) Close() error {
	if z.cctx == nil {
		return nil
	}
	err := z.finish(C.glyd_e_end)
	z.free()
	if err == nil {
		z.err = ErrClosed
	}
	return err
}

// Reset discards the frame in progress and makes z write a new frame to
// w, with the same level and options (a new context after Close).
func (z *Writer) Reset(w io.Writer) error {
	if z.cctx == nil {
		cctx, err := newCCtx(z.level, z.opts)
		if err != nil {
			return err
		}
		z.cctx = cctx
		runtime.SetFinalizer(z, (*Writer).free)
	} else {
		C.glyd_CCtx_reset(z.cctx, C.glyd_reset_session_only)
	}
	z.w, z.err = w, nil
	return nil
}

func (z *Writer) free() {
	if z.cctx != nil {
		C.glyd_freeCCtx(z.cctx)
		z.cctx = nil
		runtime.SetFinalizer(z, nil)
	}
}

// SPDX-License-Identifier: BSD-3-Clause
// stream_test.go: the Writer and the Reader: chunk sizes from one byte to
// a MiB on both sides, Flush, concatenated and skippable frames, threads,
// truncated streams, errors of the underlying reader and writer, Close
// and Reset.

package glyd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// writeChunks compresses src to a new buffer in writes of chunk bytes.
func writeChunks(t *testing.T, src []byte, chunk, level int, opts ...EncoderOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, level, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(src); i += chunk {
		end := i + chunk
		if end > len(src) {
			end = len(src)
		}
		if n, err := w.Write(src[i:end]); err != nil || n != end-i {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readChunks decompresses r in reads of chunk bytes, to io.EOF.
func readChunks(t *testing.T, r io.Reader, chunk int, opts ...DecoderOption) []byte {
	t.Helper()
	z, err := NewReader(r, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var out []byte
	buf := make([]byte, chunk)
	for {
		n, err := z.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Read after %d bytes: %v", len(out), err)
		}
	}
}

func TestStreamChunks(t *testing.T) {
	src := corpusMix(t, 1536<<10)
	oneShot := mustCompress(t, src, 3)
	for _, chunk := range []int{1, 7, 4096, 1 << 20} {
		frame := writeChunks(t, src, chunk, 3)
		if got, err := Decompress(frame); err != nil || !bytes.Equal(got, src) {
			t.Fatalf("chunk %d: the Writer's frame does not decompress: %v", chunk, err)
		}
		if got := readChunks(t, bytes.NewReader(frame), chunk); !bytes.Equal(got, src) {
			t.Fatalf("chunk %d: Reader over the Writer's frame: %d bytes differ", chunk, len(got))
		}
		if got := readChunks(t, bytes.NewReader(oneShot), chunk); !bytes.Equal(got, src) {
			t.Fatalf("chunk %d: Reader over Compress's frame differs", chunk)
		}
	}
	// sources that return a byte, or half, at a time
	for name, r := range map[string]io.Reader{
		"one byte":  iotest.OneByteReader(bytes.NewReader(oneShot)),
		"half":      iotest.HalfReader(bytes.NewReader(oneShot)),
		"data+EOF":  iotest.DataErrReader(bytes.NewReader(oneShot)),
		"io.Copy":   nil,
		"levels -3": bytes.NewReader(writeChunks(t, src, 65536, -3)),
		"level 19":  bytes.NewReader(writeChunks(t, src[:256<<10], 65536, 19)),
	} {
		if r == nil {
			z, _ := NewReader(bytes.NewReader(oneShot))
			var out bytes.Buffer
			if n, err := io.Copy(&out, z); err != nil || n != int64(len(src)) || !bytes.Equal(out.Bytes(), src) {
				t.Fatalf("io.Copy: %d, %v", n, err)
			}
			z.Close()
			continue
		}
		got := readChunks(t, r, 4096)
		if name == "level 19" {
			if !bytes.Equal(got, src[:256<<10]) {
				t.Fatalf("%s: differs", name)
			}
		} else if !bytes.Equal(got, src) {
			t.Fatalf("%s: differs", name)
		}
	}
}

// What Flush has written is readable before the frame ends, and no more.
func TestFlush(t *testing.T) {
	src := corpusMix(t, 300<<10)
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 3)
	if err := w.Flush(); err != nil {
		t.Fatalf("Flush before any write: %v", err)
	}
	cuts := []int{1, 1000, 1001, 70000, 200000, len(src)}
	prev := 0
	for _, cut := range cuts {
		w.Write(src[prev:cut])
		prev = cut
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		z, _ := NewReader(bytes.NewReader(buf.Bytes()))
		got := make([]byte, cut+10)
		n, err := io.ReadFull(z, got)
		if n != cut || !bytes.Equal(got[:n], src[:cut]) {
			t.Fatalf("after Flush at %d: read %d bytes (%v)", cut, n, err)
		}
		// the frame has not ended: the stream is truncated, not finished
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("after Flush at %d: %v, want ErrTruncated", cut, err)
		}
		z.Close()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := Decompress(buf.Bytes()); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("the flushed frame: %v", err)
	}
}

// skippable returns a skippable frame (variant 3) holding data.
func skippable(data []byte) []byte {
	f := make([]byte, 8, 8+len(data))
	binary.LittleEndian.PutUint32(f, 0x184D2A53)
	binary.LittleEndian.PutUint32(f[4:], uint32(len(data)))
	return append(f, data...)
}

func TestConcatenated(t *testing.T) {
	src := corpusMix(t, 400<<10)
	a, b := src[:150<<10], src[150<<10:]
	var stream []byte
	stream = append(stream, mustCompress(t, a, 1)...)
	stream = append(stream, skippable([]byte("user data between frames"))...)
	stream = append(stream, mustCompress(t, nil, 3)...)
	stream = append(stream, writeChunks(t, b, 10000, 5)...)
	stream = append(stream, skippable(nil)...)
	if got, err := Decompress(stream); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("Decompress: %v", err)
	}
	for _, chunk := range []int{1, 4096} {
		if got := readChunks(t, iotest.HalfReader(bytes.NewReader(stream)), chunk); !bytes.Equal(got, src) {
			t.Fatalf("Reader, chunk %d: differs", chunk)
		}
	}
	// one Writer, Reset between frames
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 3)
	w.Write(a)
	w.Close()
	if err := w.Reset(&buf); err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	w.Close()
	if got, err := Decompress(buf.Bytes()); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("Writer reset between frames: %v", err)
	}
}

func TestStreamThreads(t *testing.T) {
	src := corpusMix(t, 6<<20)
	frame := writeChunks(t, src, 1<<20, 3, WithThreads(2))
	if got, err := Decompress(frame); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("threaded Writer: %v", err)
	}
	if got := readChunks(t, bytes.NewReader(frame), 100000, WithDecoderThreads(2)); !bytes.Equal(got, src) {
		t.Fatal("Reader with threads: differs")
	}
	// a flush mid-stream with threads: the partial segment stands alone
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 1, WithThreads(2))
	w.Write(src[:3<<20])
	w.Flush()
	w.Write(src[3<<20:])
	w.Close()
	if got, err := Decompress(buf.Bytes()); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("threaded Writer with a flush: %v", err)
	}
}

func TestReaderEnds(t *testing.T) {
	frame := writeChunks(t, corpusMix(t, 20000), 3000, 3)
	// every truncation is an error, never a clean end
	for cut := 0; cut < len(frame); cut++ {
		z, _ := NewReader(bytes.NewReader(frame[:cut]))
		_, err := io.ReadAll(z)
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d of %d: %v, want ErrTruncated", cut, len(frame), err)
		}
		// errors are sticky
		if _, again := z.Read(make([]byte, 10)); again != err {
			t.Fatalf("cut at %d: a second Read gave %v", cut, again)
		}
		z.Close()
	}
	// the source's own error comes through
	boom := errors.New("boom")
	z, _ := NewReader(io.MultiReader(bytes.NewReader(frame[:100]), iotest.ErrReader(boom)))
	if _, err := io.ReadAll(z); err != boom {
		t.Fatalf("source error: %v", err)
	}
	// an empty stream
	z.Reset(bytes.NewReader(nil))
	if _, err := io.ReadAll(z); !errors.Is(err, ErrTruncated) {
		t.Fatalf("empty stream: %v", err)
	}
	// Close, then Reset
	z.Close()
	if _, err := z.Read(make([]byte, 1)); err != ErrClosed {
		t.Fatalf("Read after Close: %v", err)
	}
	z.Reset(bytes.NewReader(frame))
	if got, err := io.ReadAll(z); err != nil || len(got) != 20000 {
		t.Fatalf("after Reset: %d, %v", len(got), err)
	}
	z.Close()
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after < len(p) {
		return 0, errors.New("disk full")
	}
	f.after -= len(p)
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	src := corpusMix(t, 1<<20)
	w, _ := NewWriter(&failWriter{after: 1000}, 3)
	_, err := w.Write(src)
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("Write to a failing writer: %v", err)
	}
	if _, again := w.Write(src); again != err {
		t.Fatalf("errors are not sticky: %v", again)
	}
	if cerr := w.Close(); cerr != err {
		t.Fatalf("Close: %v", cerr)
	}
	// after Close
	var buf bytes.Buffer
	w, _ = NewWriter(&buf, 3)
	w.Write([]byte("hello"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); err != ErrClosed {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Flush(); err != ErrClosed {
		t.Fatalf("Flush after Close: %v", err)
	}
	// an empty frame
	buf.Reset()
	w.Reset(&buf)
	w.Close()
	if got := readChunks(t, &buf, 10); len(got) != 0 {
		t.Fatalf("empty frame read back as %d bytes", len(got))
	}
}

// SPDX-License-Identifier: BSD-3-Clause
// bench_test.go: Compress and Decompress at levels 1, 3 and 19, the same
// with reused contexts (Encoder, Decoder), and the Writer and Reader at
// level 3, on 1 MiB of corpus data (docs/GO.md sets them beside the C
// library's own speed on the same bytes).

package glyd

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

var benchLevels = []int{1, 3, 19}

func BenchmarkCompress(b *testing.B) {
	src := corpusMix(b, 1<<20)
	for _, level := range benchLevels {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			dst := make([]byte, 0, CompressBound(len(src)))
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := CompressAppend(dst[:0], src, level); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecompress(b *testing.B) {
	src := corpusMix(b, 1<<20)
	for _, level := range benchLevels {
		frame, err := Compress(src, level)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			dst := make([]byte, 0, len(src))
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := DecompressAppend(dst[:0], frame); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(src))/float64(len(frame)), "ratio")
		})
	}
}

func BenchmarkEncoder(b *testing.B) {
	src := corpusMix(b, 1<<20)
	for _, level := range benchLevels {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			enc, err := NewEncoder(level)
			if err != nil {
				b.Fatal(err)
			}
			defer enc.Close()
			dst := make([]byte, 0, CompressBound(len(src)))
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := enc.CompressAppend(dst[:0], src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecoder(b *testing.B) {
	src := corpusMix(b, 1<<20)
	dec, _ := NewDecoder()
	defer dec.Close()
	for _, level := range benchLevels {
		frame, err := Compress(src, level)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			dst := make([]byte, 0, len(src))
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := dec.DecompressAppend(dst[:0], frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	src := corpusMix(b, 1<<20)
	w, _ := NewWriter(io.Discard, 3)
	defer w.Close()
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Reset(io.Discard)
		w.Write(src)
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReader(b *testing.B) {
	src := corpusMix(b, 1<<20)
	frame, _ := Compress(src, 3)
	z, _ := NewReader(bytes.NewReader(frame))
	defer z.Close()
	buf := make([]byte, 128<<10)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		z.Reset(bytes.NewReader(frame))
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{z}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// SPDX-License-Identifier: BSD-3-Clause
// hostile_test.go: damaged and hostile input through every decoding path
// (Decompress, the stepping path, a Decoder, the Reader): random bytes,
// every truncation of a small frame, every byte of it flipped. Each must
// give an error, or at worst the original content, never a panic, a crash
// or different bytes without an error.

package glyd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"testing"
)

// decodeAll runs src through each decoding path; it fails the test where a
// path returns bytes other than want without an error, and returns how
// many paths reported an error.
func decodeAll(t *testing.T, what string, src, want []byte) int {
	t.Helper()
	errs := 0
	check := func(path string, got []byte, err error) {
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s, %s: an error that is not an *Error: %v", what, path, err)
			}
			errs++
			return
		}
		if want == nil || !bytes.Equal(got, want) {
			t.Fatalf("%s, %s: %d bytes decoded without an error", what, path, len(got))
		}
	}
	got, err := Decompress(src)
	check("Decompress", got, err)
	saved := trustSize
	trustSize = 0
	dec, _ := NewDecoder(WithMaxDecodedSize(1 << 22))
	got, err = dec.Decompress(src)
	dec.Close()
	trustSize = saved
	check("stepping Decoder", got, err)
	z, _ := NewReader(bytes.NewReader(src))
	got, err = io.ReadAll(z)
	z.Close()
	check("Reader", got, err)
	return errs
}

func smallFrame(t *testing.T) ([]byte, []byte) {
	src := corpusMix(t, 3000)
	return src, mustCompress(t, src, 3)
}

func TestRandomInput(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	_, frame := smallFrame(t)
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	for i := 0; i < rounds; i++ {
		junk := make([]byte, rng.Intn(3000))
		rng.Read(junk)
		// a third start as a glyd frame would, to reach past the magic;
		// a third keep a real header and the first bytes of a block
		switch i % 3 {
		case 1:
			copy(junk, frame[:4])
		case 2:
			copy(junk, frame[:len(frame)/4])
		}
		if n := decodeAll(t, "random input", junk, nil); n != 3 {
			t.Fatalf("random input %d: only %d of 3 paths refused it", i, n)
		}
	}
}

func TestEveryTruncation(t *testing.T) {
	_, frame := smallFrame(t)
	for cut := 0; cut < len(frame); cut++ {
		if n := decodeAll(t, "truncated frame", frame[:cut], nil); n != 3 {
			t.Fatalf("cut at %d: only %d of 3 paths refused it", cut, n)
		}
		if _, err := Decompress(frame[:cut]); !errors.Is(err, ErrTruncated) && cut > 32 {
			t.Fatalf("cut at %d: %v, want ErrTruncated", cut, err)
		}
	}
}

func TestFlippedBytes(t *testing.T) {
	src, frame := smallFrame(t)
	refused := 0
	for i := range frame {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			bad := append([]byte(nil), frame...)
			bad[i] ^= mask
			refused += decodeAll(t, "flipped byte", bad, src)
		}
	}
	// a flip may leave the frame valid (a larger window, say), but most
	// must be caught
	if total := 9 * len(frame); refused < total*9/10 {
		t.Fatalf("only %d of %d damaged frames refused", refused, total)
	}
}

// A frame that declares more than the bound is refused before decoding.
func TestDeclaredSizeRefused(t *testing.T) {
	frame := mustCompress(t, make([]byte, 5<<20), 1)
	dec, _ := NewDecoder(WithMaxDecodedSize(1 << 20))
	defer dec.Close()
	if _, err := dec.Decompress(frame); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%v, want ErrTooLarge", err)
	}
	// and a skippable frame claiming 4 GiB, in a 20-byte input
	claim := make([]byte, 20)
	binary.LittleEndian.PutUint32(claim, 0x184D2A50)
	binary.LittleEndian.PutUint32(claim[4:], 0xFFFFFFFF)
	if n := decodeAll(t, "a lying skippable frame", claim, nil); n != 3 {
		t.Fatalf("a lying skippable frame: only %d of 3 paths refused it", n)
	}
}

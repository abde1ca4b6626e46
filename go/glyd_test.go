// SPDX-License-Identifier: BSD-3-Clause
// glyd_test.go: one-shot compression and decompression: every file of the
// shared corpus at several levels, empty input, appending forms, the
// reusable Encoder and Decoder, dictionaries, size limits, errors.

package glyd

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusDir returns the shared corpus ($GLYD_CORPUS, else ../../shared/corpus
// from this module, beside the checkout), skipping the test without it.
func corpusDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("GLYD_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "corpus")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("no corpus at %s", dir)
	}
	return dir
}

// corpusFiles lists the corpus's files, sorted, its README left out.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	dir := corpusDir(t)
	var files []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() && info.Name() != "README.md" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Skipf("no files in %s", dir)
	}
	return files
}

// corpusMix returns n bytes made of the first 64 KiB of each corpus file
// in turn (sorted by path), as docs/GO.md's shell line does.
func corpusMix(t testing.TB, n int) []byte {
	t.Helper()
	var mix []byte
	for len(mix) < n {
		before := len(mix)
		for _, f := range corpusFiles(t) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > 64<<10 {
				data = data[:64<<10]
			}
			mix = append(mix, data...)
		}
		if len(mix) == before {
			t.Skip("the corpus is empty")
		}
	}
	return mix[:n]
}

func mustCompress(t testing.TB, src []byte, level int) []byte {
	t.Helper()
	c, err := Compress(src, level)
	if err != nil {
		t.Fatalf("Compress(%d bytes, level %d): %v", len(src), level, err)
	}
	return c
}

func checkRoundTrip(t *testing.T, src []byte, level int) {
	t.Helper()
	c := mustCompress(t, src, level)
	if len(c) > CompressBound(len(src)) {
		t.Fatalf("frame of %d bytes above CompressBound %d", len(c), CompressBound(len(src)))
	}
	d, err := Decompress(c)
	if err != nil {
		t.Fatalf("Decompress: %v", err)
	}
	if !bytes.Equal(d, src) {
		t.Fatalf("level %d: %d bytes came back as %d different bytes", level, len(src), len(d))
	}
}

// Every file at the fast, default and -1 levels; at level 19 (about 1 MB/s)
// a prefix of each.
func TestRoundTripCorpus(t *testing.T) {
	for _, f := range corpusFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(filepath.ToSlash(f), filepath.ToSlash(corpusDir(t))+"/")
		t.Run(name, func(t *testing.T) {
			for _, level := range []int{-5, 1, 3} {
				checkRoundTrip(t, data, level)
			}
			prefix := data
			if n := 128 << 10; len(prefix) > n {
				prefix = prefix[:n]
			}
			checkRoundTrip(t, prefix, 19)
		})
	}
}

func TestLevels(t *testing.T) {
	src := corpusMix(t, 200<<10)
	sizes := map[int]int{}
	for _, level := range []int{MinLevel, -1, 0, 1, 3, 9, 19, MaxLevel} {
		c := mustCompress(t, src, level)
		sizes[level] = len(c)
		d, err := Decompress(c)
		if err != nil || !bytes.Equal(d, src) {
			t.Fatalf("level %d: round trip failed: %v", level, err)
		}
	}
	if sizes[19] >= sizes[1] || sizes[1] >= sizes[-1] {
		t.Errorf("sizes do not shrink with the level: %v", sizes)
	}
	if sizes[0] != sizes[DefaultLevel] {
		t.Errorf("level 0 gave %d bytes, the default level %d", sizes[0], sizes[DefaultLevel])
	}
	for _, level := range []int{MinLevel - 1, MaxLevel + 1} {
		if _, err := Compress(src, level); !errors.Is(err, ErrParameter) {
			t.Errorf("level %d: got %v, want ErrParameter", level, err)
		}
		if _, err := NewWriter(&bytes.Buffer{}, level); !errors.Is(err, ErrParameter) {
			t.Errorf("NewWriter at level %d: got %v, want ErrParameter", level, err)
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, src := range [][]byte{nil, {}} {
		c := mustCompress(t, src, 3)
		if len(c) == 0 {
			t.Fatal("an empty input gave no frame")
		}
		d, err := Decompress(c)
		if err != nil || len(d) != 0 {
			t.Fatalf("empty frame: %q, %v", d, err)
		}
	}
	_, err := Decompress(nil)
	var e *Error
	if !errors.Is(err, ErrTruncated) || !errors.As(err, &e) || e.Code != CodeSrcSizeTruncated {
		t.Fatalf("Decompress(nil): %v, want a truncation *Error", err)
	}
}

func TestAppend(t *testing.T) {
	src := corpusMix(t, 100<<10)
	prefix := []byte("prefix:")
	c, err := CompressAppend(append([]byte(nil), prefix...), src, 3)
	if err != nil || !bytes.HasPrefix(c, prefix) {
		t.Fatalf("CompressAppend: %v", err)
	}
	d, err := DecompressAppend(append(make([]byte, 0, 1<<20), prefix...), c[len(prefix):])
	if err != nil || !bytes.Equal(d, append(append([]byte(nil), prefix...), src...)) {
		t.Fatalf("DecompressAppend: %v", err)
	}
	// on error, dst comes back as it was
	bad := append([]byte(nil), c[len(prefix):]...)
	bad[len(bad)/2] ^= 0x55
	d, err = DecompressAppend(prefix, bad)
	if err == nil || !bytes.Equal(d, prefix) {
		t.Fatalf("damaged frame: %v, dst %q", err, d)
	}
}

func TestEncoderDecoder(t *testing.T) {
	src := corpusMix(t, 1<<20)
	enc, err := NewEncoder(3)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	// many small messages through the same contexts
	for i := 0; i+5000 <= len(src); i += 50000 {
		msg := src[i : i+5000]
		c, err := enc.Compress(msg)
		if err != nil {
			t.Fatal(err)
		}
		d, err := dec.Decompress(c)
		if err != nil || !bytes.Equal(d, msg) {
			t.Fatalf("message at %d: %v", i, err)
		}
	}
	enc.Close()
	dec.Close()
	if _, err := enc.Compress(src); err != ErrClosed {
		t.Errorf("Compress after Close: %v", err)
	}
	if _, err := dec.Decompress(src); err != ErrClosed {
		t.Errorf("Decompress after Close: %v", err)
	}
	if err := enc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestEncoderOptions(t *testing.T) {
	src := corpusMix(t, 1<<20)
	for _, opts := range [][]EncoderOption{
		{WithChecksum(false)},
		{WithWindowLog(16)},
		{WithLongMatching(true)},
		{WithThreads(2)},
	} {
		enc, err := NewEncoder(3, opts...)
		if err != nil {
			t.Fatal(err)
		}
		c, err := enc.Compress(src)
		enc.Close()
		if err != nil {
			t.Fatal(err)
		}
		dec, err := NewDecoder(WithDecoderThreads(2))
		if err != nil {
			t.Fatal(err)
		}
		d, err := dec.Decompress(c)
		dec.Close()
		if err != nil || !bytes.Equal(d, src) {
			t.Fatalf("round trip: %v", err)
		}
	}
	for _, opt := range []EncoderOption{WithWindowLog(40), WithThreads(100000)} {
		if _, err := NewEncoder(3, opt); !errors.Is(err, ErrParameter) {
			t.Errorf("option out of bound: %v", err)
		}
	}
	if _, err := NewDecoder(WithMaxWindowLog(5)); !errors.Is(err, ErrParameter) {
		t.Errorf("window log 5: %v", err)
	}
}

func TestWindowLimit(t *testing.T) {
	src := corpusMix(t, 1<<20)
	enc, _ := NewEncoder(3, WithWindowLog(20))
	defer enc.Close()
	c, err := enc.Compress(src)
	if err != nil {
		t.Fatal(err)
	}
	z, _ := NewReader(bytes.NewReader(c), WithMaxWindowLog(16))
	defer z.Close()
	if _, err := io.ReadAll(z); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a window above the limit: %v, want ErrTooLarge", err)
	}
}

func TestDictionary(t *testing.T) {
	files := corpusFiles(t)
	var logs []byte
	for _, f := range files {
		if strings.Contains(f, "logs") {
			data, _ := os.ReadFile(f)
			logs = append(logs, data...)
		}
	}
	if len(logs) < 100000 {
		t.Skip("no logs in the corpus")
	}
	dict := logs[:64<<10]
	msg := logs[len(logs)-3000:]
	enc, err := NewEncoder(3, WithEncoderDictionary(dict))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	c, err := enc.Compress(msg)
	if err != nil {
		t.Fatal(err)
	}
	if plain := mustCompress(t, msg, 3); len(c) >= len(plain) {
		t.Errorf("the dictionary did not help: %d bytes, %d without", len(c), len(plain))
	}
	dec, _ := NewDecoder(WithDecoderDictionary(dict))
	defer dec.Close()
	if d, err := dec.Decompress(c); err != nil || !bytes.Equal(d, msg) {
		t.Fatalf("with the dictionary: %v", err)
	}
	// raw-content dictionaries carry no ID: without it the content differs
	// and the checksum says so
	if _, err := Decompress(c); err == nil {
		t.Fatal("decoded without its dictionary")
	}
}

// Declared sizes above the bound are refused before anything is
// allocated; sizes not trusted are decoded in steps, within the bound.
func TestSizeLimits(t *testing.T) {
	zeros := make([]byte, 3<<20)
	c := mustCompress(t, zeros, 3)
	small, _ := NewDecoder(WithMaxDecodedSize(1 << 20))
	defer small.Close()
	if _, err := small.Decompress(c); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("3 MiB with a 1 MiB bound: %v", err)
	}
	exact, _ := NewDecoder(WithMaxDecodedSize(len(zeros)))
	defer exact.Close()
	if d, err := exact.Decompress(c); err != nil || !bytes.Equal(d, zeros) {
		t.Fatalf("3 MiB with a 3 MiB bound: %v", err)
	}

	// the stepping path: no declared size (a stream), or one not trusted
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 3)
	w.Write(zeros)
	w.Close()
	saved := trustSize
	trustSize = 0
	defer func() { trustSize = saved }()
	for _, frame := range [][]byte{buf.Bytes(), c} {
		if _, err := small.Decompress(frame); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("stepping, 3 MiB with a 1 MiB bound: %v", err)
		}
		if d, err := exact.Decompress(frame); err != nil || !bytes.Equal(d, zeros) {
			t.Fatalf("stepping, 3 MiB with a 3 MiB bound: %v", err)
		}
		if d, err := Decompress(frame); err != nil || !bytes.Equal(d, zeros) {
			t.Fatalf("stepping: %v", err)
		}
	}
}

func TestErrorValues(t *testing.T) {
	c := mustCompress(t, corpusMix(t, 50000), 3)
	bad := append([]byte(nil), c...)
	bad[len(bad)-1] ^= 1 // the checksum's last byte
	_, err := Decompress(bad)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeChecksumWrong {
		t.Fatalf("checksum damage: %v", err)
	}
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrChecksum) || errors.Is(err, ErrTruncated) {
		t.Errorf("checksum error matches the wrong sentinels: %v", err)
	}
	if !errors.Is(err, &Error{Code: CodeChecksumWrong}) {
		t.Error("an *Error does not match another of the same code")
	}
	if e.Error() != "glyd: "+CodeChecksumWrong.String() || e.Message == "" {
		t.Errorf("message %q", e.Error())
	}
	_, err = Decompress([]byte("not a glyd frame at all"))
	if !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("plain text: %v", err)
	}
	if !strings.HasPrefix(Version(), "0.") {
		t.Errorf("Version() = %q", Version())
	}
}

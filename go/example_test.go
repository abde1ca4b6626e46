// SPDX-License-Identifier: BSD-3-Clause
// example_test.go: the package's examples, which `go test` runs and
// checks against their Output comments.

package glyd_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"glyd.dev/glyd"
)

func ExampleCompress() {
	src := []byte(strings.Repeat("Glyd compresses repeated text well. ", 100))
	frame, err := glyd.Compress(src, glyd.DefaultLevel)
	if err != nil {
		log.Fatal(err)
	}
	back, err := glyd.Decompress(frame)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(src), len(frame) < 100, bytes.Equal(back, src))
	// Output: 3600 true true
}

func ExampleNewWriter() {
	var buf bytes.Buffer
	w, err := glyd.NewWriter(&buf, 3)
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if err := w.Close(); err != nil { // ends the frame
		log.Fatal(err)
	}

	r, err := glyd.NewReader(&buf)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if _, err := io.Copy(os.Stdout, r); err != nil {
		log.Fatal(err)
	}
	// Output:
	// line 0
	// line 1
	// line 2
}

func ExampleWriter_Flush() {
	var buf bytes.Buffer
	w, _ := glyd.NewWriter(&buf, 3)
	w.Write([]byte("first message"))
	w.Flush() // what was written is now decodable from buf

	r, _ := glyd.NewReader(bytes.NewReader(buf.Bytes()))
	got := make([]byte, 13)
	io.ReadFull(r, got)
	fmt.Printf("%s\n", got)
	w.Close()
	// Output: first message
}

func ExampleError() {
	frame, _ := glyd.Compress([]byte("some content worth keeping intact"), 3)
	frame[len(frame)-1] ^= 1 // damage the checksum

	_, err := glyd.Decompress(frame)
	var e *glyd.Error
	fmt.Println(errors.Is(err, glyd.ErrCorrupt), errors.As(err, &e) && e.Code == glyd.CodeChecksumWrong)
	fmt.Println(err)

	_, err = glyd.Decompress(frame[:10])
	fmt.Println(errors.Is(err, glyd.ErrTruncated))
	// Output:
	// true true
	// glyd: Restored data doesn't match checksum
	// true
}

func ExampleEncoder() {
	enc, _ := glyd.NewEncoder(1, glyd.WithThreads(2))
	defer enc.Close()
	dec, _ := glyd.NewDecoder(glyd.WithMaxDecodedSize(1 << 20))
	defer dec.Close()

	var frames [][]byte
	for _, msg := range []string{"one", "two", "three"} {
		f, err := enc.Compress([]byte(msg))
		if err != nil {
			log.Fatal(err)
		}
		frames = append(frames, f)
	}
	for _, f := range frames {
		msg, err := dec.Decompress(f)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(msg))
	}
	// Output:
	// one
	// two
	// three
}

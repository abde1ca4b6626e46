// SPDX-License-Identifier: BSD-3-Clause
// cli_test.go: interoperation with the glyd command ($GLYD_CLI, else
// ../build/glyd): it decompresses what this package writes, and this
// package reads what it writes, at several levels and with threads.

package glyd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func cliPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("GLYD_CLI")
	if p == "" {
		p = filepath.Join("..", "build", "glyd")
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no glyd command at %s (run make)", p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// cli runs the glyd command with args, stdin in, and returns its output.
func cli(t *testing.T, in []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(cliPath(t), args...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("glyd %v: %v: %s", args, err, errb.String())
	}
	return out.Bytes()
}

func TestCLIReadsGo(t *testing.T) {
	cliPath(t)
	src := corpusMix(t, 1<<20)
	frames := map[string][]byte{
		"Compress -1":      mustCompress(t, src, 1),
		"Compress --fast":  mustCompress(t, src, -4),
		"Writer 3":         writeChunks(t, src, 7777, 3),
		"Writer threads":   writeChunks(t, src, 1<<20, 3, WithThreads(2)),
		"Compress 19":      mustCompress(t, src[:100<<10], 19),
		"two frames+flush": nil,
	}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 3)
	w.Write(src[:500000])
	w.Flush()
	w.Write(src[500000:])
	w.Close()
	buf.Write(mustCompress(t, src, 1))
	frames["two frames+flush"] = buf.Bytes()
	for name, frame := range frames {
		want := src
		switch name {
		case "Compress 19":
			want = src[:100<<10]
		case "two frames+flush":
			want = append(append([]byte(nil), src...), src...)
		}
		if got := cli(t, frame, "-d", "-c", "-q"); !bytes.Equal(got, want) {
			t.Fatalf("%s: glyd -d gave %d bytes, want %d", name, len(got), len(want))
		}
	}
}

func TestGoReadsCLI(t *testing.T) {
	cliPath(t)
	src := corpusMix(t, 1<<20)
	for _, args := range [][]string{{"-1"}, {"-3"}, {"-19"}, {"--fast=3"}, {"-3", "-T2"}, {"--long"}} {
		in := src
		if args[0] == "-19" {
			in = src[:100<<10]
		}
		frame := cli(t, in, append(args, "-c", "-q")...)
		if got, err := Decompress(frame); err != nil || !bytes.Equal(got, in) {
			t.Fatalf("glyd %v, then Decompress: %v", args, err)
		}
		if got := readChunks(t, bytes.NewReader(frame), 5000); !bytes.Equal(got, in) {
			t.Fatalf("glyd %v, then the Reader: differs", args)
		}
	}
	// the CLI's streamed output (no size in the header) from a pipe
	frame := cli(t, src, "-c", "-q", "-")
	if got, err := Decompress(frame); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("glyd from a pipe, then Decompress: %v", err)
	}
}

package main

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkNewRoot: the command tree of a command line (every verb) and
// of an exec served on the exec socket (exec alone), which serve builds
// for every exec.
func BenchmarkNewRoot(b *testing.B) {
	for _, c := range []struct {
		name   string
		served *servedExec
	}{{"all", nil}, {"served-exec", &servedExec{}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newRoot(&globals{stdin: bytes.NewReader(nil), stdout: io.Discard, stderr: io.Discard, served: c.served})
			}
		})
	}
}

package main

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkNewRoot: the command tree of a command line that names no
// verb (every verb), of one that names a verb (that verb alone: version,
// audit, serve) and of an exec served on the exec socket (exec alone),
// which serve builds for every exec.
func BenchmarkNewRoot(b *testing.B) {
	for _, c := range []struct {
		name   string
		args   []string
		served *servedExec
	}{{"all", nil, nil}, {"version", []string{"version"}, nil}, {"audit", []string{"audit", "s"}, nil},
		{"serve", []string{"serve"}, nil}, {"served-exec", nil, &servedExec{}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newRootFor(&globals{stdin: bytes.NewReader(nil), stdout: io.Discard, stderr: io.Discard, served: c.served}, c.args)
			}
		})
	}
}

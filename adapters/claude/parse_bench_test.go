package claude

import (
	"testing"
)

// BenchmarkParseLine parses the lines of one generated bench transcript
// (benchLine: a prompt, thinking, a tool call and its result, a reply and
// a turn's duration, in turn) with one Parser, as an import does. Run:
//
//	go test -run '^$' -bench ParseLine -benchmem ./adapters/claude/
func BenchmarkParseLine(b *testing.B) {
	const sid = "5e551011-0000-4000-8000-000000000001"
	lines := make([][]byte, 0, 61)
	size := 0
	for n := 1; n <= 61; n++ {
		l := benchLine(sid, n)
		lines = append(lines, l)
		size += len(l)
	}
	p, err := NewParser(Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size / len(lines)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		n := i%len(lines) + 1
		if _, err := p.Line("bench.jsonl", n, lines[n-1]); err != nil {
			b.Fatal(err)
		}
	}
}

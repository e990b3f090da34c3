package claude

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseLine parses transcript lines with one Parser, as an
// import does: "bench", the lines of the generated bench transcript
// (benchLine: a prompt, thinking, a tool call and its result, a reply and
// a turn's duration, in turn); "large", a tool result of 48 KiB of source
// text (newlines, tabs and quotes escaped) with its toolUseResult, as a
// file read gives. Run:
//
//	go test -run '^$' -bench ParseLine -benchmem ./adapters/claude/
func BenchmarkParseLine(b *testing.B) {
	const sid = "5e551011-0000-4000-8000-000000000001"
	var bench [][]byte
	for n := 1; n <= 61; n++ {
		bench = append(bench, benchLine(sid, n))
	}
	var src strings.Builder
	for i := 0; src.Len() < 48<<10; i++ {
		fmt.Fprintf(&src, "func f%d(x int) string {\n\treturn fmt.Sprintf(\"%%d\", x+%d)\n}\n\n", i, i)
	}
	content, _ := json.Marshal(src.String())
	large := fmt.Appendf(nil, `{"type":"user","uuid":"u1","sessionId":%q,"message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]},"toolUseResult":{"type":"text","file":{"filePath":"/src/f.go","content":%s,"numLines":3000}}}`, sid, content, content)
	for _, c := range []struct {
		name  string
		lines [][]byte
	}{{"bench", bench}, {"large", [][]byte{large}}} {
		b.Run(c.name, func(b *testing.B) {
			p, err := NewParser(Config{})
			if err != nil {
				b.Fatal(err)
			}
			size := 0
			for _, l := range c.lines {
				size += len(l)
			}
			b.SetBytes(int64(size / len(c.lines)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				n := i%len(c.lines) + 1
				if _, err := p.Line("bench.jsonl", n, c.lines[n-1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

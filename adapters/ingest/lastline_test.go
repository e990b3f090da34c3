package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLastLine: the last complete line of a file is found from its end,
// whatever comes after it (a torn line) and however long it is (past the
// chunk read at once); a file with no complete line has none.
func TestLastLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	for _, c := range []struct{ in, want string }{
		{"a\nb\n", "b"},
		{"a\nb\ntorn", "b"},
		{"only\n", "only"},
		{"\n", ""},
		{"a\n" + long + "\n", long},
		{long + "\n" + long[:100], long},
		{"no newline", "<none>"},
	} {
		path := filepath.Join(t.TempDir(), "t.jsonl")
		if err := os.WriteFile(path, []byte(c.in), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		b, ok := lastLine(f, int64(len(c.in)))
		f.Close()
		got := string(b)
		if !ok {
			got = "<none>"
		}
		if got != c.want {
			t.Errorf("lastLine(%.20q…) = %.20q…, want %.20q…", c.in, got, c.want)
		}
	}
}

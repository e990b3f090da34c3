package ingest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
)

// writeFile writes content to path, making its directory.

func TestReadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	ingesttest.WriteFile(t, path, "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n{\"d\":")
	want := []Line{
		{N: 1, Offset: 0, End: 8, Bytes: []byte(`{"a":1}`), Size: 7},
		{N: 2, Offset: 8, End: 17, Bytes: []byte(`{"b":2}`), Size: 7},
		{N: 3, Offset: 17, End: 18, Bytes: []byte{}, Size: 0},
		{N: 4, Offset: 18, End: 26, Bytes: []byte(`{"c":3}`), Size: 7},
		{N: 5, Offset: 26, Torn: true, Size: 5},
	}
	lines, errs := ingesttest.Collect(ReadLines(path, 0))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}

	t.Run("from", func(t *testing.T) {
		lines, _ := ingesttest.Collect(ReadLines(path, 3))
		if diff := cmp.Diff(want[3:], lines); diff != "" {
			t.Errorf("lines after 3 (-want +got):\n%s", diff)
		}
		lines, _ = ingesttest.Collect(ReadLines(path, 9))
		if len(lines) != 0 {
			t.Errorf("lines after 9: %v", lines)
		}
	})
	t.Run("resume from a cursor", func(t *testing.T) {
		lines, errs := ingesttest.Collect(ReadFrom(path, Cursor{Line: 2, Offset: 17}))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if diff := cmp.Diff(want[2:], lines); diff != "" {
			t.Errorf("lines (-want +got):\n%s", diff)
		}
	})
	t.Run("cursor not at a line start", func(t *testing.T) {
		for _, c := range []Cursor{{Line: 1, Offset: 5}, {Line: 9, Offset: 900}} {
			lines, errs := ingesttest.Collect(ReadFrom(path, c))
			if len(lines) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), path) {
				t.Errorf("ReadFrom(%+v) = %v, %v; want one error naming the file", c, lines, errs)
			}
		}
	})
	t.Run("torn line completed later", func(t *testing.T) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("4}\n")
		f.Close()
		lines, _ := ingesttest.Collect(ReadFrom(path, Cursor{Line: 4, Offset: 26}))
		if len(lines) != 1 || string(lines[0].Bytes) != `{"d":4}` || lines[0].Torn || lines[0].N != 5 {
			t.Errorf("lines %+v", lines)
		}
	})
	t.Run("stop early", func(t *testing.T) {
		n := 0
		for range ReadLines(path, 0) {
			n++
			break
		}
		if n != 1 {
			t.Errorf("iterated %d times after break", n)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, errs := ingesttest.Collect(ReadLines(filepath.Join(t.TempDir(), "none.jsonl"), 0))
		if len(errs) != 1 || !errors.Is(errs[0], fs.ErrNotExist) || !strings.Contains(errs[0].Error(), "none.jsonl") {
			t.Errorf("errors %v", errs)
		}
	})
}

// TestReadLines_Long reads lines far longer than bufio's default buffer
// and reports, then skips, a line over the limit.
func TestReadLines_Long(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	big := `{"t":"` + strings.Repeat("x", 2<<20) + `"}`
	ingesttest.WriteFile(t, path, big+"\n{}\n")
	lines, errs := ingesttest.Collect(ReadLines(path, 0))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(lines) != 2 || string(lines[0].Bytes) != big || lines[0].End != int64(len(big)+1) || string(lines[1].Bytes) != "{}" {
		t.Fatalf("got %d lines", len(lines))
	}

	// Over the limit: an error for that line, then the next line.
	lines, errs = ingesttest.Collect(readLines(t.Context(), path, Cursor{}, 0, 256<<10, 0))
	le, ok := errors.AsType[*LineError](errs[0])
	if len(errs) != 1 || !ok || !errors.Is(le, ErrLineTooLong) || le.Line != 1 {
		t.Fatalf("errors %v", errs)
	}
	if len(lines) != 1 || lines[0].N != 2 || string(lines[0].Bytes) != "{}" {
		t.Errorf("lines after the long one: %+v", lines)
	}
}

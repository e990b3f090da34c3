package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/logbook-dev/logbook/adapters/flagrange"
)

// unbounded are the numeric flags that name a position, not a count or
// a size, or whose count costs nothing to honour: each with why.
var unbounded = map[string]string{
	"logbook events tail --lines":    "the last N events are read as a stream, one at a time: any N up to the log's length costs what printing them does",
	"logbook events tail --from":     "a stream sequence: past the log's end it is a usage error naming the last, unless --follow waits for it",
	"logbook replay --seq":           "a stream sequence, checked against the log (replay.CheckSeq)",
	"logbook verify --seq":           "a stream sequence, checked against the log (replay.CheckSeq): past its end a usage error",
	"logbook command output --after": "a byte offset into the command's output, read page by page from there",
}

// TestFlagRanges walks every command's flags: each count or size flag
// (a whole number or a list of them) has a range, said in its help, or
// is listed in unbounded with why; a duration flag with a range says it
// in its help; a value just past either end of a range (for a duration,
// 1ns and a negative one too) is a usage error (exit 2) naming the flag, the value and the
// range, before anything runs (the context is cancelled, the data dir
// is new and must stay absent).
func TestFlagRanges(t *testing.T) {
	root := newRoot(&globals{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	seen := map[string]bool{}
	bounded := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if lo, hi, off, ok := flagrange.DurationRange(f); ok {
				bounded++
				name := c.CommandPath() + " --" + f.Name
				want := flagrange.DurationText(lo, hi, off)
				if !strings.Contains(f.Usage, "("+want+")") {
					t.Errorf("%s: help %q does not say its range (%s)", name, f.Usage, want)
				}
				path := strings.Fields(c.CommandPath())[1:]
				for _, d := range []time.Duration{lo - time.Nanosecond, time.Nanosecond, hi + time.Nanosecond, -time.Second} {
					if d == 0 || lo <= d && d <= hi {
						continue
					}
					err := runWithArgs(ctx, append(append([]string{"--data", data}, path...), "--"+f.Name, d.String()))
					if exitCode(err) != codeUsage || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--%s %s: want %s", f.Name, d, want)) {
						t.Errorf("%s %s: exit %d, %v; want exit 2 and --%s %s: want %s", name, d, exitCode(err), err, f.Name, d, want)
					}
				}
				return
			}
			switch f.Value.Type() {
			case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "intSlice", "int32Slice", "int64Slice", "uintSlice":
			default:
				return
			}
			name := c.CommandPath() + " --" + f.Name
			lo, hi, ok := flagrange.Range(f)
			if !ok {
				if _, why := unbounded[name]; !why {
					t.Errorf("%s (%s) has no range: bound it, or say in unbounded why it needs none", name, f.Value.Type())
				}
				seen[name] = true
				return
			}
			bounded++
			if want := fmt.Sprintf("(%d to %d)", lo, hi); !strings.Contains(f.Usage, want) {
				t.Errorf("%s: help %q does not say its range %s", name, f.Usage, want)
			}
			path := strings.Fields(c.CommandPath())[1:]
			for _, v := range []int64{lo - 1, hi + 1} {
				val := fmt.Sprint(v)
				err := runWithArgs(ctx, append(append([]string{"--data", data}, path...), "--"+f.Name, val))
				want := fmt.Sprintf("--%s %s: want ", f.Name, val)
				if exitCode(err) != codeUsage || err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("%d to %d", lo, hi)) {
					t.Errorf("%s %s: exit %d, %v; want exit 2 and %q… %d to %d", name, val, exitCode(err), err, want, lo, hi)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for name := range unbounded {
		if !seen[name] {
			t.Errorf("unbounded lists %s, which is no numeric flag of any command", name)
		}
	}
	if bounded < 10 {
		t.Errorf("%d bounded flags, want the workers, cache, limit, replicas and bench sizes", bounded)
	}
	if _, err := os.Stat(data); err == nil {
		t.Errorf("a refused command line created %s", data)
	}
}

// runWithArgs runs the command line args, with no positional argument
// and then with one and two more (x, y) until an error that is not about
// the number of arguments, which cobra checks before any flag's range,
// and returns it.
func runWithArgs(ctx context.Context, args []string) error {
	var err error
	for _, extra := range [][]string{nil, {"x"}, {"x", "y"}} {
		err = runCLI(ctx, append(append([]string{}, args...), extra...), strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "arg") {
			return err
		}
	}
	return err
}

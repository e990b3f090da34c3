package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rangeAnnotation is the pflag annotation a count or size flag's range
// is kept in: its least and greatest value, in decimal.
const rangeAnnotation = "logbook/range"

// Upper bounds of count and size flags, sized for the machines Logbook
// runs on: far above any useful value, far below one that would start a
// goroutine, a worker or a buffer per unit until the machine runs out.
const (
	// maxWorkers bounds serve --workers (each a sandbox worker with
	// consumers and PTYs of its own) and the import commands' --workers
	// (each with up to 4 transcripts under way).
	maxWorkers = 64
	// maxViewsCacheMiB bounds serve --views-cache: 64 GiB.
	maxViewsCacheMiB = 64 << 10
	// maxListed bounds sessions --limit.
	maxListed = 1_000_000
)

// bound documents and enforces lo to hi as the range of fs's count or
// size flag name (an int, int64, uint64 or int slice flag; each element
// of a slice): its help gains " (lo to hi)", and a value given outside
// it is a usage error naming the flag, the value and the range, before
// the command runs (checkRanges, from the root's PersistentPreRunE). A
// flag left at its default is not checked. It panics when fs has no flag
// name, a mistake in the code.
func bound(fs *pflag.FlagSet, name string, lo, hi int64) {
	f := fs.Lookup(name)
	if f == nil {
		panic("bound: no flag --" + name)
	}
	f.Usage += fmt.Sprintf(" (%d to %d)", lo, hi)
	if err := fs.SetAnnotation(name, rangeAnnotation, []string{strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)}); err != nil {
		panic(err)
	}
}

// durRangeAnnotation is the pflag annotation a duration flag's range is
// kept in: its least and greatest value (Go durations), and "off" when 0
// (never) is taken besides.
const durRangeAnnotation = "logbook/duration-range"

// boundDuration documents and enforces lo to hi as the range of fs's
// duration flag name, as bound does for counts: its help gains " (1s to
// 24h)", or " (0 (never), or 1s to 24h)" when off lets 0 mean never, and a value
// given outside it is a usage error naming the flag, the value and the
// range (checkRanges). It panics when fs has no flag name.
func boundDuration(fs *pflag.FlagSet, name string, lo, hi time.Duration, off bool) {
	f := fs.Lookup(name)
	if f == nil {
		panic("boundDuration: no flag --" + name)
	}
	vals := []string{lo.String(), hi.String()}
	if off {
		vals = append(vals, "off")
	}
	f.Usage += " (" + durRangeText(lo, hi, off) + ")"
	if err := fs.SetAnnotation(name, durRangeAnnotation, vals); err != nil {
		panic(err)
	}
}

// durRangeText says a duration range: "1s to 24h", "0 (never), or 1s
// to 24h".
func durRangeText(lo, hi time.Duration, off bool) string {
	short := func(d time.Duration) string {
		s := d.String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	}
	r := short(lo) + " to " + short(hi)
	if off {
		r = "0 (never), or " + r
	}
	return r
}

// flagDurRange returns the range boundDuration gave f, and whether it
// has one.
func flagDurRange(f *pflag.Flag) (lo, hi time.Duration, off, ok bool) {
	r := f.Annotations[durRangeAnnotation]
	if len(r) < 2 {
		return 0, 0, false, false
	}
	lo, err1 := time.ParseDuration(r[0])
	hi, err2 := time.ParseDuration(r[1])
	return lo, hi, len(r) == 3 && r[2] == "off", err1 == nil && err2 == nil
}

// flagRange returns the range bound gave f, and whether it has one.
func flagRange(f *pflag.Flag) (lo, hi int64, ok bool) {
	r := f.Annotations[rangeAnnotation]
	if len(r) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(r[0], 10, 64)
	hi, err2 := strconv.ParseInt(r[1], 10, 64)
	return lo, hi, err1 == nil && err2 == nil
}

// checkRanges refuses, as a usage error (exit 2), a value given to one
// of cmd's bounded flags outside its range: `--workers 99999999: want 1
// to 64`.
func checkRanges(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		if lo, hi, off, ok := flagDurRange(f); ok {
			d, perr := time.ParseDuration(f.Value.String())
			if perr != nil || !(off && d == 0 || lo <= d && d <= hi) {
				err = usageErrorf("--%s %s: want %s", f.Name, f.Value.String(), durRangeText(lo, hi, off))
			}
			return
		}
		lo, hi, ok := flagRange(f)
		if !ok {
			return
		}
		val := f.Value.String()
		if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
			vals := sv.GetSlice()
			for _, v := range vals {
				if !inRange(v, lo, hi) {
					err = usageErrorf("--%s %s: want each %d to %d", f.Name, strings.Join(vals, ","), lo, hi)
					return
				}
			}
			return
		}
		if !inRange(val, lo, hi) {
			err = usageErrorf("--%s %s: want %d to %d", f.Name, val, lo, hi)
		}
	})
	return err
}

// inRange reports whether the whole number s is from lo to hi.
func inRange(s string, lo, hi int64) bool {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return lo <= n && n <= hi
	}
	return false // not a whole number, or past int64: out of any range
}

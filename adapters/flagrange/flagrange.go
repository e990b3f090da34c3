// Package flagrange documents and enforces the ranges of count, size and
// duration flags of a cobra command tree: a flag given a range (Bound,
// BoundDuration) says it in its help, and Check refuses a value given
// outside it before the command runs, naming the flag, the value and the
// range. The ranges ride on the flags as pflag annotations, so a walk of
// the tree finds them (Range, DurationRange).
package flagrange

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

// durRangeAnnotation is the pflag annotation a duration flag's range is
// kept in: its least and greatest value (Go durations), and "off" when 0
// (never) is taken besides.
const durRangeAnnotation = "logbook/duration-range"

// Bound documents and enforces lo to hi as the range of fs's count or
// size flag name (an int, int64, uint64 or int slice flag; each element
// of a slice): its help gains " (lo to hi)", and a value given outside
// it is refused by Check. A flag left at its default is not checked. It
// panics when fs has no flag name, a mistake in the code.
func Bound(fs *pflag.FlagSet, name string, lo, hi int64) {
	f := fs.Lookup(name)
	if f == nil {
		panic("bound: no flag --" + name)
	}
	f.Usage += fmt.Sprintf(" (%d to %d)", lo, hi)
	if err := fs.SetAnnotation(name, rangeAnnotation, []string{strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)}); err != nil {
		panic(err)
	}
}

// BoundDuration documents and enforces lo to hi as the range of fs's
// duration flag name, as Bound does for counts: its help gains " (1s to
// 24h)", or " (0 (never), or 1s to 24h)" when off lets 0 mean never, and
// a value given outside it is refused by Check. It panics when fs has no
// flag name.
func BoundDuration(fs *pflag.FlagSet, name string, lo, hi time.Duration, off bool) {
	f := fs.Lookup(name)
	if f == nil {
		panic("boundDuration: no flag --" + name)
	}
	vals := []string{lo.String(), hi.String()}
	if off {
		vals = append(vals, "off")
	}
	f.Usage += " (" + DurationText(lo, hi, off) + ")"
	if err := fs.SetAnnotation(name, durRangeAnnotation, vals); err != nil {
		panic(err)
	}
}

// DurationText says a duration range: "1s to 24h", "0 (never), or 1s
// to 24h".
func DurationText(lo, hi time.Duration, off bool) string {
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

// DurationRange returns the range BoundDuration gave f, and whether it
// has one.
func DurationRange(f *pflag.Flag) (lo, hi time.Duration, off, ok bool) {
	r := f.Annotations[durRangeAnnotation]
	if len(r) < 2 {
		return 0, 0, false, false
	}
	lo, err1 := time.ParseDuration(r[0])
	hi, err2 := time.ParseDuration(r[1])
	return lo, hi, len(r) == 3 && r[2] == "off", err1 == nil && err2 == nil
}

// Range returns the range Bound gave f, and whether it has one.
func Range(f *pflag.Flag) (lo, hi int64, ok bool) {
	r := f.Annotations[rangeAnnotation]
	if len(r) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(r[0], 10, 64)
	hi, err2 := strconv.ParseInt(r[1], 10, 64)
	return lo, hi, err1 == nil && err2 == nil
}

// Check returns an error for the first value given to one of cmd's
// bounded flags outside its range, saying the flag, the value and the
// range: "--workers 99999999: want 1 to 64"; nil when every value given
// is in range. The caller decides what kind of error it is (a usage
// error, exit 2, in logbook).
func Check(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		if lo, hi, off, ok := DurationRange(f); ok {
			d, perr := time.ParseDuration(f.Value.String())
			if perr != nil || !(off && d == 0 || lo <= d && d <= hi) {
				err = fmt.Errorf("--%s %s: want %s", f.Name, f.Value.String(), DurationText(lo, hi, off))
			}
			return
		}
		lo, hi, ok := Range(f)
		if !ok {
			return
		}
		val := f.Value.String()
		if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
			vals := sv.GetSlice()
			for _, v := range vals {
				if !inRange(v, lo, hi) {
					err = fmt.Errorf("--%s %s: want each %d to %d", f.Name, strings.Join(vals, ","), lo, hi)
					return
				}
			}
			return
		}
		if !inRange(val, lo, hi) {
			err = fmt.Errorf("--%s %s: want %d to %d", f.Name, val, lo, hi)
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

package flagrange

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestCheck: a bounded flag says its range in its help, a value given
// outside it is refused naming flag, value and range, and one inside it,
// or a flag left at its default, passes.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""},
		{[]string{"--workers", "64"}, ""},
		{[]string{"--workers", "65"}, "--workers 65: want 1 to 64"},
		{[]string{"--ports", "1,99"}, "--ports 1,99: want each 1 to 10"},
		{[]string{"--every", "0s"}, ""},
		{[]string{"--every", "1ns"}, "--every 1ns: want 0 (never), or 1s to 24h"},
		{[]string{"--every", "90m"}, ""},
	} {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		fs := cmd.Flags()
		fs.Int("workers", 1, "workers")
		fs.IntSlice("ports", nil, "ports")
		fs.Duration("every", time.Minute, "every")
		Bound(fs, "workers", 1, 64)
		Bound(fs, "ports", 1, 10)
		BoundDuration(fs, "every", time.Second, 24*time.Hour, true)
		if got := fs.Lookup("every").Usage; got != "every (0 (never), or 1s to 24h)" {
			t.Errorf("usage = %q", got)
		}
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := Check(cmd)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%v: no error, want %q", tc.args, tc.want)
		}
	}
}

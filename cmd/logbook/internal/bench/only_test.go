package bench

import "testing"

// --only selects rows by group, and the audit row by its own name too.
func TestConfig_WantsRow(t *testing.T) {
	audit := benchWorkload{group: "scale", row: "audit"}
	show := benchWorkload{group: "scale"}
	cluster := benchWorkload{group: "cluster"}
	read := benchWorkload{group: "read"}
	for _, tc := range []struct {
		only []string
		w    benchWorkload
		want bool
	}{
		{nil, audit, true},
		{nil, show, true},
		{nil, cluster, false},
		{[]string{"scale"}, audit, true},
		{[]string{"scale"}, show, true},
		{[]string{"audit"}, audit, true},
		{[]string{"audit"}, show, false},
		{[]string{"audit"}, read, false},
		{[]string{"read", "audit"}, read, true},
	} {
		c := Config{Only: tc.only}
		if err := c.Check(); err != nil {
			t.Fatalf("--only %v: %v", tc.only, err)
		}
		if got := c.wantsRow(tc.w); got != tc.want {
			t.Errorf("--only %v, row %q of group %q: selected %v, want %v", tc.only, tc.w.row, tc.w.group, got, tc.want)
		}
	}
}

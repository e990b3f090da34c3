package events

import (
	"strings"
	"testing"
)

func TestWorkDirProblem(t *testing.T) {
	for _, tc := range []struct {
		cwd  string
		want string // "" none; else a part of the problem
	}{
		{"", ""},
		{"/home/a/src", ""},
		{"src", `"src"`},
		{"./src", `"./src"`},
		{"/home/a\x00/src", `"/home/a\x00/src"`},
	} {
		got := WorkDirProblem(tc.cwd)
		if tc.want == "" {
			if got != "" {
				t.Errorf("WorkDirProblem(%q) = %q, want none", tc.cwd, got)
			}
			continue
		}
		if !strings.HasPrefix(got, WorkDirRefused) || !strings.Contains(got, tc.want) || strings.IndexByte(got, 0) >= 0 {
			t.Errorf("WorkDirProblem(%q) = %q, want it to begin %q and name %s, without a NUL", tc.cwd, got, WorkDirRefused, tc.want)
		}
		if WorkDir(tc.cwd) != "" {
			t.Errorf("WorkDir(%q) = %q, yet a problem is reported", tc.cwd, WorkDir(tc.cwd))
		}
	}
}

package sandbox

import (
	"errors"
	"testing"
)

// TestParseAllow checks the allowlist entries a person may type: an
// absolute path or ~/path with :ro or :rw, and the refusals, each an
// ErrInvalidSpec naming the entry.
func TestParseAllow(t *testing.T) {
	const home = "/home/ann"
	for _, tc := range []struct {
		in   string
		want Allow
	}{
		{"/opt/cache", Allow{Path: "/opt/cache"}},
		{"/opt/cache:ro", Allow{Path: "/opt/cache"}},
		{"/opt/cache:rw", Allow{Path: "/opt/cache", Write: true}},
		{"~/.npm", Allow{Path: "/home/ann/.npm"}},
		{"/opt/x/../cache/", Allow{Path: "/opt/cache"}},
	} {
		got, err := ParseAllow(tc.in, home)
		if err != nil || got != tc.want {
			t.Errorf("ParseAllow(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"rel", "", "/", "~/", "~", "/home", "/home/ann", "/home/ann/", "/opt/x:rx", "/opt/x:rw:rw", "~/.npm:exec"} {
		if got, err := ParseAllow(in, home); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("ParseAllow(%q) = %+v, %v; want ErrInvalidSpec", in, got, err)
		}
	}
}

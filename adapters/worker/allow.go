package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/sandbox"
)

// AllowError is Allowlist's error about one value: Value as given (""
// for a resolved entry that reaches the home directory), the path it
// names, and why it is refused.
type AllowError struct {
	Value string
	Path  string
	// Why is the parse error's reason (Parse), or "" when Path does not
	// exist (Missing) or is the home directory or above it (Home).
	Why     string
	Missing bool
	Home    bool
}

func (e *AllowError) Error() string {
	switch {
	case e.Missing:
		return fmt.Sprintf("allow %q: %s does not exist or cannot be read", e.Value, e.Path)
	case e.Home:
		return fmt.Sprintf("allow: %s is, through a symbolic link, the home directory or above it", e.Path)
	}
	return fmt.Sprintf("allow %q: %s", e.Value, e.Why)
}

// Allowlist returns what restricted commands see of the host besides
// their workspace and the system directories: sandbox.DefaultAllow for
// home and getenv unless vals holds "none", then each of vals
// (sandbox.ParseAllow, each checked to exist: only the defaults may be
// absent, skipped at each start), resolved now (sandbox.ResolveAllow) so
// that a command's start leaves out an entry that has come to resolve
// elsewhere. An entry that is, through a symbolic link, home or above it
// is refused. Errors are *AllowError.
func Allowlist(vals []string, home string, getenv func(string) string) ([]sandbox.Allow, error) {
	var out []sandbox.Allow
	if !slices.Contains(vals, "none") {
		out = sandbox.DefaultAllow(home, getenv)
	}
	for _, v := range vals {
		if v == "none" {
			continue
		}
		a, err := sandbox.ParseAllow(v, home)
		if err != nil {
			why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), fmt.Sprintf("allow %q: ", v)), sandbox.ErrInvalidSpec.Error()+": ")
			return nil, &AllowError{Value: v, Why: why}
		}
		if _, err := os.Stat(a.Path); err != nil {
			return nil, &AllowError{Value: v, Path: a.Path, Missing: true}
		}
		out = append(out, a)
	}
	out = sandbox.ResolveAllow(out)
	if h, err := filepath.EvalSymlinks(home); err == nil {
		for _, a := range out {
			if a.Path == h || strings.HasPrefix(h, a.Path+"/") || a.Path == "/" {
				return nil, &AllowError{Path: a.Path, Home: true}
			}
		}
	}
	return out, nil
}

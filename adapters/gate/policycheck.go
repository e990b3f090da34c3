package gate

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckFiles parses the policy files paths in order (Policies.Load), as
// `logbook policy check` does: ok is called with each that parses and
// its warnings (Policy.Warnings, none for most), bad with the error of
// each that does not (naming its line and column). A
// file that cannot be found is passed over, unless named is true (the
// paths were named by the caller): then its error, "policy <path>: …",
// ends the check. It returns how many files did not parse.
func CheckFiles(paths []string, named bool, ok func(path string, warnings []*PolicyError), bad func(err error)) (int, error) {
	var ps Policies
	n := 0
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			if named {
				return n, fmt.Errorf("policy %s: %w", p, err)
			}
			continue
		}
		// A project's file is read as the gate reads it: following no
		// link below the project, a regular file of a bounded size.
		if dir, isProject := projectOf(p); isProject {
			l := ps.loadProject(dir, nil)
			switch {
			case l == nil:
				continue
			case l.err != nil:
				bad(fmt.Errorf("%s (the gate refuses it as it is)", policyDetail(l.err)))
				n++
				continue
			}
			ok(p, l.policy.Warnings)
			continue
		}
		if err := ps.Load(p); err != nil {
			bad(err)
			n++
			continue
		}
		var ws []*PolicyError
		if l := ps.load(p); l != nil && l.policy != nil {
			ws = l.policy.Warnings
		}
		ok(p, ws)
	}
	return n, nil
}

// projectOf returns the project folder of policy file p when p is a
// project's (its last two elements are ProjectPolicyDir and PolicyFile),
// made absolute.
func projectOf(p string) (string, bool) {
	if filepath.Base(p) != PolicyFile || filepath.Base(filepath.Dir(p)) != ProjectPolicyDir {
		return "", false
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	return filepath.Dir(filepath.Dir(abs)), true
}

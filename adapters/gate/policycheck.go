package gate

import (
	"fmt"
	"os"
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

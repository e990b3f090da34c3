// Package buildinfo says what the running binary knows of its own build,
// from runtime/debug.ReadBuildInfo: the module's version, the VCS
// revision and commit time, and the Go version.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Info is what the binary knows of its own build: the main module's
// version ("(devel)" for a build from a checkout, a tag such as "v0.3.0"
// for `go install …@v0.3.0`), the VCS revision and commit time, whether
// the tree had changes not committed, and the Go version.
type Info struct {
	Version  string    `json:"version"`
	Revision string    `json:"revision,omitempty"`
	Time     time.Time `json:"time,omitzero"`
	Modified bool      `json:"modified,omitempty"`
	Go       string    `json:"go"`
}

// Read returns the running binary's Info. version, set at build time
// with -ldflags, wins over the module's unless it is "dev".
func Read(version string) Info {
	v := Info{Version: version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line `logbook version` prints: "logbook v0.3.0
// (revision 1a2b3c4d5e6f, 2026-11-30T16:00:00Z, modified) go1.26.8"; a
// build from a checkout that names no revision says so in its place.
func (v Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "logbook %s", v.Version)
	if v.Revision != "" {
		fmt.Fprintf(&b, " (revision %.12s", v.Revision)
		if !v.Time.IsZero() {
			fmt.Fprintf(&b, ", %s", v.Time.UTC().Format(time.RFC3339))
		}
		if v.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	} else if v.Version == "(devel)" {
		// A build from a checkout without VCS stamping (-buildvcs=false,
		// or a tree copied without its .git) names no commit at all.
		b.WriteString(" (revision unknown: built without VCS stamping)")
	}
	fmt.Fprintf(&b, " %s", v.Go)
	return b.String()
}

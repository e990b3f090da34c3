package events

import (
	"path"
	"strings"
)

// WorkDir returns cwd, a working directory an agent or a hook reported,
// or "" (none) when it names no directory: a path that is not absolute,
// or one that holds a NUL byte. A session's directory places its gate's
// policies and the paths its calls name; a relative one would place
// them wherever it is read. Pure: reducers call it.
func WorkDir(cwd string) string {
	if !path.IsAbs(cwd) || strings.IndexByte(cwd, 0) >= 0 {
		return ""
	}
	return cwd
}

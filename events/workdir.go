package events

import (
	"fmt"
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

// WorkDirRefused begins the Problems entry of an observation whose
// reported working directory WorkDir takes for none (WorkDirProblem).
const WorkDirRefused = "cwd names no directory"

// WorkDirProblem returns the Problems entry an observation carries when
// cwd, the working directory its agent or hook reported, is given but
// names no directory (WorkDir returns ""), e.g. `cwd names no directory
// ("src\x00x": not an absolute path, or it holds a NUL byte): the
// session's directory is not taken from it`; "" when cwd is empty or
// names a directory. Parsers add it, so that the record says why a
// session's directory stayed unset or unchanged.
func WorkDirProblem(cwd string) string {
	if cwd == "" || WorkDir(cwd) != "" {
		return ""
	}
	return fmt.Sprintf("%s (%q: not an absolute path, or it holds a NUL byte): the session's directory is not taken from it", WorkDirRefused, cwd)
}

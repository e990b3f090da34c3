package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/sandbox"
)

// HiddenPaths returns what restricted commands must not see — the data
// dir dd and the credential paths in the process's home
// (sandbox.CredentialPaths) — and, as keep, the directories in them where
// workspaces lie (workspace.DefaultRoot, and workspace.LegacyRoot, the
// one inside the data dir where they went before), resolved through
// symbolic links, which they are hidden around at each command's start
// (Config.Hidden and Config.Keep). A root that does not resolve is left
// out.
func HiddenPaths(dd string) (hide, keep []string) {
	hide = []string{dd}
	if home, err := os.UserHomeDir(); err == nil {
		hide = append(hide, sandbox.CredentialPaths(home)...)
	}
	for _, root := range []func() (string, error){workspace.DefaultRoot, workspace.LegacyRoot} {
		if r, err := root(); err == nil {
			if real, err := filepath.EvalSymlinks(r); err == nil {
				keep = append(keep, real)
			}
		}
	}
	return hide, keep
}

// CheckHidden refuses a workspace ws (absolute) that is, or lies inside,
// one of hide (HiddenPaths: the data dir and the credential paths)
// unless it is, or lies inside, one of keep (the workspace roots there):
// a command of any mode, full_access included, never works on the data
// dir's credentials, spool or views, nor on a credential directory. ws
// and the paths are compared with their symbolic links resolved where
// they resolve (else cleaned). The error names ws and the path it lies
// in.
func CheckHidden(ws string, hide, keep []string) error {
	ws = resolved(ws)
	for _, k := range keep {
		if within(ws, resolved(k)) {
			return nil
		}
	}
	for _, h := range hide {
		if h == "" {
			continue
		}
		if r := resolved(h); within(ws, r) {
			return fmt.Errorf("workspace %s lies in %s (the data dir or a credential directory), which no command may work on in any mode", ws, r)
		}
	}
	return nil
}

// resolved is p cleaned, with its symbolic links resolved when it
// resolves.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or lies inside it (both clean).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

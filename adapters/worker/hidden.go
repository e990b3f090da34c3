package worker

import (
	"os"
	"path/filepath"

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

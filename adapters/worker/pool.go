package worker

import wsadapter "github.com/logbook-dev/logbook/adapters/workspace"

// NewN returns n workers made by New from cfg, each with an identity
// of its own. Errors are New's, for the first worker it could not make.
func NewN(n int, cfg Config) ([]*Worker, error) {
	ws := make([]*Worker, 0, n)
	for range n {
		w, err := New(cfg)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// WorkspaceSandbox returns how the setup commands of a workspace run
// under the sandbox, as commands do: with this process's environment
// (InheritEnv), the data dir dataDir and the credential files hidden
// with what stays in sight of them (HiddenPaths).
func WorkspaceSandbox(dataDir string) wsadapter.SandboxSetup {
	hidden, keep := HiddenPaths(dataDir)
	return wsadapter.SandboxSetup{Env: InheritEnv(), Hidden: hidden, Keep: keep}
}

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/cmd/internal/execfast"
)

// TestExecFast_InheritedEnv: logbook-exec sends serve the variables
// `logbook exec` passes on, which it cannot import the list of.
func TestExecFast_InheritedEnv(t *testing.T) {
	if diff := cmp.Diff(worker.InheritedEnv, execfast.InheritedEnv); diff != "" {
		t.Errorf("execfast.InheritedEnv (-worker +execfast):\n%s", diff)
	}
}

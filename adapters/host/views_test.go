package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

// TestOpenViews_CannotCreate: projections that cannot be made (the data
// dir is a file) are named as such, with no advice to remove a folder
// that is not there.
func TestOpenViews_CannotCreate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenViews(t.Context(), Views{Dir: datadir.Dir(file)})
	if err == nil || !strings.Contains(err.Error(), "create projections in "+filepath.Join(file, "views")) || strings.Contains(err.Error(), "remove it") {
		t.Errorf("views under a file: %v, want that they could not be made", err)
	}
}

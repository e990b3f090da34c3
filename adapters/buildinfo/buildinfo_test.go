package buildinfo

import (
	"runtime"
	"testing"
	"time"
)

func TestInfo_String(t *testing.T) {
	at := time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    Info
		want string
	}{
		{Info{Version: "v0.3.0", Go: "go1.26.8"}, "logbook v0.3.0 go1.26.8"},
		{Info{Version: "(devel)", Go: "go1.26.8"}, "logbook (devel) (revision unknown: built without VCS stamping) go1.26.8"},
		{Info{Version: "(devel)", Revision: "1a2b3c4d5e6f7a8b", Time: at, Modified: true, Go: "go1.26.8"}, "logbook (devel) (revision 1a2b3c4d5e6f, 2026-11-30T16:00:00Z, modified) go1.26.8"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestRead_VersionWins(t *testing.T) {
	v := Read("v9.9.9")
	if v.Version != "v9.9.9" || v.Go != runtime.Version() {
		t.Errorf("Read(v9.9.9) = %+v; want its version and %s", v, runtime.Version())
	}
}

package worker

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The homes whose credential paths a worker hides: the accounts' own
// directories, not the system's directories system accounts name as
// their home, nor / or a relative path, nor one that is not there.
func TestAccountHomes(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "me")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	other := uid + 1
	passwd := fmt.Sprintf(`root:x:0:0:root:/:/bin/sh
me:x:%d:%d::%s:/bin/sh
daemon:x:%d:1::%s:/usr/sbin/nologin
rel:x:%d:1::home/rel:/bin/sh
gone:x:%d:1::%s/gone:/bin/sh
me2:x:%d:1::%s/:/bin/sh
# a comment
short:x
`, uid, uid, mine, other, mine, uid, uid, dir, uid, mine)
	p := filepath.Join(dir, "passwd")
	if err := os.WriteFile(p, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{mine}, AccountHomes(p)); diff != "" {
		t.Errorf("AccountHomes (-want +got):\n%s", diff)
	}
	if got := AccountHomes(filepath.Join(dir, "none")); got != nil {
		t.Errorf("AccountHomes of a missing file: %q", got)
	}
}

// A worker hides the credential paths of every local account's home, not
// only its own: run as root, it serves sessions whose directories are
// other users' homes.
func TestHiddenPaths_OtherAccounts(t *testing.T) {
	u, err := user.Lookup("lbtest")
	if err != nil {
		t.Skipf("no user lbtest on this host (.ci/run makes it): %v", err)
	}
	var st os.FileInfo
	if st, err = os.Stat(u.HomeDir); err != nil || !st.IsDir() {
		t.Skipf("lbtest has no home: %v", err)
	}
	if uid, _ := strconv.Atoi(u.Uid); !ownedBy(st, uid) {
		t.Skipf("%s is not lbtest's", u.HomeDir)
	}
	hide, _ := HiddenPaths(t.TempDir())
	for _, p := range []string{".ssh", ".aws", ".config/gh", ".claude.json", ".local/share/logbook"} {
		if !slices.Contains(hide, filepath.Join(u.HomeDir, p)) {
			t.Errorf("HiddenPaths leaves %s in sight", filepath.Join(u.HomeDir, p))
		}
	}
	if err := CheckHidden(filepath.Join(u.HomeDir, ".ssh"), hide, nil); err == nil {
		t.Errorf("a workspace in lbtest's .ssh is not refused")
	}
}

// ownedBy reports whether fi's owner is uid.
func ownedBy(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

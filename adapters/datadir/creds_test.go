package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// TestRoleCredentials: a role's credentials are made once (0600) and
// read back the same; the data dir holds none of admin or serve.
func TestRoleCredentials(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "data"))
	c, err := d.RoleCredentials(natslog.RoleReader)
	if err != nil {
		t.Fatal(err)
	}
	if c.User != "reader" || c.Role != "reader" || c.Password == "" {
		t.Errorf("reader credentials %+v", c)
	}
	again, err := d.RoleCredentials(natslog.RoleReader)
	if err != nil || again.Password != c.Password {
		t.Errorf("second read: %+v, %v: want the same password", again, err)
	}
	if st, err := os.Stat(d.CredsFile(natslog.RoleReader)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("creds-reader.json: %v, %v: want mode 0600", st, err)
	}
	if d.CredsFile(natslog.RoleWriter) != d.Path("creds.json") {
		t.Errorf("writer's file %s, want creds.json", d.CredsFile(natslog.RoleWriter))
	}
	for _, r := range []natslog.Role{natslog.RoleAdmin, natslog.RoleServe} {
		if _, err := d.RoleCredentials(r); err == nil {
			t.Errorf("RoleCredentials(%s): no error", r)
		}
	}
}

// TestRoleCredentials_FollowerID: the data dir's follower credentials
// name a follower id, the embedded server's follower user answers for
// it, and a file of before follower ids gets one, its password kept.
func TestRoleCredentials_FollowerID(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "data"))
	c, err := d.RoleCredentials(natslog.RoleFollower)
	if err != nil {
		t.Fatal(err)
	}
	if natslog.CheckFollowerID(c.FollowerID) != nil {
		t.Fatalf("follower credentials %+v: want a follower id", c)
	}
	us, err := d.EmbeddedUsers(Creds{User: "admin", Password: "p", Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		want := ""
		if u.Role == natslog.RoleFollower {
			want = c.FollowerID
		}
		if u.FollowerID != want {
			t.Errorf("embedded user %s: follower id %q, want %q", u.Name, u.FollowerID, want)
		}
	}
	old := Creds{User: "follower", Password: "old-password", Role: "follower"}
	if err := WriteCreds(d.CredsFile(natslog.RoleFollower), old); err != nil {
		t.Fatal(err)
	}
	got, err := d.RoleCredentials(natslog.RoleFollower)
	if err != nil || got.Password != old.Password || natslog.CheckFollowerID(got.FollowerID) != nil {
		t.Fatalf("old follower credentials read as %+v, %v: want the password kept and a follower id", got, err)
	}
	if again, err := ReadCreds(d.CredsFile(natslog.RoleFollower)); err != nil || again.FollowerID != got.FollowerID {
		t.Errorf("the file holds %+v, %v: want follower id %s written into it", again, err, got.FollowerID)
	}
}

// TestReadCreds: the faults of a credentials file are named with its path.
func TestReadCreds(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadCreds(filepath.Join(dir, "absent.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent file: %v, want fs.ErrNotExist", err)
	}
	for _, tc := range []struct{ text, want string }{
		{`{"user":"u"}`, `no "user" or no "password"`},
		{`{"user":"u","password":"p","role":"king"}`, "king"},
		{`{"user":`, "credentials"},
		{`{"user":"u","password":"p","role":"follower","follower_id":"*"}`, `follower id "*"`},
		{`{"user":"u","password":"p","role":"reader","follower_id":"0a1b2c3d4e5f"}`, "only a follower's have one"},
	} {
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadCreds(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadCreds(%s): %v, want an error naming the path and %q", tc.text, err, tc.want)
		}
	}
	if err := WriteCreds(filepath.Join(dir, "w.json"), Creds{User: "u", Password: "p"}); err != nil {
		t.Fatal(err)
	}
	if c, err := ReadCreds(filepath.Join(dir, "w.json")); err != nil || c.Role != string(natslog.RoleWriter) {
		t.Errorf("read back: %+v, %v: want role writer by default", c, err)
	}
}

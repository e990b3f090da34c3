package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/redact/redacttest"
	"github.com/logbook-dev/logbook/events"
	projectpkg "github.com/logbook-dev/logbook/reducers/project"
)

// TestManager_RefusesSecrets: a project name or folder, a workspace's
// name (in any case: its slug is its branch and folder), id, owner,
// base, a rename's name or session, an archiving session, a task's id,
// title or delegating session that a rule matches (a custom rule
// among them) is refused naming the field and the rule, never the value;
// nothing is appended, and no branch, worktree or folder holds it.
func TestManager_RefusesSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	red, err := redact.New([]string{`lbcustom-[0-9]{6}`})
	if err != nil {
		t.Fatal(err)
	}
	m := h.manager(t, func(c *Config) { c.Redactor = red })
	proj, _ := repo(t)
	p, err := m.AddProject(t.Context(), proj, "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "login form"})
	if err != nil || ws.Status != "ready" {
		t.Fatalf("create: %+v %v", ws, err)
	}
	var secrets []string
	for _, sh := range redacttest.Shapes() {
		if !sh.MultiLine && !strings.ContainsAny(sh.Text, " \n\t/") && len(sh.Text) <= 120 {
			secrets = append(secrets, sh.Text)
		}
	}
	secrets = append(secrets, "lbcustom-123456")
	if len(secrets) < 20 {
		t.Fatalf("%d shapes fit a name", len(secrets))
	}
	last, _ := h.log.LastSeq(t.Context())
	// A folder named for a secret, made a repository.
	dir := filepath.Join(filepath.Dir(proj), "repo-"+secrets[0])
	run(t, filepath.Dir(proj), "git", "clone", "--quiet", proj, dir)
	for _, s := range secrets {
		for _, c := range []struct {
			field string
			call  func() error
		}{
			{"name", func() error { _, err := m.AddProject(t.Context(), proj+"/..", "app "+s, nil); return err }},
			{"folder", func() error { _, err := m.AddProject(t.Context(), dir, "", nil); return err }},
			{"name", func() error {
				_, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "fix " + s})
				return err
			}},
			{"id", func() error {
				_, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "x", ID: s})
				return err
			}},
			{"session", func() error {
				_, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "x", Session: "s-" + s})
				return err
			}},
			{"base", func() error {
				_, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "x", Base: s})
				return err
			}},
			{"name", func() error { _, err := m.Rename(t.Context(), ws.ID, "now "+s, "", events.ByPerson); return err }},
			{"session", func() error { _, err := m.Rename(t.Context(), ws.ID, "y", s, events.ByChat); return err }},
			{"session", func() error { _, err := m.Archive(t.Context(), ws.ID, s, events.ByChat); return err }},
			{"id", func() error { _, err := m.Delegate(t.Context(), s, ws.ID, "s1", "do it"); return err }},
			{"session", func() error { _, err := m.Delegate(t.Context(), "", ws.ID, s, "do it"); return err }},
			{"title", func() error { _, err := m.Delegate(t.Context(), "", ws.ID, "s1", "rotate "+s); return err }},
		} {
			err := c.call()
			var fe *redact.FieldError
			if !errors.Is(err, events.ErrRejected) || !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("%s %.12s…: %v, want a refusal naming %s", c.field, s, err, c.field)
				continue
			}
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the refusal quotes the value: %v", c.field, err)
			}
		}
	}
	if now, _ := h.log.LastSeq(t.Context()); now != last {
		t.Errorf("refusals appended %d events", now-last)
	}
	// A name in another case is not the secret, but its slug, lower
	// case, is the branch and the folder: refused when a rule matches
	// that.
	for _, s := range secrets {
		_, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: strings.ToUpper(s)})
		if err != nil && !errors.Is(err, redact.ErrSecretField) {
			t.Errorf("name %.12s… in upper case: %v", strings.ToUpper(s), err)
		}
	}
	// Not in git's branches or worktrees, nor in the folders made.
	gitMeta := run(t, proj, "git", "for-each-ref", "--format=%(refname)") + "\n" + run(t, proj, "git", "worktree", "list", "--porcelain")
	var names strings.Builder
	filepath.WalkDir(h.root, func(p string, d os.DirEntry, err error) error {
		names.WriteString(p + "\n")
		if d != nil && d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		return nil
	})
	for _, s := range secrets {
		for _, v := range []string{s, strings.ToLower(s), projectpkg.Slug(s)} {
			if v != s && red.Redact(v) == v {
				continue // lower case, no longer a secret to any rule
			}
			if strings.Contains(gitMeta, v) || strings.Contains(names.String(), v) {
				t.Errorf("%.12s… found in git's refs and worktrees or the workspaces' folders", v)
			}
		}
	}
	// A session title a rule matches names no placeholder workspace.
	ph, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "new", Placeholder: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.NameFromSessions(t.Context(), ph, []Named{{Session: "s7", Title: "deploy " + secrets[0], Started: testNow()}})
	if err != nil || got.Name != "new" {
		t.Errorf("named from a secret title: %+v %v", got, err)
	}
}

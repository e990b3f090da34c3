package gate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/reducers/review"
)

// TestGuard_RecursiveReadFollowsLinks: a read that follows the symbolic
// links inside its tree (grep -R, find -L, rg -L, cp -rL, rsync -L, tar
// -h, du -L, ls -LR, chmod -R -L, zip -r, diff -r) reads where they
// lead, so one whose tree holds a link into the data dir, or to a tree
// that does, is reviewed at critical risk as a command naming the data
// dir is, "Bash" alone notwithstanding; grep -r, which follows only the
// links its command line names, and a tree whose links stay inside it,
// are judged as before.
func TestGuard_RecursiveReadFollowsLinks(t *testing.T) {
	root := t.TempDir()
	dd := filepath.Join(root, "data")
	proj := filepath.Join(root, "proj")
	clean := filepath.Join(root, "clean")
	chain := filepath.Join(root, "chain")
	other := filepath.Join(root, "other")
	for _, d := range []string{dd, filepath.Join(proj, "src"), filepath.Join(clean, "src"), chain, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(dd, "creds.json"), filepath.Join(proj, "src", "a.go"), filepath.Join(clean, "src", "a.go")} {
		if err := os.WriteFile(f, []byte("password\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{
		filepath.Join(proj, "sl"):        filepath.Join(dd, "creds.json"),
		filepath.Join(clean, "inner"):    filepath.Join(clean, "src"),
		filepath.Join(chain, "out"):      other,
		filepath.Join(other, "deep"):     dd,
		filepath.Join(proj, "src", "up"): filepath.Join(dd, "spool", "new.json"), // dangling
	} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := ParsePolicy("p", []byte(`allow = ["Bash"]`))
	if err != nil {
		t.Fatal(err)
	}
	pols := []*Policy{builtinFor(dd), pol}
	for _, tc := range []struct {
		dir, cmd, want string
	}{
		{proj, `grep -R password .`, ActionReview},
		{proj, `grep --dereference-recursive password`, ActionReview},
		{proj, `find -L . -name x`, ActionReview},
		{proj, `find . -follow -name x`, ActionReview},
		{proj, `rg -L password`, ActionReview},
		{proj, `rg --follow password .`, ActionReview},
		{proj, `cp -rL . /tmp/copy`, ActionReview},
		{proj, `rsync -aL ./ /tmp/copy/`, ActionReview},
		{proj, `rsync -a --copy-unsafe-links ./ /tmp/copy/`, ActionReview},
		{proj, `tar -chf /tmp/a.tar .`, ActionReview},
		{proj, `tar czhf /tmp/a.tgz .`, ActionReview},
		{proj, `du -L .`, ActionReview},
		{proj, `ls -LR`, ActionReview},
		{proj, `chmod -R -L u+w .`, ActionReview},
		{proj, `zip -r /tmp/z.zip .`, ActionReview},
		{proj, `diff -r . /tmp/none`, ActionReview},
		{proj, `grep -R password src`, ActionReview}, // src/up dangles into the data dir
		{root, `grep -R password chain`, ActionReview},
		{proj, `grep -r password .`, ActionAllow},
		{proj, `find . -name x`, ActionAllow},
		{proj, `cp -r src /tmp/copy`, ActionAllow},
		{clean, `grep -R password .`, ActionAllow},
		{clean, `find -L . -name '*.go'`, ActionAllow},
		{proj, `zip -ry /tmp/z.zip .`, ActionAllow},
	} {
		c := bash(tc.cmd)
		c.Dir = tc.dir
		m := Decide(pols, c)
		if m.Action != tc.want || tc.want == ActionReview && (m.Pattern != GuardPattern || m.Risk != review.RiskCritical) {
			t.Errorf("in %s: %q: %+v, want %s", filepath.Base(tc.dir), tc.cmd, m, tc.want)
		}
	}
}

package sandbox

import (
	"archive/zip"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// credentialMark is in every fake credential file.
const credentialMark = "LB-CREDENTIAL-b7e2"

// credentialFiles are 32 places below a home where tools keep secrets,
// relative to the home.
func credentialFiles() []string {
	return []string{
		".pgpass", ".vault-token", ".my.cnf", ".terraform.d/credentials.tfrc.json",
		".pulumi/credentials.json", ".config/containers/auth.json", ".s3cfg", ".boto",
		".oci/config", ".config/rclone/rclone.conf", ".claude.json", ".password-store/web.gpg",
		".local/share/keyrings/login.keyring", ".mozilla/firefox/p.default/logins.json",
		".config/google-chrome/Default/Cookies", ".ssh/id_ed25519", ".gnupg/private-keys-v1.d/k.key",
		".aws/credentials", ".azure/msal_token_cache.json", ".kube/config", ".docker/config.json",
		".netrc", ".git-credentials", ".config/gcloud/credentials.db", ".config/gh/hosts.yml",
		".npmrc", ".pypirc", ".cargo/credentials.toml", ".gem/credentials",
		".claude/.credentials.json", ".codex/auth.json", ".config/hub",
	}
}

// credentialHome fills home with credentialFiles, mode 0600, and makes
// the toolchain directories DefaultAllow names, so that they are bound
// beside the secrets.
func credentialHome(t *testing.T, home string) {
	t.Helper()
	for _, f := range credentialFiles() {
		p := filepath.Join(home, f)
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(credentialMark+"\n"), 0o600))
	}
	for _, a := range DefaultAllow(home, nil) {
		must(t, os.MkdirAll(a.Path, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(home, ".cargo/registry/index"), []byte("crates\n"), 0o644))
}

// A home full of credential files, the workspace inside it: each file is
// unreadable in read_only and workspace_write, by its path below $HOME,
// and readable in full_access. The allowlisted toolchain directories are
// there, read-only; the rest of the home is an empty, writable tmpfs.
func TestBoundary_HomeCredentials(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	script := `for f in "$@"; do grep -qs ` + credentialMark + ` "$HOME/$f" && echo "read $f"; done
		cat "$HOME/.cargo/registry/index" 2>/dev/null
		echo x > "$HOME/.cargo/registry/new" 2>/dev/null && echo wrote registry
		mkdir -p "$HOME/.cache/tool" && echo x > "$HOME/.cache/tool/f" && echo home-writable
		true`
	inEachMode(t, func(t *testing.T, m Mode) {
		home := filepath.Join(outsideDir(t), "home")
		credentialHome(t, home)
		ws := filepath.Join(home, "src", "project")
		must(t, os.MkdirAll(ws, 0o755))
		s := Spec{Argv: append([]string{"sh", "-c", script, "sh"}, credentialFiles()...),
			Env: append(testEnv(), "HOME="+home), Workspace: ws, Mode: m, Grace: testGrace,
			Allow: DefaultAllow(home, nil), Hidden: CredentialPaths(home)}
		_, r := run(t, s)
		var read []string
		for _, line := range strings.Split(r.text(Stdout), "\n") {
			if f, ok := strings.CutPrefix(line, "read "); ok {
				read = append(read, f)
			}
		}
		want := []string(nil)
		tail := "crates\nhome-writable\n"
		if m == FullAccess {
			want = credentialFiles()
			tail = "crates\nwrote registry\nhome-writable\n"
		}
		slices.Sort(read)
		slices.Sort(want)
		if !slices.Equal(read, want) {
			t.Errorf("%s read %d of %d credential files: %q", m, len(read), len(credentialFiles()), read)
		}
		if !strings.HasSuffix(r.text(Stdout), tail) {
			t.Errorf("stdout %q, want it to end %q (stderr %q)", r.text(Stdout), tail, r.text(Stderr))
		}
	})
}

// A home full of credential files, with the allowlist reaching into it:
// every directory that holds one (~/.config, ~/.local, ~/.ssh, …) is an
// allowlist entry. Each file stays unreadable in the restricted modes, as
// CredentialPaths covers it even there.
func TestBoundary_AllowedHomeCredentials(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	home := filepath.Join(outsideDir(t), "home")
	credentialHome(t, home)
	var allow []Allow
	for _, f := range credentialFiles() {
		if top, _, ok := strings.Cut(f, "/"); ok && !slices.ContainsFunc(allow, func(a Allow) bool { return a.Path == filepath.Join(home, top) }) {
			allow = append(allow, Allow{Path: filepath.Join(home, top)})
		}
	}
	ws := t.TempDir()
	script := `for f in "$@"; do grep -qs ` + credentialMark + ` "$HOME/$f" && echo "read $f"; done; true`
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		s := Spec{Argv: append([]string{"sh", "-c", script, "sh"}, credentialFiles()...),
			Env: append(testEnv(), "HOME="+home), Workspace: ws, Mode: m, Grace: testGrace,
			Allow: allow, Hidden: CredentialPaths(home)}
		_, r := run(t, s)
		if out := r.text(Stdout); out != "" {
			t.Errorf("%s, %d allowlist entries in the home: %s", m, len(allow), out)
		}
	}
}

// What a restricted command sees, row by row as README.md's table gives
// it: "rw" writable, "ro" readable only, "-" absent or unreadable.
func TestBoundary_View(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	out := outsideDir(t)
	home := filepath.Join(out, "home")
	must(t, os.MkdirAll(filepath.Join(home, "go/pkg/mod/cache"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, "go/pkg/mod/cache/f"), []byte("x\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(home, "secret"), []byte("x\n"), 0o600))
	shared := filepath.Join(out, "shared")
	must(t, os.MkdirAll(shared, 0o777))
	must(t, os.WriteFile(filepath.Join(shared, "f"), []byte("x\n"), 0o666))
	other := filepath.Join(out, "other")
	must(t, os.MkdirAll(other, 0o777))
	must(t, os.WriteFile(filepath.Join(other, "f"), []byte("x\n"), 0o666))
	// probe prints rw, ro or - for a file (append a line) or directory
	// (create a file).
	script := `probe() {
			if [ -d "$1" ]; then
				if touch "$1/.lb-probe" 2>/dev/null; then rm -f "$1/.lb-probe"; echo rw; elif ls "$1" >/dev/null 2>&1; then echo ro; else echo -; fi
			elif [ -e "$1" ] && cat "$1" >/dev/null 2>&1; then
				if (: >> "$1") 2>/dev/null; then echo rw; else echo ro; fi
			else echo -; fi
		}
		for p in "$@"; do echo "$(probe "$p") $p"; done`
	rows := []struct {
		path       string
		ro, ww, fa string
	}{
		{"$WS/file", "ro", "rw", "rw"},
		{"/usr/bin", "ro", "ro", "?"},
		{"/etc/passwd", "ro", "ro", "?"},
		{"/etc/shadow", "-", "-", "?"},
		{"/tmp", "rw", "rw", "rw"},
		{home, "rw", "rw", "rw"},
		{home + "/secret", "-", "-", "rw"},
		{home + "/go/pkg/mod/cache/f", "ro", "ro", "rw"},
		{shared + "/f", "ro", "rw", "rw"},
		{other + "/f", "-", "-", "rw"},
		{"/var/log", "-", "-", "?"},
		{"/sys/kernel", "-", "-", "?"},
	}
	inEachMode(t, func(t *testing.T, m Mode) {
		s := newSpec(t, m, false, "sh", "-c", script, "sh")
		ws, _ := filepath.EvalSymlinks(s.Workspace)
		must(t, os.WriteFile(filepath.Join(ws, "file"), []byte("x\n"), 0o644))
		for _, r := range rows {
			s.Argv = append(s.Argv, strings.ReplaceAll(r.path, "$WS", ws))
		}
		s.Env = append(s.Env, "HOME="+home)
		s.Allow = []Allow{{Path: filepath.Join(home, "go/pkg/mod")}, {Path: shared, Write: true}}
		_, rec := run(t, s)
		got := strings.Split(strings.TrimSpace(rec.text(Stdout)), "\n")
		if len(got) != len(rows) {
			t.Fatalf("stdout %q (stderr %q)", rec.text(Stdout), rec.text(Stderr))
		}
		for i, r := range rows {
			want := map[Mode]string{ReadOnly: r.ro, WorkspaceWrite: r.ww, FullAccess: r.fa}[m]
			if _, err := os.Stat(strings.ReplaceAll(r.path, "$WS", ws)); want == "?" || err != nil && want != "-" {
				continue // the host's own business, or not on this host
			}
			if os.Geteuid() != 0 && m == FullAccess {
				continue
			}
			if g, _, _ := strings.Cut(got[i], " "); g != want {
				t.Errorf("%s: %s, want %s", r.path, g, want)
			}
		}
	})
}

// A real toolchain build in workspace_write: go build of a module whose
// dependency is in the module cache, allowlisted read-only (DefaultAllow's
// $HOME/go/pkg/mod), with GOCACHE in the private home and no network.
func TestBoundary_GoBuild(t *testing.T) {
	t.Parallel()
	goBin := "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		t.Skip("no Go toolchain at /usr/local/go")
	}
	requireBwrap(t)
	out := outsideDir(t)
	home := filepath.Join(out, "home")
	proxy := filepath.Join(out, "proxy", "example.com", "greet", "@v")
	must(t, os.MkdirAll(proxy, 0o755))
	const mod = "module example.com/greet\n\ngo 1.21\n"
	must(t, os.WriteFile(filepath.Join(proxy, "list"), []byte("v1.0.0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(proxy, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(proxy, "v1.0.0.mod"), []byte(mod), 0o644))
	zf, err := os.Create(filepath.Join(proxy, "v1.0.0.zip"))
	must(t, err)
	zw := zip.NewWriter(zf)
	for name, body := range map[string]string{
		"go.mod":   mod,
		"greet.go": "package greet\n\n// Hello greets.\nfunc Hello(n int) int { return n * 2 }\n",
	} {
		w, err := zw.Create("example.com/greet@v1.0.0/" + name)
		must(t, err)
		_, err = w.Write([]byte(body))
		must(t, err)
	}
	must(t, zw.Close())
	must(t, zf.Close())
	t.Cleanup(func() { // the module cache is read-only
		filepath.WalkDir(home, func(p string, de fs.DirEntry, err error) error {
			if err == nil && de.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})

	ws := filepath.Join(home, "src", "app")
	must(t, os.MkdirAll(ws, 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/app\n\ngo 1.21\n\nrequire example.com/greet v1.0.0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "app.go"), []byte("package app\n\nimport \"example.com/greet\"\n\n// Twice doubles.\nfunc Twice(n int) int { return greet.Hello(n) }\n"), 0o644))
	goEnv := []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "HOME=" + home, "GOTOOLCHAIN=local", "GOSUMDB=off", "GOTELEMETRY=off", "GOFLAGS=-mod=mod"}
	// On the host, once: the dependency into the module cache, go.sum.
	dl := exec.Command(goBin, "mod", "tidy")
	dl.Dir, dl.Env = ws, append(slices.Clone(goEnv), "GOPROXY=file://"+filepath.Join(out, "proxy"), "GOCACHE="+filepath.Join(out, "hostcache"))
	if b, err := dl.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy on the host: %v: %s", err, b)
	}
	if _, err := os.Stat(filepath.Join(home, "go/pkg/mod/example.com/greet@v1.0.0/greet.go")); err != nil {
		t.Fatal(err)
	}

	s := Spec{Argv: []string{"sh", "-c", `go env GOCACHE GOMODCACHE && go build -o app.a . && echo built`},
		Env: append(slices.Clone(goEnv[:len(goEnv)-1]), "GOPROXY=off", "GOFLAGS=-mod=readonly"), Workspace: ws,
		Mode: WorkspaceWrite, Grace: testGrace, Allow: DefaultAllow(home, nil), Limits: Limits{Procs: 256}}
	res, r := run(t, s)
	want := fmt.Sprintf("%s\n%s\nbuilt\n", filepath.Join(home, ".cache/go-build"), filepath.Join(home, "go/pkg/mod"))
	if res.ExitCode != 0 || r.text(Stdout) != want {
		t.Fatalf("exit %d, stdout %q, want %q; stderr %q", res.ExitCode, r.text(Stdout), want, r.text(Stderr))
	}
	if fi, err := os.Stat(filepath.Join(ws, "app.a")); err != nil || fi.Size() == 0 {
		t.Errorf("no build output in the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".cache/go-build")); err == nil {
		t.Errorf("the build cache reached the host's home")
	}
}

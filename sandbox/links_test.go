package sandbox

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// storeMark is the content every file of a fake package store starts with.
const storeMark = "store-original\n"

// pnpmTree lays out node_modules in ws as pnpm does, its package files
// hard links into a content-addressed store outside ws: pkgs packages of
// files files each (package.json, index.js, lib/f<k>.js), each package
// depending on the next through a symbolic link, the first ten linked from
// node_modules, a .bin shim for each of those, pnpm's lock.yaml and
// .modules.yaml, and the project's own package.json and src/index.js. It
// returns the number of hard-linked files in ws.
func pnpmTree(t testing.TB, ws, store string, pkgs, files int) int {
	t.Helper()
	write := func(p, s string) {
		t.Helper()
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(s), 0o644))
	}
	link := func(target, p string) {
		t.Helper()
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.Symlink(target, p))
	}
	n := 0
	nm := filepath.Join(ws, "node_modules")
	for i := 1; i <= pkgs; i++ {
		name := fmt.Sprintf("p%d", i)
		pkg := filepath.Join(nm, ".pnpm", name+"@1.0.0", "node_modules", name)
		for k := 0; k < files; k++ {
			rel := fmt.Sprintf("lib/f%d.js", k)
			switch k {
			case 0:
				rel = "package.json"
			case 1:
				rel = "index.js"
			}
			blob := filepath.Join(store, "v3", "files", fmt.Sprintf("%02x", (i*files+k)%256), fmt.Sprintf("%d-%d", i, k))
			write(blob, storeMark+name+"/"+rel+"\n")
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(pkg, rel)), 0o755))
			must(t, os.Link(blob, filepath.Join(pkg, rel)))
			n++
		}
		if i < pkgs {
			dep := fmt.Sprintf("p%d", i+1)
			link(filepath.Join("..", "..", dep+"@1.0.0", "node_modules", dep), filepath.Join(nm, ".pnpm", name+"@1.0.0", "node_modules", dep))
		}
		if i <= 10 {
			link(filepath.Join(".pnpm", name+"@1.0.0", "node_modules", name), filepath.Join(nm, name))
			write(filepath.Join(nm, ".bin", name), "#!/bin/sh\nexec node "+name+"\n")
		}
	}
	write(filepath.Join(nm, ".pnpm", "lock.yaml"), "lockfileVersion: '9.0'\n")
	write(filepath.Join(nm, ".modules.yaml"), "layoutVersion: 5\n")
	write(filepath.Join(ws, "package.json"), `{"name":"app"}`+"\n")
	write(filepath.Join(ws, "src", "index.js"), "console.log(1)\n")
	return n
}

// storeTouched reports whether a file of the fake store no longer starts
// with storeMark.
func storeTouched(store string) bool {
	touched := false
	filepath.WalkDir(store, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte(storeMark)) {
				touched = true
			}
		}
		return nil
	})
	return touched
}

// What the scan binds read-only for hard links, and what it leaves.
func TestScanWorkspace_Links(t *testing.T) {
	t.Parallel()
	type tree func(t *testing.T, ws, out string)
	file := func(t *testing.T, p string) {
		t.Helper()
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("x\n"), 0o644))
	}
	link := func(t *testing.T, old, new string) {
		t.Helper()
		must(t, os.MkdirAll(filepath.Dir(new), 0o755))
		must(t, os.Link(old, new))
	}
	tests := []struct {
		name         string
		tree         tree
		want         []string // relative to ws
		files, other int
		refused      bool
	}{
		{"NoLinks", func(t *testing.T, ws, out string) { file(t, ws+"/a"); file(t, ws+"/d/b") }, nil, 0, 0, false},
		{"LinkOutside", func(t *testing.T, ws, out string) {
			file(t, out+"/x")
			link(t, out+"/x", ws+"/d/x")
			file(t, ws+"/d/mine")
		}, []string{"d/x"}, 1, 0, false},
		{"BothNamesInside", func(t *testing.T, ws, out string) {
			file(t, ws+"/a")
			link(t, ws+"/a", ws+"/d/a2")
		}, nil, 0, 0, false},
		{"ThreeNamesOneOutside", func(t *testing.T, ws, out string) {
			file(t, ws+"/a")
			link(t, ws+"/a", ws+"/b")
			link(t, ws+"/a", out+"/c")
		}, []string{"a", "b"}, 2, 0, false},
		{"SecondNameOfEnvrc", func(t *testing.T, ws, out string) {
			file(t, ws+"/.envrc")
			link(t, ws+"/.envrc", ws+"/notes")
			link(t, ws+"/.envrc", ws+"/sub/notes")
		}, []string{"notes", "sub"}, 2, 0, false},
		{"SecondNameOfNestedGitConfig", func(t *testing.T, ws, out string) {
			mustRun(t, "git", "init", "-q", ws+"/sub")
			link(t, ws+"/sub/.git/config", ws+"/cfg")
		}, []string{"cfg"}, 1, 0, false},
		{"DirectoryAllLinked", func(t *testing.T, ws, out string) {
			for i := range 3 {
				file(t, fmt.Sprintf("%s/s%d", out, i))
				link(t, fmt.Sprintf("%s/s%d", out, i), fmt.Sprintf("%s/vendor/pkg/f%d", ws, i))
			}
			file(t, ws+"/vendor/mine")
		}, []string{"vendor/pkg"}, 3, 0, false},
		{"PnpmGroupsAtDotPnpm", func(t *testing.T, ws, out string) { pnpmTree(t, ws, out, 80, 3) },
			[]string{"node_modules/.pnpm"}, 240, 1, false},
		{"TooManyAtTheTop", func(t *testing.T, ws, out string) {
			for i := range maxLinkMounts + 1 {
				file(t, fmt.Sprintf("%s/s%d", out, i))
				link(t, fmt.Sprintf("%s/s%d", out, i), fmt.Sprintf("%s/f%d", ws, i))
			}
		}, nil, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, err := filepath.EvalSymlinks(t.TempDir())
			must(t, err)
			out := t.TempDir()
			tt.tree(t, ws, out)
			_, plan, err := scanWorkspace(ws, nil)
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "hard links") {
					t.Fatalf("scan = %v, want a refusal naming hard links", err)
				}
				return
			}
			must(t, err)
			var got []string
			for _, m := range plan.mounts {
				got = append(got, strings.TrimPrefix(m, ws+"/"))
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" || plan.files != tt.files || plan.others != tt.other {
				t.Errorf("mounts (-want +got):\n%s\nfiles %d others %d, want %d %d", diff, plan.files, plan.others, tt.files, tt.other)
			}
		})
	}
}

// A hard link planted before the command, by the host, into a file
// outside: in workspace_write the command cannot write through it (nor
// replace it), and Result.Limits counts it; a file whose names are all in
// the workspace stays writable; in full_access it is written through.
func TestBoundary_HardLinks(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{WorkspaceWrite, FullAccess} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			s := newSpec(t, m, false, "sh", "-c", `
				echo pwned >> planted 2>/dev/null && echo wrote planted
				rm -f planted 2>/dev/null && echo removed planted
				echo ok >> twin && echo wrote twin
				echo ok > new && echo wrote new`)
			target := filepath.Join(out, "target")
			must(t, os.WriteFile(target, []byte("orig\n"), 0o666))
			must(t, os.Link(target, filepath.Join(s.Workspace, "planted")))
			must(t, os.WriteFile(filepath.Join(s.Workspace, "twin"), nil, 0o666))
			must(t, os.Link(filepath.Join(s.Workspace, "twin"), filepath.Join(s.Workspace, "twin2")))
			res, r := run(t, s)
			got, _ := os.ReadFile(target)
			want, wantOut, wantLinked := "orig\n", "wrote twin\nwrote new\n", 1
			if m == FullAccess {
				want, wantOut, wantLinked = "orig\npwned\n", "wrote planted\nremoved planted\nwrote twin\nwrote new\n", 0
			}
			if string(got) != want || r.text(Stdout) != wantOut || res.Limits.LinkedReadOnly != wantLinked {
				t.Errorf("target %q, stdout %q, limits %v; want %q, %q, %d linked", got, r.text(Stdout), res.Limits, want, wantOut, wantLinked)
			}
			if m == WorkspaceWrite && !strings.Contains(res.Limits.String(), "hard links") {
				t.Errorf("limits %q do not say why a file was read-only", res.Limits)
			}
		})
	}
}

// A pnpm-style tree of 6,000 hard links into a store outside the
// workspace: workspace_write needs one mount for them (node_modules/.pnpm,
// its lock.yaml read-only with it), the store stays untouched, and the
// rest of the project, node_modules/.bin and a new node_modules/.cache
// included, stays writable. The scan's time is logged.
func TestBoundary_PnpmTree(t *testing.T) {
	t.Parallel()
	s := newSpec(t, WorkspaceWrite, false, "sh", "-c", `
		echo pwned >> node_modules/p1/index.js 2>/dev/null && echo wrote p1
		echo pwned > node_modules/.pnpm/p300@1.0.0/node_modules/p300/lib/f7.js 2>/dev/null && echo wrote p300
		rm node_modules/.pnpm/p2@1.0.0/node_modules/p2/index.js 2>/dev/null && echo removed p2
		echo ok >> src/index.js && echo ok > src/new.js && echo src-ok
		mkdir -p node_modules/.cache && echo ok > node_modules/.cache/x && echo cache-ok
		echo '# ok' >> node_modules/.bin/p1 && echo bin-ok`)
	store := filepath.Join(t.TempDir(), "store")
	n := pnpmTree(t, s.Workspace, store, 300, 20)
	ws, _ := filepath.EvalSymlinks(s.Workspace)
	begin := time.Now()
	_, plan, err := scanWorkspace(ws, nil)
	t.Logf("scan of %d linked files: %v, %d mounts", n, time.Since(begin), len(plan.mounts))
	must(t, err)
	res, r := run(t, s)
	if got, want := r.text(Stdout), "src-ok\ncache-ok\nbin-ok\n"; got != want {
		t.Errorf("stdout %q, want %q (stderr %q)", got, want, r.text(Stderr))
	}
	if storeTouched(store) {
		t.Errorf("the store was written through the workspace")
	}
	if res.Limits.LinkedReadOnly != n || res.Limits.LinkedWith != 1 || len(plan.mounts) != 1 {
		t.Errorf("limits %v, mounts %q; want %d linked, 1 with them, one mount", res.Limits, plan.mounts, n)
	}
}

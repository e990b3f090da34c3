// Benchmarks come in pairs; compare the halves of each pair from one run,
// not across runs:
//
//	go test -run '^$' -bench . -count 5 ./sandbox/
//
// BenchmarkStart: /bwrap minus /unconfined (ns/op) is what the boundary
// costs per command, Start's probe of bubblewrap included; /probe is that
// probe alone, and /exec is a plain os/exec run of the same command, so
// /unconfined minus /exec is Start's own cost.
//
// BenchmarkOutput: /sandbox against /pipe (MB/s) is what Start costs over
// reading the same bytes from a plain os/exec pipe; /pipe-setsid adds the
// new session every command gets (with sched_autogroup_enabled=1 it is also
// a scheduling group of its own). Most of the gap is the hand-over of each
// buffer from a stream's reader goroutine to the goroutine that calls emit:
// waking it costs tens of µs per 32 KiB on a busy 2-CPU machine, far less
// than storing that chunk in the log will. /tty against /pty is the same
// through a pseudo-terminal, where the kernel's terminal layer is the
// bottleneck.
//
// These machines are noisy: read ratios, and run benchstat over -count 10
// or more before believing a change of less than 20%.
package sandbox

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

func BenchmarkStart(b *testing.B) {
	ws := b.TempDir()
	env := []string{"PATH=/usr/bin:/bin"}
	for _, m := range []struct {
		name string
		mode Mode
	}{{"unconfined", FullAccess}, {"bwrap", ReadOnly}} {
		b.Run(m.name, func(b *testing.B) {
			if m.mode.restricted() {
				if err := Available(b.Context(), ""); err != nil {
					b.Skip(err)
				}
			}
			s := Spec{Argv: []string{"true"}, Env: env, Workspace: ws, Mode: m.mode}
			startLoop(b, s)
		})
	}
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("true")
			cmd.Env, cmd.Dir = env, ws
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("probe", func(b *testing.B) {
		if err := Available(b.Context(), ""); err != nil {
			b.Skip(err)
		}
		for b.Loop() {
			if err := Available(b.Context(), ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkOutput(b *testing.B) {
	const size = 16 << 20
	argv := []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}
	ws := b.TempDir()
	for _, tty := range []bool{false, true} {
		name := "sandbox"
		if tty {
			name = "tty"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			s := Spec{Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}, Workspace: ws, Mode: FullAccess, TTY: tty}
			for b.Loop() {
				var n int64
				p, err := Start(b.Context(), s, func(c Chunk) { n += int64(len(c.Data)) })
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Wait(); err != nil {
					b.Fatal(err)
				}
				if n != size {
					b.Fatalf("got %d bytes, want %d", n, size)
				}
			}
		})
	}
	b.Run("pty", func(b *testing.B) {
		b.SetBytes(size)
		buf := make([]byte, MaxChunk)
		for b.Loop() {
			cmd := exec.Command(argv[0], argv[1:]...)
			f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: TermRows, Cols: TermCols})
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			for {
				k, err := f.Read(buf) // ends with EIO
				n += int64(k)
				if err != nil {
					break
				}
			}
			f.Close()
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			if n != size {
				b.Fatalf("got %d bytes, want %d", n, size)
			}
		}
	})
	for _, setsid := range []bool{false, true} {
		name := "pipe"
		if setsid {
			name = "pipe-setsid"
		}
		b.Run(name, func(b *testing.B) { benchPipe(b, argv, size, setsid) })
	}
}

// benchPipe reads the output of argv from a plain os/exec pipe, optionally
// with the new session every Start uses.
func benchPipe(b *testing.B, argv []string, size int64, setsid bool) {
	b.SetBytes(size)
	buf := make([]byte, MaxChunk)
	for b.Loop() {
		cmd := exec.Command(argv[0], argv[1:]...)
		if setsid {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		var n int64
		for {
			k, err := out.Read(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		if n != size {
			b.Fatalf("got %d bytes, want %d", n, size)
		}
	}
}

// BenchmarkStartWW: a restricted `true`, bubblewrap probed once: what each
// command of a worker costs, /workspace_write with its search of the
// workspace and its placeholders (made and removed on the host: rmdir is
// the dear part on a disk mounted with discard).
func BenchmarkStartWW(b *testing.B) {
	ws := b.TempDir()
	for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
		b.Run(string(mode), func(b *testing.B) {
			s := Spec{Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}, Workspace: ws, Mode: mode, Probed: true}
			startLoop(b, s)
		})
	}
}

// BenchmarkLayout: what Start computes on the host before bubblewrap
// runs: /etc-secrets is the search of /etc for files other users may not
// read, part of every restricted start; /read_only is the whole layout;
// /claim is workspace_write's lock of the workspace and its placeholders,
// made and removed.
func BenchmarkLayout(b *testing.B) {
	ws := b.TempDir()
	b.Run("etc-secrets", func(b *testing.B) {
		for b.Loop() {
			etcSecrets("/etc")
		}
	})
	b.Run("read_only", func(b *testing.B) {
		for b.Loop() {
			newLayout(ReadOnly, ws, ws, "/root", DefaultAllow("/root", nil), nil, nil)
		}
	})
	b.Run("claim", func(b *testing.B) {
		for b.Loop() {
			l := newLayout(WorkspaceWrite, ws, ws, "", nil, nil, nil)
			if err := l.claim(context.Background(), func() (layout, error) { return l, nil }); err != nil {
				b.Fatal(err)
			}
			l.release()
		}
	})
}

// BenchmarkStart_PnpmTree: a workspace_write `true` in a project whose
// node_modules pnpm laid out, 300 packages of 20 files (6,000 files),
// /copies with files of their own, /hardlinks with hard links into a
// store outside the workspace (bound read-only as node_modules/.pnpm, one
// mount); /scan is the search of the workspace alone, hard links
// included.
func BenchmarkStart_PnpmTree(b *testing.B) {
	for _, links := range []bool{false, true} {
		ws, store := b.TempDir(), b.TempDir()
		pnpmTree(b, ws, store, 300, 20)
		name := "hardlinks"
		if !links {
			name = "copies"
			// Break every link: a copy of each file in place.
			filepath.WalkDir(ws, func(p string, de fs.DirEntry, err error) error {
				if err == nil && de.Type().IsRegular() {
					data, _ := os.ReadFile(p)
					os.Remove(p)
					os.WriteFile(p, data, 0o644)
				}
				return nil
			})
		}
		b.Run(name, func(b *testing.B) {
			s := Spec{Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}, Workspace: ws, Mode: WorkspaceWrite, Probed: true}
			startLoop(b, s)
		})
		b.Run(name+"/scan", func(b *testing.B) {
			real, _ := filepath.EvalSymlinks(ws)
			for b.Loop() {
				if _, _, err := scanWorkspace(real, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// startLoop starts s and waits for it, again and again for as long as b
// loops; a start that fails or a command that does not exit 0 fails b.
func startLoop(b *testing.B, s Spec) {
	b.Helper()
	for b.Loop() {
		p, err := Start(b.Context(), s, nil)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := p.Wait(); err != nil || res.ExitCode != 0 {
			b.Fatalf("Wait = %+v, %v", res, err)
		}
	}
}

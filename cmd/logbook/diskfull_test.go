package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
	"github.com/logbook-dev/logbook/events"
)

// mountTmpfs mounts a tmpfs of size bytes at dir (created if absent) and
// unmounts it when the test ends. It skips the test when not root or
// when the mount is refused (a container without CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs mounted for the test: needs root")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		for i := 0; ; i++ {
			err := syscall.Unmount(dir, 0)
			if err == nil || i == 50 {
				if err != nil {
					_ = syscall.Unmount(dir, syscall.MNT_DETACH)
				}
				return
			}
			time.Sleep(100 * time.Millisecond) // a process still exiting holds it busy
		}
	})
}

// fillDisk writes a file in dir until the file system refuses more
// (ENOSPC), first in large writes then in small ones, and returns its
// path; removing it frees the disk.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int{1 << 20, 4 << 10, 512, 1} {
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill %s: %v", path, err)
				}
				break
			}
		}
	}
	return path
}

// diskFull is one full-disk run: a serve on a data dir part of which is a
// small tmpfs, hooks sent by `logbook hook claude` all along.
type diskFull struct {
	*soak
	sid     string
	hookBin string
	mu      sync.Mutex
	acked   []string // tool_use_ids of the hooks acknowledged (exit 0)
	tried   int
	phase   string // "before", "full", "freed"
	per     map[string][2]int
}

func (d *diskFull) hookLoop(ctx context.Context) {
	for n := 0; ctx.Err() == nil; n++ {
		tool := fmt.Sprintf("toolu_disk_%d", n)
		payload := fmt.Appendf(nil, `{"session_id":%q,"transcript_path":"/home/user/.claude/projects/p/%s.jsonl","cwd":"/home/user/project","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_use_id":%q}`,
			d.sid, d.sid, tool)
		// In turn through logbook-hook (the socket, into serve's journal)
		// and logbook hook claude (the API, appending at once).
		var out []byte
		var err error
		if n%2 == 0 {
			out, err = d.runHook(ctx, payload)
		} else {
			out, err = d.run(ctx, payload, "hook", "claude")
		}
		if ctx.Err() != nil {
			return
		}
		d.mu.Lock()
		p := d.per[d.phase]
		p[0]++
		if err == nil {
			p[1]++
			d.acked = append(d.acked, tool)
		} else if p[0]-p[1] <= 3 {
			d.t.Logf("hook %s (%s) not acknowledged: %v: %s", tool, d.phase, err, strings.TrimSpace(string(out)))
		}
		d.per[d.phase] = p
		d.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

// runHook runs logbook-hook claude on the data dir with payload.
func (d *diskFull) runHook(ctx context.Context, payload []byte) ([]byte, error) {
	return d.runCommand(d.commandOf(ctx, d.hookBin, payload, "claude"))
}

// hookBuild builds logbook-hook beside the logbook binary bin (where it
// finds logbook for what it does not handle itself), once.
func hookBuild(t *testing.T, bin string) string {
	t.Helper()
	return fastHookBin.get(t, func() (string, error) {
		return goBuild("../logbook-hook", filepath.Join(filepath.Dir(bin), "logbook-hook"))
	})
}

// fastHookBin is the logbook-hook binary hookBuild built.
var fastHookBin goBinary

func (d *diskFull) setPhase(p string) {
	d.mu.Lock()
	d.phase = p
	d.mu.Unlock()
}

func (d *diskFull) ackedIn(p string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.per[p][1]
}

// logged reads the whole log from the running server and counts each
// hook's observations by tool_use_id.
func (d *diskFull) logged(ctx context.Context) (map[string]int, error) {
	seen := map[string]int{}
	err := d.readLog(ctx, func(r events.Record) {
		if o, ok := events.Observed(r.Data); ok && r.Type == "obs.claude.hook" {
			if i := strings.LastIndex(o.Key, ":"); i >= 0 {
				seen[o.Key[i+1:]]++
			}
		}
	})
	return seen, err
}

// Each part of the data dir filled under a running serve, hooks flowing,
// and freed: serve takes appends again without a restart, every hook
// acknowledged is in the log once. The parts: JetStream's store (and its
// metadata, in the same directory), Pebble's views, and the whole data
// dir (the hook journal and the spool with the rest).
func TestDiskFullRecovers(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	for _, part := range []string{"jetstream", "views", "data"} {
		t.Run(part, func(t *testing.T) {
			t.Parallel() // a tmpfs and a serve of its own
			testDiskFull(t, part)
		})
	}
}

func testDiskFull(t *testing.T, part string) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	disk := data
	if part != "data" {
		disk = filepath.Join(data, part)
	}
	mountTmpfs(t, disk, 48<<20)
	s := &soak{t: t, bin: soakBuild(t), data: data}
	t.Cleanup(s.procs.killAll)
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(root, "serve.log"))
		if keep := os.Getenv("LOGBOOK_DISKFULL_LOG"); keep != "" && err == nil {
			os.WriteFile(keep+"-"+part, b, 0o644)
		}
		if err == nil && (t.Failed() || testing.Verbose()) {
			t.Logf("serve.log (tail):\n%s", tailString(string(b), 3000))
		}
	})
	d := &diskFull{soak: s, hookBin: hookBuild(t, s.bin), sid: "disk-" + part, phase: "before", per: map[string][2]int{}}
	ctx := t.Context()
	s.startServe(ctx)

	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { d.hookLoop(load) })
	waitFor(t, time.Minute, "10 hooks acknowledged before the fill", func() bool { return d.ackedIn("before") >= 10 })

	d.setPhase("full")
	filler := fillDisk(t, disk)
	full := time.Now()
	// Hooks go on against the full disk for a while; doctor says so.
	var doc string
	waitFor(t, 30*time.Second, "doctor saying appends are paused", func() bool {
		out, _ := s.run(ctx, nil, "doctor")
		doc = string(out)
		return strings.Contains(doc, "appends paused: disk full since")
	})
	if part == "jetstream" {
		// A session whose SessionStart serve took into its journal
		// while the disk is full: exec on it says appends are paused,
		// not only that the session is not there.
		ws := filepath.Join(root, "ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		start := fmt.Appendf(nil, `{"session_id":"paused-new","hook_event_name":"SessionStart","cwd":%q,"source":"startup"}`, ws)
		if out, err := d.runHook(ctx, start); err != nil {
			t.Fatalf("hook on the full disk: %v\n%s", err, out)
		}
		out, err := s.run(ctx, nil, "exec", "--session", "paused-new", "--workspace", ws, "--", "true")
		if err == nil || !strings.Contains(string(out), "appends paused: disk full since") || !strings.Contains(string(out), "wait in its journal") {
			t.Errorf("exec on a session whose hooks wait for the disk: %v\n%s", err, out)
		}
		// A hook taken into serve's journal now (by its socket, as
		// logbook-hook sends one with nothing in its spool) waits there
		// for the disk. A read answers from the projection as it
		// stands, saying that such hooks are not in it, rather than
		// failing on the wait for them.
		req, _ := json.Marshal(api.HookRequest{ID: ulid.Make().String(), Text: fmt.Sprintf(
			`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-full","prompt":"while the disk is full"}`, d.sid)})
		ans, err := hooksock.Call(data, req, time.Now().Add(30*time.Second))
		var reply struct {
			Data api.HookReply `json:"data"`
		}
		if err != nil || json.Unmarshal(ans, &reply) != nil || reply.Data.Queued == 0 {
			t.Fatalf("hook by the socket while the disk is full: %v: %s, want it queued in the journal", err, ans)
		}
		// Both reads at once; neither waits for the hook that stays in
		// the journal (TestDiskFullReadsAtOnce).
		var reads sync.WaitGroup
		reads.Go(func() {
			out, err := s.run(ctx, nil, "sessions")
			if err != nil || !strings.Contains(string(out), "appends paused since") || !strings.Contains(string(out), "in its journal, not shown") {
				t.Errorf("sessions while a hook waits for the disk: %v\n%q", err, out)
			}
		})
		reads.Go(func() {
			out, err := s.run(ctx, nil, "sessions", "--json")
			if err != nil || !strings.Contains(string(out), `"appends_paused_since"`) || !strings.Contains(string(out), `"hooks_waiting"`) {
				t.Errorf("sessions --json while a hook waits for the disk: %v\n%s", err, out)
			}
		})
		reads.Wait()
	}
	time.Sleep(time.Until(full.Add(3 * time.Second)))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d.setPhase("freed")
	freed := time.Now()
	waitFor(t, 2*time.Minute, "10 hooks acknowledged after the disk was freed", func() bool { return d.ackedIn("freed") >= 10 })
	resumed := time.Since(freed)
	waitFor(t, 30*time.Second, "doctor saying appends go on", func() bool {
		out, _ := s.run(ctx, nil, "doctor")
		return !strings.Contains(string(out), "appends paused")
	})
	stop()
	wg.Wait()

	// Everything acknowledged reaches the log: wait until the journal
	// and the spool are empty and the views caught up.
	var seen map[string]int
	waitFor(t, 2*time.Minute, "every acknowledged hook in the log", func() bool {
		var err error
		seen, err = d.logged(ctx)
		if err != nil {
			return false
		}
		for _, id := range d.acked {
			if seen[id] == 0 {
				return false
			}
		}
		return len(s.spooled()) == 0
	})
	var lost, doubled, appended int
	for _, id := range d.acked {
		switch c := seen[id]; {
		case c == 0:
			lost++
		case c > 1:
			doubled += c - 1
		}
	}
	for _, c := range seen {
		appended += c
		if c > 1 {
			t.Errorf("a hook is in the log %d times", c)
		}
	}
	t.Logf("disk full (%s, %s): hooks sent %d, acknowledged %d (while full: %d of %d), appended %d, lost %d, doubled %d; full for %s, appending again %s after the disk was freed",
		part, disk, d.per["before"][0]+d.per["full"][0]+d.per["freed"][0], len(d.acked), d.per["full"][1], d.per["full"][0], appended, lost, doubled,
		freed.Sub(full).Round(time.Millisecond), resumed.Round(time.Millisecond))
	if lost > 0 || doubled > 0 {
		t.Errorf("lost %d, doubled %d", lost, doubled)
	}
}

// serve started on a data dir whose disk has less than the log's reserve
// free (diskfull.MinReserve on these small disks) exits 1 at once with
// one error that names the data dir, the space free, the reserve serve
// needs and what to do, not the held append's own words: free space, or,
// on a file system no larger than the reserve, use a larger one.
func TestDiskUnderReserveServeStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		size int64 // of the tmpfs
		left int64 // bytes left free by a filler; 0: none
		do   string
	}{
		{"small", 5 << 20, 0, `that file system holds 5 MiB in all: put the data dir \(--data\) on a larger one, or grow this one, and start serve again`},
		{"short", 64 << 20, 8 << 20, `free at least [0-9.]+ MiB more there and start serve again`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			mountTmpfs(t, root, c.size)
			if c.left > 0 {
				var st syscall.Statfs_t
				if err := syscall.Statfs(root, &st); err != nil {
					t.Fatal(err)
				}
				f, err := os.Create(filepath.Join(root, "filler"))
				if err == nil {
					err = syscall.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize-c.left)
					f.Close()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			data := filepath.Join(root, "data")
			began := time.Now()
			_, errOut, code := cliExit(t, data, "serve", "--http", "off", "--no-watch", "--listen", "127.0.0.1:0")
			took := time.Since(began)
			said := regexp.MustCompile(`^serve cannot start on ` + regexp.QuoteMeta(data) + `: the disk under its log \(` + regexp.QuoteMeta(filepath.Join(data, "jetstream")) +
				`\) has [0-9.]+ MiB free, and serve needs 16 MiB free there \(the log's reserve: [^)]*\); ` + c.do + `$`)
			if code != 1 || !said.MatchString(lastLineOf(errOut)) || strings.Contains(errOut, "natslog") || strings.Contains(errOut, "appends go on") || took > time.Minute {
				t.Errorf("serve with %d bytes free on a %d MiB disk: exit %d after %s, want 1 and %s:\n%s", c.left, c.size>>20, code, took.Round(time.Millisecond), said, errOut)
			}
		})
	}
}

// The read commands, while the data dir's disk is full and a hook serve
// took waits in its journal, answer at once from serve's projection and
// say so: neither the status they ask serve for first nor the read
// waits for the hooks the journal holds (each such wait is
// api.IntakeWait).
func TestDiskFullReadsAtOnce(t *testing.T) {
	t.Parallel() // its own data dir, tmpfs and serve
	root := t.TempDir()
	data := filepath.Join(root, "data")
	mountTmpfs(t, data, 40<<20)
	s := &soak{t: t, bin: soakBuild(t), data: data}
	t.Cleanup(s.procs.killAll)
	hookBin := hookBuild(t, s.bin)
	ctx := t.Context()
	s.startServe(ctx)
	const sid = "full-reads"
	start := fmt.Appendf(nil, `{"session_id":%q,"hook_event_name":"SessionStart","cwd":"/tmp","source":"startup"}`, sid)
	if out, err := s.runCommand(s.commandOf(ctx, hookBin, start, "claude")); err != nil {
		t.Fatalf("SessionStart: %v\n%s", err, out)
	}
	waitFor(t, 30*time.Second, "the session listed", func() bool {
		out, err := s.run(ctx, nil, "sessions")
		return err == nil && strings.Contains(string(out), sid)
	})
	fillDisk(t, data)
	waitFor(t, 30*time.Second, "doctor saying appends are paused", func() bool {
		out, _ := s.run(ctx, nil, "doctor")
		return strings.Contains(string(out), "appends paused: disk full since")
	})
	req, _ := json.Marshal(api.HookRequest{ID: ulid.Make().String(), Text: fmt.Sprintf(
		`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-full","prompt":"while the disk is full","cwd":"/tmp"}`, sid)})
	ans, err := hooksock.Call(data, req, time.Now().Add(30*time.Second))
	var reply struct {
		Data api.HookReply `json:"data"`
	}
	if err != nil || json.Unmarshal(ans, &reply) != nil || reply.Data.Queued == 0 {
		t.Fatalf("hook by the socket while the disk is full: %v: %s, want it queued in the journal", err, ans)
	}
	// A wait for the hooks the journal holds lasts api.IntakeWait at
	// least (the status ask and its retry waited it twice); a read that
	// waits for none takes a process's start and a read: up to 2 s
	// under the race detector on a loaded 2-core machine.
	const within = api.IntakeWait
	for _, args := range [][]string{{"sessions"}, {"sessions", "--json"}, {"session", "show", sid}, {"commands"}, {"commands", "--json"}} {
		want := "in its journal, not shown"
		if args[len(args)-1] == "--json" {
			want = `"hooks_waiting":1`
		}
		began := time.Now()
		out, err := s.run(ctx, nil, args...)
		took := time.Since(began)
		t.Logf("%s: %s", args, took.Round(time.Millisecond))
		if err != nil || !strings.Contains(string(out), want) || took > within {
			t.Errorf("%s while a hook waits for the disk: %v after %s (want at most %s, saying %q):\n%.2000s",
				args, err, took.Round(time.Millisecond), within, want, out)
		}
	}
}

// waitFor polls cond every 50 ms until it holds, failing the test with
// what after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool, last ...func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			var said string
			for _, f := range last {
				said += "\n" + f()
			}
			t.Fatalf("no %s within %s%s", what, within, said)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tailString returns the last n bytes of s.
func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// The probe tells a full disk and a read-only one from one that takes
// writes, and the pause it drives says since when. (A tmpfs with files
// open for writing refuses a read-only remount, EBUSY, so the read-only
// case is this probe's, not a running serve's.)
func TestDiskPauseProbe(t *testing.T) {
	t.Parallel()
	disk := filepath.Join(t.TempDir(), "disk")
	mountTmpfs(t, disk, 4<<20)
	if why := diskfull.Probe(disk, true); why != "" {
		t.Fatalf("empty disk: %s", why)
	}
	var logs syncBuffer
	p := diskfull.NewPause(func(format string, args ...any) { fmt.Fprintf(&logs, format+"\n", args...) })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Watch(ctx, []string{disk}, nil) }()
	defer func() { cancel(); <-done }()

	filler := fillDisk(t, disk)
	if why := diskfull.Probe(disk, false); !strings.Contains(why, "bytes free") {
		t.Errorf("full disk: probe says %q", why)
	}
	waitFor(t, 30*time.Second, "pause on the full disk", func() bool { return strings.HasPrefix(p.String(), "appends paused: disk full since ") })
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "pause ended after the disk was freed", func() bool { return p.String() == "" })

	if err := syscall.Mount("", disk, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	if why := diskfull.Probe(disk, true); why != "read-only file system" {
		t.Errorf("read-only disk: probe says %q", why)
	}
	waitFor(t, 30*time.Second, "pause on the read-only disk", func() bool { return strings.Contains(p.String(), "read-only file system") })
	if err := syscall.Mount("", disk, "", syscall.MS_REMOUNT, ""); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}
	waitFor(t, 30*time.Second, "pause ended after the remount", func() bool { return p.String() == "" })
	if got := logs.String(); !strings.Contains(got, "appends resumed") || !strings.Contains(got, "WARN: appends paused: disk full since") {
		t.Errorf("log (want the pause said as a fault, WARN): %s", got)
	}
}

// An import while JetStream's store is full fails with an error saying
// so, acknowledging nothing it did not append; once the disk is freed,
// serve takes appends again and the same import appends every line
// once.
func TestDiskFullImport(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	root := t.TempDir()
	data := filepath.Join(root, "data")
	disk := filepath.Join(data, "jetstream")
	mountTmpfs(t, disk, 48<<20)
	s := &soak{t: t, bin: soakBuild(t), data: data, dir: filepath.Join(root, "projects")}
	t.Cleanup(s.procs.killAll)
	ts, err := bench.NewSynthTranscripts(s.dir, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if err := tr.Grow(200, false); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	s.startServe(ctx)
	filler := fillDisk(t, disk)
	var doctor string
	waitFor(t, 30*time.Second, "doctor saying appends are paused", func() bool {
		out, _ := s.run(ctx, nil, "doctor")
		doctor = string(out)
		return strings.Contains(doctor, "appends paused: disk full since")
	}, func() string {
		var st syscall.Statfs_t
		_ = syscall.Statfs(disk, &st)
		log, _ := os.ReadFile(filepath.Join(root, "serve.log"))
		return fmt.Sprintf("%s: %d bytes free\ndoctor last said:\n%s\nserve.log ends:\n%s", disk, int64(st.Bavail)*st.Bsize, doctor, tailString(string(log), 4000))
	})
	out, err := s.run(ctx, nil, "import", "claude", s.dir)
	if err == nil {
		t.Fatalf("import on the full disk succeeded:\n%s", out)
	}
	fullOut := string(out)
	if !strings.Contains(fullOut, "serve says appends paused: disk full since") {
		t.Errorf("import on the full disk does not say why:\n%s", fullOut)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "an import that succeeds after the disk was freed", func() bool {
		_, err := s.run(ctx, nil, "import", "claude", s.dir)
		return err == nil
	})
	total, lost, doubled := s.linesOnce(ctx, ts)
	t.Logf("import on a full JetStream store: %s; after the disk was freed: lines %d, lost %d, doubled %d", lastLineOf(fullOut), total, lost, doubled)
	if lost > 0 || doubled > 0 {
		t.Errorf("lost %d, doubled %d", lost, doubled)
	}
}

// An import that fills the disk under the log itself, through serve or
// with none running (its own server): appends are held before the disk
// is full, so that every atomic batch is stored whole or refused whole (a
// single server commits a batch message by message, and a disk that
// fills part way through a commit leaves it cut), and the import says
// so; its summary counts what it appended, which the next import, once
// space is freed, finds already in the log, no more. Every line is in
// the log once, and every decision whole: the sessions the import
// stopped in decide today as they did (replay --rederive).
func TestDiskFullImportFillsIt(t *testing.T) {
	t.Parallel() // its own data dirs, processes and ports: beside the other slow tests
	for _, serve := range []bool{true, false} {
		t.Run(map[bool]string{true: "serve", false: "no serve"}[serve], func(t *testing.T) {
			t.Parallel()
			testImportFillsDisk(t, serve)
		})
	}
}

func testImportFillsDisk(t *testing.T, serve bool) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	disk := filepath.Join(data, "jetstream")
	const size = 64 << 20
	mountTmpfs(t, disk, size)
	s := &soak{t: t, bin: soakBuild(t), data: data, dir: filepath.Join(root, "projects")}
	t.Cleanup(s.procs.killAll)
	ts, err := bench.NewSynthTranscripts(s.dir, 120, false)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, tr := range ts {
		if err := tr.Grow(40, false); err != nil {
			t.Fatal(err)
		}
	}
	filepath.WalkDir(s.dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				bytes += fi.Size()
			}
		}
		return nil
	})
	ctx := t.Context()
	if serve {
		s.startServe(ctx)
	} else if err := os.MkdirAll(disk, 0o700); err != nil {
		t.Fatal(err)
	}
	// Room for a part of the import: past the reserve, less than the
	// transcripts' bytes (the log stores each line's observation and
	// more).
	reserve, err := diskfull.Reserve(disk)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	room := reserve + 3*bytes
	filler := filepath.Join(disk, "filler")
	if left := int64(st.Bavail) * st.Bsize; left > room {
		f, err := os.Create(filler)
		if err == nil {
			err = syscall.Fallocate(int(f.Fd()), 0, 0, left-room)
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := s.run(ctx, nil, "import", "claude", s.dir)
	first := string(out)
	if err == nil {
		t.Fatalf("an import of %d bytes of transcripts into %d bytes of room succeeded:\n%s", bytes, room, lastLineOf(first))
	}
	said := "appends are held so that no atomic batch is cut" // serve's pause
	if !serve {
		said = "appends held: the disk under the log's store is short of its reserve of free space"
	}
	if !strings.Contains(first, said) {
		t.Errorf("the import that filled the disk does not say appends are held:\n%s", tailString(first, 2000))
	}
	appended := summaryCount(t, first, `(\d+) lines? appended`)
	if already := summaryCount(t, first, `(\d+) already in the log`); already != 0 || appended == 0 {
		t.Errorf("first import into an empty log: %d appended, %d already in the log", appended, already)
	}
	if err := os.Remove(filler); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var second string
	waitFor(t, 2*time.Minute, "an import that succeeds after the disk was freed", func() bool {
		out, err := s.run(ctx, nil, "import", "claude", s.dir)
		second = string(out)
		return err == nil
	}, func() string { return tailString(second, 2000) })
	if already := summaryCount(t, second, `(\d+) already in the log`); already != appended {
		t.Errorf("the import after the disk was freed finds %d lines already in the log; the one that filled it said it appended %d:\n%s\n%s", already, appended, lastLineOf(first), lastLineOf(second))
	}
	// Each line once.
	if !serve {
		s.startServe(ctx) // to read the log through
	}
	total, lost, doubled := s.linesOnce(ctx, ts)
	t.Logf("%d lines, %d bytes of transcripts, %d bytes of room (reserve %d): %s; then %s", total, bytes, room, reserve, lastLineOf(first), lastLineOf(second))
	if lost > 0 || doubled > 0 {
		t.Errorf("lost %d, doubled %d of %d lines", lost, doubled, total)
	}
	// A decision cut by the disk leaves a line's observation without
	// what it decided: decided again today, it differs.
	stopped := map[string]bool{}
	for _, m := range regexp.MustCompile(`append session/([0-9a-f-]+)`).FindAllStringSubmatch(first, -1) {
		stopped[m[1]] = true
	}
	if len(stopped) == 0 {
		t.Fatalf("the first import names no session it stopped in:\n%s", tailString(first, 2000))
	}
	for sid := range stopped {
		if out, err := s.run(ctx, nil, "replay", "--rederive", "--session", sid); err != nil {
			audit, _ := s.run(ctx, nil, "audit", sid)
			t.Errorf("replay --rederive --session %s: %v\n%s\naudit:\n%s", sid, err, tailString(string(out), 2000), tailString(string(audit), 3000))
		}
	}
}

// linesOnce reads the log through the running serve and counts the
// lines of ts's transcripts (their obs.claude.line events): all of them,
// those the log lacks and those it holds more than once.
func (s *soak) linesOnce(ctx context.Context, ts []*bench.SynthTranscript) (total, lost, doubled int) {
	lines := map[string]map[int]int{}
	err := s.readLog(ctx, func(r events.Record) {
		if o, ok := events.Observed(r.Data); ok && r.Type == "obs.claude.line" {
			if lines[r.Agg.ID] == nil {
				lines[r.Agg.ID] = map[int]int{}
			}
			lines[r.Agg.ID][o.Line]++
		}
	})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, tr := range ts {
		total += tr.Lines
		for n := 1; n <= tr.Lines; n++ {
			switch c := lines[tr.Aggregate()][n]; {
			case c == 0:
				lost++
			case c > 1:
				doubled += c - 1
			}
		}
	}
	return total, lost, doubled
}

// summaryCount returns the number pattern's one group matches in an
// import's summary line ("imported …"), 0 when it does not match.
func summaryCount(t *testing.T, out, pattern string) int {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "imported ") {
			continue
		}
		if m := regexp.MustCompile(pattern).FindStringSubmatch(l); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// lastLineOf returns the last non-empty line of s.
func lastLineOf(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}

// A data dir on a file system remounted read-only: a read says why it
// cannot run and what to do, and doctor fails the data dir check.
func TestReadOnlyDataDir(t *testing.T) {
	root := t.TempDir()
	mountTmpfs(t, root, 64<<20)
	data := filepath.Join(root, "data")
	cli(t, data, "import", "claude", "../../testdata/claude/projects")
	if err := syscall.Mount("", root, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("remount read-only: %v", err)
	}
	_, errOut, code := cliExit(t, data, "sessions")
	if code != 1 || !strings.Contains(errOut, "read-only file system") || !strings.Contains(errOut, "cp -a") {
		t.Errorf("sessions on a read-only data dir: exit %d:\n%s", code, errOut)
	}
	out, _, _ := cliExit(t, data, "doctor")
	var line string
	for l := range strings.Lines(out) {
		if strings.Contains(l, "data dir") {
			line = l
			break
		}
	}
	if !strings.Contains(line, "read-only file system") || !strings.Contains(strings.ToLower(line), "fail") {
		t.Errorf("doctor on a read-only data dir: %q\n%s", line, out)
	}
	// serve refuses it, and asks for what would mend it: a read-write
	// mount, not free space.
	_, errOut, code = cliExit(t, data, "serve", "--http", "off", "--no-watch")
	if code != 1 || !strings.Contains(errOut, "read-only file system") || !strings.Contains(errOut, "remount it read-write") || strings.Contains(errOut, "free space") {
		t.Errorf("serve on a read-only data dir: exit %d:\n%s", code, errOut)
	}
}

// serve started on a data dir whose JetStream store is full, first made
// then after a stop: it fails, and the error names the part of the data
// dir that takes no writes and what to do, whatever the server answered.
func TestDiskFullServeStart(t *testing.T) {
	t.Parallel() // its own data dir and tmpfs; it mostly waits for processes
	root := t.TempDir()
	data := filepath.Join(root, "data")
	disk := filepath.Join(data, "jetstream")
	mountTmpfs(t, disk, 32<<20) // past the log's reserve (diskfull.MinReserve) once freed
	s := &soak{t: t, bin: soakBuild(t), data: data, dir: filepath.Join(root, "projects")}
	t.Cleanup(s.procs.killAll)
	for _, made := range []bool{false, true} {
		if made {
			ctx, cancel := context.WithCancel(t.Context())
			srv, _ := s.startServe(ctx)
			cancel()
			<-srv.gone
		}
		filler := fillDisk(t, disk)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		out, err := s.run(ctx, nil, "serve", "--listen", "127.0.0.1:0")
		waited := ctx.Err()
		cancel()
		if err == nil || waited != nil {
			t.Fatalf("serve on a full store (made before: %v): err %v, ctx %v\n%s", made, err, waited, out)
		}
		if want := disk + " takes no writes (0 bytes free): free space there and start serve again"; !strings.Contains(string(out), want) {
			t.Errorf("serve on a full store (made before: %v) does not say %q:\n%s", made, want, out)
		}
		// doctor, with no serve running, fails the data dir for it.
		dctx, dcancel := context.WithTimeout(t.Context(), time.Minute)
		doc, derr := s.run(dctx, nil, "doctor")
		dcancel()
		if want := regexp.MustCompile(`(?m)^fail +data dir +` + regexp.QuoteMeta(disk) + ` takes no writes \(0 bytes free\)`); derr == nil || !want.Match(doc) {
			t.Errorf("doctor on a full store (made before: %v): %v\n%s", made, derr, doc)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
}

// A hook while serve holds its appends because the disk under the log's
// store is short of its reserve of free space: `logbook hook claude`,
// whether its own append is refused or the hooks serve's journal took
// before it (from logbook-hook) wait for the disk, keeps the payload in
// the spool and says why at once (serve answers so), not after its own
// wait ran out with a timeout that says nothing of the disk. Once space
// is freed serve delivers what waits.
func TestDiskHeldHookSaysWhy(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	root := t.TempDir()
	data := filepath.Join(root, "data")
	disk := filepath.Join(data, "jetstream")
	mountTmpfs(t, disk, 48<<20)
	s := &soak{t: t, bin: soakBuild(t), data: data}
	t.Cleanup(s.procs.killAll)
	hookBin := hookBuild(t, s.bin)
	ctx := t.Context()
	s.startServe(ctx)
	// Room for a few hooks, under the reserve (16 MiB): held, not full.
	reserve, err := diskfull.Reserve(disk)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err == nil {
		err = syscall.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize-reserve/2)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "doctor saying appends are paused", func() bool {
		out, _ := s.run(ctx, nil, "doctor")
		return strings.Contains(string(out), "appends are held so that no atomic batch is cut")
	})
	hook := func(sid, prompt string) []byte {
		return fmt.Appendf(nil, `{"session_id":%q,"transcript_path":"/home/user/.claude/projects/p/%s.jsonl","cwd":"/home/user/project","hook_event_name":"UserPromptSubmit","prompt_id":%q,"prompt":"while the disk is short"}`, sid, sid, prompt)
	}
	said := regexp.MustCompile(`^logbook hook: kept in spool: serve holds appends: the disk under the log's store is short of its reserve of free space \(\d+ bytes free under \S+, under the log's reserve of \d+ MiB\); delivered when the disk frees\n$`)
	check := func(what string, payload []byte) {
		t.Helper()
		start := time.Now()
		out, err := s.run(ctx, payload, "hook", "claude")
		if took := time.Since(start); err != nil || !said.Match(out) || took > 1500*time.Millisecond {
			t.Errorf("hook claude (%s) while appends are held: %v after %s:\n%s", what, err, took.Round(time.Millisecond), out)
		}
	}
	check("its own append", hook("held-1", "p1"))
	// The spool emptied by hand, for logbook-hook to hand its hook to
	// serve's journal (with entries waiting it spools behind them).
	sp, err := claude.Open(dataDir(data).path("spool"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range s.spooled() {
		if err := sp.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.runCommand(s.commandOf(ctx, hookBin, hook("held-2", "p2"), "claude")); err != nil || len(out) != 0 {
		t.Fatalf("logbook-hook while appends are held: %v: %s, want it taken into serve's journal", err, out)
	}
	check("behind serve's journal", hook("held-2", "p3"))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the spool delivered once space is freed", func() bool { return len(s.spooled()) == 0 })
}

// Read commands without serve on a data dir whose disk is full, with
// no projections yet and with projections made before: each fails at
// once, exit 1, naming the folder, the disk and the fix, never with
// Pebble's panic (it fails for good writing its MANIFEST, from
// goroutines of its own) or a flush tried again and again; freed, they
// answer again.
func TestDiskFullReadsWithoutServe(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mountTmpfs(t, root, 32<<20)
	data := filepath.Join(root, "data")
	cli(t, data, "import", "claude", "../../testdata/claude/projects")
	for _, made := range []bool{false, true} {
		if made {
			cli(t, data, "sessions")
		}
		filler := fillDisk(t, root)
		for _, args := range [][]string{{"sessions"}, {"commands"}, {"replay", "--verify"}} {
			_, errOut, code := cliExit(t, data, args...)
			want := "projections in " + filepath.Join(data, "views") + " cannot be opened: the disk there takes no writes (0 bytes free); free space there and run the command again"
			if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine") {
				t.Errorf("%s on a full disk (projections made before: %v): exit %d, want 1 and %q:\n%.2000s", args, made, code, want, errOut)
			}
		}
		if !made {
			// A hook with no serve to take its payload and no room in
			// the spool: not recorded, and it says so and what to do.
			bin := soakBuild(t)
			for _, hook := range [][]string{{bin, "--data", data, "hook", "claude"}, {hookBuild(t, bin), "--data", data, "claude"}} {
				c := exec.Command(hook[0], hook[1:]...)
				c.Stdin = strings.NewReader(`{"session_id":"full1","hook_event_name":"UserPromptSubmit","prompt":"hi","cwd":"/tmp"}`)
				c.Env = append(os.Environ(), "LOGBOOK_HTTP=off")
				out, err := c.CombinedOutput()
				if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 ||
					!strings.Contains(string(out), "the payload is not recorded") || !strings.Contains(string(out), "no space left on device; free space on that disk") {
					t.Errorf("%s on a full disk: %v, want exit 1 saying the payload is not recorded and to free space:\n%s", filepath.Base(hook[0]), err, out)
				}
			}
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := cliExit(t, data, "sessions"); code != 0 {
			t.Errorf("sessions once the disk is freed (made before: %v): exit %d:\n%s", made, code, errOut)
		}
	}
}

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment of TestHelperPlaceholderWorker.
const (
	helperWorkspace = "LOGBOOK_TEST_PLACEHOLDER_WS"
	helperLedger    = "LOGBOOK_TEST_PLACEHOLDER_LEDGER"
	helperMode      = "LOGBOOK_TEST_PLACEHOLDER_MODE" // "" is WorkspaceWrite
	helperHold      = "LOGBOOK_TEST_PLACEHOLDER_HOLD" // not "": Spec.Hold, never released
	helperRuns      = "LOGBOOK_TEST_PLACEHOLDER_RUNS" // not "": say running once the command itself runs
)

// TestHelperPlaceholderWorker is not a test: run as a child process by
// TestSweepPlaceholders_KilledWorker, it starts a WorkspaceWrite command
// that sleeps, says so, and waits to be killed. It says so once Start
// returns, while bubblewrap may still build the boundary, or with
// helperRuns once the command has printed its first line: bubblewrap's
// setup is done, and its sandbox dies with it (--die-with-parent).
func TestHelperPlaceholderWorker(t *testing.T) {
	ws := os.Getenv(helperWorkspace)
	if ws == "" {
		t.Skip("helper process for TestSweepPlaceholders_KilledWorker")
	}
	mode := WorkspaceWrite
	if m := os.Getenv(helperMode); m != "" {
		mode = Mode(m)
	}
	s := Spec{Argv: []string{"sleep", "300"}, Env: testEnv(), Workspace: ws, Mode: mode, Ledger: os.Getenv(helperLedger), Hold: os.Getenv(helperHold) != ""}
	runs := make(chan struct{})
	var emit func(Chunk)
	if os.Getenv(helperRuns) != "" {
		s.Argv = []string{"sh", "-c", "echo ready; exec sleep 300"}
		var once bool
		emit = func(Chunk) { // on one goroutine, in order
			if !once {
				once = true
				close(runs)
			}
		}
	} else {
		close(runs)
	}
	p, err := Start(context.Background(), s, emit)
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	<-runs
	fmt.Println("running", p.Pid())
	_, _ = p.Wait()
	os.Exit(1)
}

// placeholderNames are the top-level names a WorkspaceWrite start keeps
// missing in an empty workspace.
func placeholderNames() []string {
	return []string{".git", ".claude", ".codex", ".agents", ".logbook", ".mcp.json", ".envrc"}
}

// A worker process killed by SIGKILL while its WorkspaceWrite command
// runs leaves its placeholders in the workspace; the sweep of its ledger
// removes them, but for the entries a person made under the same names
// meanwhile (another inode, content, another mode), and deletes the
// record. A record whose process runs is left alone.
func TestSweepPlaceholders_KilledWorker(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	ledger := filepath.Join(t.TempDir(), "ledger")
	// Killed once its command runs: a worker killed while bubblewrap
	// still builds the boundary leaves a sandbox that outlives it, and
	// its lock, until the next sweep (TestSweepPlaceholders_KilledWorkerLeavesNoProcess).
	child := startHelperWorker(t, helperWorkspace+"="+ws, helperLedger+"="+ledger, helperRuns+"=1")
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	for _, n := range placeholderNames() {
		if fi, err := os.Lstat(filepath.Join(ws, n)); err != nil || !isPlaceholder(fi) {
			t.Fatalf("placeholder %s while the command runs: %v", n, err)
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	// The command dies with its worker (parent-death signal); its
	// placeholders stay.
	waitFor(t, "the killed worker's command to end", func() bool {
		return !Busy(Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite})
	})
	for _, n := range placeholderNames() {
		if _, err := os.Lstat(filepath.Join(ws, n)); err != nil {
			t.Fatalf("placeholder %s is gone before the sweep: %v", n, err)
		}
	}

	// A person's own entries under two of the names: an empty directory
	// of mode 0000 made before the placeholder went (another inode), and
	// a file with content.
	mine := filepath.Join(ws, "mine")
	if err := os.Mkdir(mine, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, ".agents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(mine, filepath.Join(ws, ".agents")); err != nil {
		t.Fatalf("%v\n%s", err, describeDir(ws, ".agents"))
	}
	if err := os.Remove(filepath.Join(ws, ".envrc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".envrc"), []byte("export A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A live command's record in another workspace is left alone.
	live := newSpec(t, WorkspaceWrite, false, "sleep", "300")
	live.Ledger = ledger
	p := start(t, live, newRecorder(""))
	defer func() { p.Stop(); _, _ = p.Wait() }()

	removed, _, err := SweepPlaceholders(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(placeholderNames()) - 2; removed != want {
		t.Errorf("removed %d placeholders, want %d", removed, want)
	}
	for _, n := range placeholderNames() {
		_, err := os.Lstat(filepath.Join(ws, n))
		switch n {
		case ".agents", ".envrc":
			if err != nil {
				t.Errorf("the person's own %s was removed: %v", n, err)
			}
		default:
			if !os.IsNotExist(err) {
				t.Errorf("placeholder %s is still there after the sweep: %v", n, err)
			}
		}
	}
	for _, n := range placeholderNames() {
		if _, err := os.Lstat(filepath.Join(live.Workspace, n)); err != nil {
			t.Errorf("the live command's placeholder %s was removed: %v", n, err)
		}
	}
	if recs := ledgerRecords(t, ledger); len(recs) != 1 || recs[0].Workspace != live.Workspace {
		t.Errorf("ledger holds %+v; want the live command's record only", recs)
	}
	if files, _ := filepath.Glob(filepath.Join(ledger, "*")); len(files) != 1 {
		t.Errorf("ledger holds %q; want the live command's slot only", files)
	}
	p.Stop()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if recs := ledgerRecords(t, ledger); len(recs) != 0 {
		t.Errorf("ledger holds %+v after the live command ended", recs)
	}
	if n, _, err := SweepPlaceholders(ledger); n != 0 || err != nil {
		t.Errorf("second sweep: %d, %v", n, err)
	}
}

// A WorkspaceWrite start that makes its seven placeholders records them
// in two writes, not two each: all names before any is made, then their
// inodes. The record then names each placeholder with its device and
// inode; the command's end removes the placeholders and the record.
func TestLedger_TwoWritesPerStart(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ledger")
	s := Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Ledger: dir, Hold: true}
	before := ledgerWrites.Load()
	p, err := Start(t.Context(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	writes := ledgerWrites.Load() - before
	recs := ledgerRecords(t, dir)
	p.Release()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("records %+v, want one", recs)
	}
	// No other test of this process writes records (the killed worker's
	// is a process of its own).
	if writes != 2 {
		t.Errorf("the start wrote its record %d times, want 2", writes)
	}
	rec := recs[0]
	var names []string
	for _, e := range rec.Made {
		names = append(names, e.Name)
		if e.Ino == 0 || e.Since == 0 {
			t.Errorf("entry %+v: want its inode and the time it was about to be made", e)
		}
	}
	if want := placeholderNames(); !slices.Equal(names, want) {
		t.Errorf("record names %v, want %v", names, want)
	}
	left, _ := os.ReadDir(ws)
	recs = ledgerRecords(t, dir)
	if len(left) != 0 || len(recs) != 0 {
		t.Errorf("after the end: workspace holds %v, ledger %+v; want both empty", left, recs)
	}
}

// ledgerRecords returns the records in ledger directory dir that name a
// placeholder: slots and files of their own (as earlier versions wrote).
func ledgerRecords(t *testing.T, dir string) []ledgerRecord {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var recs []ledgerRecord
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var rec ledgerRecord
		whole := true
		switch {
		case strings.HasSuffix(e.Name(), slotSuffix):
			rec, whole, err = readSlot(b)
		case strings.HasSuffix(e.Name(), ledgerSuffix):
			err = json.Unmarshal(b, &rec)
		default:
			t.Fatalf("ledger holds %s", e.Name())
		}
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if whole && len(rec.Made) > 0 {
			recs = append(recs, rec)
		}
	}
	return recs
}

// Starts one after another in one workspace write their records in one
// slot file of this process: the first makes it, the later ones
// overwrite it and never make a file; each start's end empties it.
func TestLedger_SlotReused(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ledger")
	s := Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Ledger: dir}
	var first string
	for i := range 3 {
		p, err := Start(t.Context(), s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(files) != 1 || i > 0 && files[0] != first {
			t.Fatalf("run %d: ledger holds %q; want one slot, the first run's %q", i, files, first)
		}
		first = files[0]
		if recs := ledgerRecords(t, dir); len(recs) != 0 {
			t.Fatalf("run %d: after its end the ledger holds %+v", i, recs)
		}
	}
}

// A slot's write goes to the half that does not hold the last record
// made durable: a later write torn by a crash, durable or not, leaves
// that record whole, and a reader takes it.
func TestSlot_TornWriteLeavesTheDurableRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := takeSlot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.discard()
	rec := func(name string) []byte {
		b, _ := json.Marshal(ledgerRecord{Pid: 1, Workspace: "/ws", Made: []ledgerEntry{{Name: name}}})
		return b
	}
	read := func() (string, bool) {
		b, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatal(err)
		}
		r, whole, err := readSlot(b)
		if err != nil {
			t.Fatal(err)
		}
		if !whole {
			return "", false
		}
		return r.Made[0].Name, true
	}
	if name, whole := read(); whole {
		t.Fatalf("a new slot holds %q", name)
	}
	for _, w := range []struct {
		name    string
		durable bool
	}{{"a", true}, {"b", false}, {"c", false}, {"d", true}, {"e", false}, {"f", false}} {
		if err := s.put(rec(w.name), w.durable); err != nil {
			t.Fatal(err)
		}
		if name, _ := read(); name != w.name {
			t.Fatalf("after writing %q the slot reads %q", w.name, name)
		}
	}
	// "d" is the durable record; "e" and then "f" went to the other
	// half. Tear every byte of that half in turn: "d" stands.
	other := int64(1-s.durable) * slotHalf
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off := range int64(slotHeader + len(rec("f"))) {
		var b [1]byte
		if _, err := f.ReadAt(b[:], other+off); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{b[0] ^ 0x20}, other+off); err != nil {
			t.Fatal(err)
		}
		if name, whole := read(); !whole || name != "d" {
			t.Fatalf("byte %d of the newer half changed: the slot reads %q (whole %v); want the durable d", off, name, whole)
		}
		if _, err := f.WriteAt(b[:], other+off); err != nil {
			t.Fatal(err)
		}
	}
	// A record too large for a half is refused, naming its size.
	if err := s.put(make([]byte, slotHalf), true); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("a record of %d bytes: %v", slotHalf, err)
	}
}

// A record written by an earlier version, a file of its own, of a
// process that is gone, is still swept: the placeholder it names goes,
// and the record with it.
func TestSweepPlaceholders_FileOfItsOwn(t *testing.T) {
	ws := t.TempDir()
	dir := t.TempDir()
	p := filepath.Join(ws, ".envrc")
	if err := os.WriteFile(p, nil, 0); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ledgerRecord{Pid: dead.Process.Pid, Start: 1, Workspace: ws, Made: []ledgerEntry{{Name: ".envrc", Dev: uint64(st.Dev), Ino: st.Ino}}})
	rec := filepath.Join(dir, fmt.Sprintf("%d-1-1-00000000%s", dead.Process.Pid, ledgerSuffix))
	if err := os.WriteFile(rec, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, _, err := SweepPlaceholders(dir); n != 1 || err != nil {
		t.Fatalf("sweep: %d, %v; want 1", n, err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("placeholder after the sweep: %v", err)
	}
	if _, err := os.Lstat(rec); !os.IsNotExist(err) {
		t.Errorf("record after the sweep: %v", err)
	}
}

// A worker killed at any moment of a restricted start leaves nothing of
// the command running once the sweep has run, and a held boundary's
// command never runs at all. bubblewrap's first child waits, blocked,
// until bubblewrap lets it go on, and takes its own parent-death signal
// only later; bubblewrap killed in that window (by the parent-death
// signal of the worker's death) leaves it behind, either blocked for good
// or, once past that wait, going on to run the command with nobody
// watching. The sweep finds it from the ledger's record of bubblewrap's
// process. Killed 0–3 ms after Start returns, in both restricted modes,
// and 0–3 ms or 150 ms after a held start returns.
func TestSweepPlaceholders_KilledWorkerLeavesNoProcess(t *testing.T) {
	requireBwrap(t)
	ledger := filepath.Join(t.TempDir(), "ledger")
	marker := t.TempDir() // every workspace below it: bwrap's arguments name it
	const tries = 24
	for i := range tries {
		ws := filepath.Join(marker, fmt.Sprint(i))
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		mode := WorkspaceWrite
		if i%2 == 1 {
			mode = ReadOnly
		}
		hold := i%3 == 2
		env := []string{helperWorkspace + "=" + ws, helperLedger + "=" + ledger, helperMode + "=" + string(mode)}
		if hold {
			env = append(env, helperHold+"=1")
		}
		child := startHelperWorker(t, env...)
		wait := time.Duration(i%4) * time.Millisecond
		if hold && i%4 == 3 {
			wait = 150 * time.Millisecond // well past bubblewrap's setup
		}
		time.Sleep(wait)
		_ = child.Process.Signal(syscall.SIGKILL)
		_ = child.Wait()
	}
	// No held boundary's command ever ran: a sleep 300 of one of them
	// would be a process named sleep whose session is a held start's.
	ran := func() []string {
		var found []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil || !bytes.HasPrefix(b, []byte("sleep\x00300")) {
				continue
			}
			if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && strings.HasPrefix(cwd, marker+"/") {
				if n, _ := strconv.Atoi(filepath.Base(cwd)); n%3 == 2 {
					found = append(found, e.Name()+" in "+cwd)
				}
			}
		}
		return found
	}
	left := func() []string {
		var found []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err == nil && bytes.Contains(b, []byte(marker+"/")) && !exited(pid) {
				found = append(found, e.Name())
			}
		}
		return found
	}
	time.Sleep(200 * time.Millisecond) // for a released bubblewrap to run its command
	if r := ran(); len(r) > 0 {
		t.Errorf("held boundaries' commands ran after their worker died: %v", r)
	}
	_, killed, err := SweepPlaceholders(ledger)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(left()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if l := left(); len(l) > 0 {
		for _, pid := range l {
			st, _ := os.ReadFile("/proc/" + pid + "/stack")
			t.Logf("pid %s, kernel stack:\n%s", pid, st)
		}
		t.Fatalf("%d of %d killed workers' commands left a process after the sweep (it killed %d): pids %v", len(l), tries, killed, l)
	}
	t.Logf("the sweep killed %d processes of %d killed workers' starts", killed, tries)
	if recs := ledgerRecords(t, ledger); len(recs) != 0 {
		t.Errorf("ledger holds %+v after the sweep", recs)
	}
}

// The command of a restricted boundary holds no descriptor but its
// standard input, output and error: not bwrap's status or block pipe,
// nor the block pipe's write end the sandbox keeps (--sync-fd), held or
// not.
func TestRestricted_CommandHoldsOnlyStdio(t *testing.T) {
	for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
		for _, hold := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/held=%v", mode, hold), func(t *testing.T) {
				// ls lists the shell's descriptors from a process of its own,
				// so its own directory's descriptor is not among them.
				s := newSpec(t, mode, false, "sh", "-c", `ls /proc/$$/fd`)
				s.Hold = hold
				r := newRecorder("")
				p := start(t, s, r)
				if hold {
					if err := p.Release(); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(strings.Fields(r.text(Stdout)), " "); got != "0 1 2" {
					t.Errorf("the command's descriptors: %q, want 0 1 2 (stderr %q)", got, r.text(Stderr))
				}
			})
		}
	}
}

// describeDir says what a failure needs to be understood: the entries of
// dir and of its child name (mode, size, inode), and the lines of this
// process's mount table under dir.
func describeDir(dir, name string) string {
	var b strings.Builder
	for _, d := range []string{dir, filepath.Join(dir, name)} {
		ents, err := os.ReadDir(d)
		fmt.Fprintf(&b, "%s: %d entries, %v\n", d, len(ents), err)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				st, _ := fi.Sys().(*syscall.Stat_t)
				ino := uint64(0)
				if st != nil {
					ino = st.Ino
				}
				fmt.Fprintf(&b, "  %s %v %d bytes inode %d\n", e.Name(), fi.Mode(), fi.Size(), ino)
			}
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for line := range strings.Lines(string(mi)) {
		if strings.Contains(line, dir) {
			b.WriteString("  mount: " + line)
		}
	}
	return b.String()
}

// startHelperWorker starts TestHelperPlaceholderWorker with env (its
// helper* variables, NAME=value) beside this process's environment, and
// returns it once it says "running"; a helper that says anything else
// is killed and the test fails.
func startHelperWorker(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestHelperPlaceholderWorker$")
	child.Env = append(os.Environ(), env...)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "running") {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("helper worker: %q, %v", line, err)
	}
	return child
}

// A WorkspaceWrite start records the names it may make as it begins,
// before it waits for the workspace's lock: a start waiting for another
// writer records that writer's placeholders (they are gone by the time
// it holds the lock, and it makes its own in their place) in that one
// write, and writes no record per name once it has the lock; a start
// that gives up waiting leaves no record naming anything.
func TestLedger_RecordedWhileWaiting(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ledger")
	spec := func(argv ...string) Spec {
		return Spec{Argv: argv, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Ledger: dir, Grace: testGrace, Probed: true}
	}
	release := startHeldWriter(t, spec())
	defer release()
	if recs := ledgerRecords(t, dir); len(recs) != 1 {
		t.Fatalf("the running writer's records: %+v, want one", recs)
	}

	// One that gives up waiting.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err := Start(ctx, spec("true"), nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a writer started while another runs: %v", err)
	}
	if recs := ledgerRecords(t, dir); len(recs) != 1 {
		t.Errorf("after a writer gave up waiting the ledger holds %+v, want the running writer's record alone", recs)
	}

	// One that waits, then runs.
	before := ledgerWrites.Load()
	type started struct {
		p   *Process
		err error
	}
	done := make(chan started, 1)
	go func() {
		p, err := Start(t.Context(), spec("true"), nil)
		done <- started{p, err}
	}()
	var waiting ledgerRecord
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if recs := ledgerRecords(t, dir); len(recs) == 2 {
			waiting = recs[0]
			if waiting.Made[0].Ino != 0 { // the running writer's has its inodes
				waiting = recs[1]
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no record of the waiting writer after 10 s")
		}
	}
	var names []string
	for _, e := range waiting.Made {
		names = append(names, e.Name)
	}
	if want := placeholderNames(); !slices.Equal(names, want) {
		t.Errorf("the waiting writer recorded %v, want the running one's placeholders %v", names, want)
	}
	release()
	s := <-done
	must(t, s.err)
	if _, err := s.p.Wait(); err != nil {
		t.Fatal(err)
	}
	// Its record as it began and the one with bubblewrap's process and
	// the placeholders' inodes: none per name.
	if writes := ledgerWrites.Load() - before; writes != 2 {
		t.Errorf("the writer that waited wrote its record %d times, want 2", writes)
	}
	left, _ := os.ReadDir(ws)
	if recs := ledgerRecords(t, dir); len(left) != 1 || len(recs) != 0 {
		t.Errorf("after both ends: workspace holds %v (want the fifo alone), ledger %+v", left, recs)
	}
}

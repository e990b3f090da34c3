package journal

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func open(t *testing.T, path string, opt Options) (*Journal, []Record) {
	t.Helper()
	j, recs, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	return j, recs
}

func appendAll(t *testing.T, j *Journal, data ...string) []uint64 {
	t.Helper()
	var seqs []uint64
	for _, d := range data {
		seq, err := j.Append([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	return seqs
}

func records(pairs ...any) []Record {
	var out []Record
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Record{Seq: uint64(pairs[i].(int)), Data: []byte(pairs[i+1].(string))})
	}
	return out
}

// TestJournal_ReopenReturnsWhatIsNotDone: records come back in order
// after a reopen until they are marked done; sequences go on across
// reopens and across the start-over when every record is done.
func TestJournal_ReopenReturnsWhatIsNotDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, recs := open(t, path, Options{})
	if len(recs) != 0 {
		t.Fatalf("new journal returned %v", recs)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != DefaultSize || st.Mode().Perm() != 0o600 {
		t.Fatalf("new journal: %v, %v; want %d bytes, 0600", st, err, DefaultSize)
	}
	if got := appendAll(t, j, "a", "bb", ""); !cmp.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("sequences %v", got)
	}
	j.Close()

	j, recs = open(t, path, Options{})
	if diff := cmp.Diff(records(1, "a", 2, "bb", 3, ""), recs); diff != "" {
		t.Fatalf("after reopen (-want +got):\n%s", diff)
	}
	if err := j.Done(2); err != nil {
		t.Fatal(err)
	}
	if err := j.Done(1); err != nil { // behind: nothing changes
		t.Fatal(err)
	}
	if err := j.Done(4); err == nil {
		t.Fatal("Done past the last record: no error")
	}
	j.Close()

	j, recs = open(t, path, Options{})
	if diff := cmp.Diff(records(3, ""), recs); diff != "" {
		t.Fatalf("after Done(2) (-want +got):\n%s", diff)
	}
	if err := j.Done(3); err != nil { // all done: the records start over
		t.Fatal(err)
	}
	if got := appendAll(t, j, "d"); !cmp.Equal(got, []uint64{4}) {
		t.Fatalf("after start-over: sequence %v, want 4", got)
	}
	j.Close()

	j, recs = open(t, path, Options{})
	defer j.Close()
	if diff := cmp.Diff(records(4, "d"), recs); diff != "" {
		t.Fatalf("after start-over (-want +got):\n%s", diff)
	}
	if j.Pending() != 1 {
		t.Errorf("Pending %d, want 1", j.Pending())
	}
}

// TestJournal_StartOverKeepsItsSize: a journal whose records are done as
// they come never grows, however many go through it.
func TestJournal_StartOverKeepsItsSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := open(t, path, Options{Size: 8192})
	defer j.Close()
	rec := strings.Repeat("x", 1000)
	for i := range 200 {
		seq, err := j.Append([]byte(rec))
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("record %d: sequence %d", i+1, seq)
		}
		if i%3 == 2 {
			if err := j.Done(seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st, _ := os.Stat(path); st.Size() != 8192 {
		t.Errorf("size %d after 200 records done three at a time, want 8192", st.Size())
	}
}

// TestJournal_GrowsThenFull: a backlog grows the file a step at a time
// up to MaxSize, then Append fails with ErrFull and appends nothing; once
// the backlog is done, records fit again; every record not done survives
// a reopen of the grown file.
func TestJournal_GrowsThenFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := open(t, path, Options{Size: 8192, MaxSize: 3 * 8192})
	rec := strings.Repeat("y", 1000)
	var last uint64
	for {
		seq, err := j.Append([]byte(rec))
		if err != nil {
			if !strings.Contains(err.Error(), ErrFull.Error()) {
				t.Fatalf("error %v, want ErrFull", err)
			}
			break
		}
		last = seq
	}
	if st, _ := os.Stat(path); st.Size() != 3*8192 {
		t.Errorf("size %d when full, want %d", st.Size(), 3*8192)
	}
	if last < 15 {
		t.Errorf("full after %d records of 1000 bytes in 24 KiB", last)
	}
	j.Close()
	j, recs := open(t, path, Options{Size: 8192, MaxSize: 3 * 8192})
	defer j.Close()
	if uint64(len(recs)) != last || recs[len(recs)-1].Seq != last {
		t.Fatalf("reopen returned %d records, want %d", len(recs), last)
	}
	if err := j.Done(last); err != nil {
		t.Fatal(err)
	}
	if seq, err := j.Append([]byte(rec)); err != nil || seq != last+1 {
		t.Fatalf("after the backlog is done: %d, %v", seq, err)
	}
}

// TestJournal_TornRecord: a record cut short or damaged (a write a crash
// tore, never acknowledged) ends the journal there; the records before it
// come back and the next record takes its place and sequence.
func TestJournal_TornRecord(t *testing.T) {
	for _, c := range []struct {
		name string
		at   func(end int64) int64 // offset of the byte to damage
	}{
		{"data", func(end int64) int64 { return end - 1 }},
		{"length", func(end int64) int64 { return end - headerSize - 4 }},
		{"sequence", func(end int64) int64 { return end - 4 - 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			j, _ := open(t, path, Options{})
			appendAll(t, j, "first", "second")
			end := j.off
			j.Close()
			damage(t, path, c.at(end))
			j, recs := open(t, path, Options{})
			if diff := cmp.Diff(records(1, "first"), recs); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if seq, at := j.Torn(); c.name != "length" && (seq != 2 || at != end-headerSize-int64(len("second"))) {
				t.Errorf("Torn() = %d, %d; want record 2 at %d", seq, at, end-headerSize-int64(len("second")))
			}
			appendAll(t, j, "again")
			j.Close()
			j, recs = open(t, path, Options{})
			defer j.Close()
			if diff := cmp.Diff(records(1, "first", 2, "again"), recs); diff != "" {
				t.Fatalf("after the next append (-want +got):\n%s", diff)
			}
		})
	}
}

// damage flips the byte at off.
func damage(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestJournal_HeaderSlots: a torn header write leaves the other slot,
// which marks less done: records come back twice rather than never (a
// torn header was never synced, so Done scrubbed nothing after it). A
// record scrubbed never comes back, even when the slot that marked it
// done is damaged later. Both slots damaged is an error naming the
// file; nothing is guessed.
func TestJournal_HeaderSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := open(t, path, Options{})
	appendAll(t, j, "a", "b", "c")
	if err := j.Done(1); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path) // what a crash in Done(2)'s header write leaves
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Done(2); err != nil { // the newer slot
		t.Fatal(err)
	}
	newer := int64(j.counter%2) * slotSize
	j.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(path, before, 0o600); err != nil {
		t.Fatal(err)
	}
	damage(t, path, newer+20)
	j, recs := open(t, path, Options{})
	if diff := cmp.Diff(records(2, "b", 3, "c"), recs); diff != "" {
		t.Fatalf("newer slot torn (-want +got):\n%s", diff)
	}
	j.Close()

	if err := os.WriteFile(path, after, 0o600); err != nil {
		t.Fatal(err)
	}
	damage(t, path, newer+20)
	j, recs = open(t, path, Options{})
	if diff := cmp.Diff(records(3, "c"), recs); diff != "" {
		t.Fatalf("newer slot damaged after record 2 was scrubbed (-want +got):\n%s", diff)
	}
	if j.Pending() != 1 {
		t.Errorf("Pending %d, want 1", j.Pending())
	}
	j.Close()
	j, recs = open(t, path, Options{}) // Open wrote the header it found lost
	if diff := cmp.Diff(records(3, "c"), recs); diff != "" {
		t.Fatalf("reopened (-want +got):\n%s", diff)
	}
	j.Close()
	damage(t, path, 20)
	damage(t, path, slotSize+20)
	if _, _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), path+": damaged: no valid header") {
		t.Fatalf("both slots damaged: %v", err)
	}
}

// TestJournal_NotAJournalFile: a symbolic link, a directory, a FIFO (not
// waited on) or a file shorter than the header is refused with an error
// naming the path and what is there; a link's target is left alone.
func TestJournal_NotAJournalFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, want string
		make       func(p string) error
	}{
		{"link", "a symbolic link", func(p string) error { return os.Symlink(target, p) }},
		{"dir", "a directory, not a regular file", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"fifo", "a named pipe, not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"short", "damaged: 100 bytes", func(p string) error { return os.WriteFile(p, make([]byte, 100), 0o600) }},
	} {
		path := filepath.Join(dir, c.name)
		if err := c.make(path); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := Open(path, Options{})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, path, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Open blocked", c.name)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("link target now %q", b)
	}
}

// TestJournal_RecordTooLarge: a record over MaxRecord is refused and
// takes no sequence.
func TestJournal_RecordTooLarge(t *testing.T) {
	j, _ := open(t, filepath.Join(t.TempDir(), "j"), Options{MaxRecord: 10})
	defer j.Close()
	if _, err := j.Append(make([]byte, 11)); err == nil || !strings.Contains(err.Error(), "record of 11 bytes, over the limit of 10") {
		t.Fatalf("error %v", err)
	}
	if seq, err := j.Append(make([]byte, 10)); err != nil || seq != 1 {
		t.Fatalf("%d, %v", seq, err)
	}
}

// TestJournal_ConcurrentAppends: appends from many goroutines, with Done
// beside them, take distinct, contiguous sequences, and a reopen returns
// each record with its own data.
func TestJournal_ConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := open(t, path, Options{Size: 16384})
	var (
		mu  sync.Mutex
		got = map[uint64]string{}
		wg  sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				d := fmt.Sprintf("w%d-%d", w, i)
				seq, err := j.Append([]byte(d))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[seq] = d
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			// Half of the records appended without a gap so far.
			mu.Lock()
			m := uint64(0)
			for got[m+1] != "" {
				m++
			}
			mu.Unlock()
			if err := j.Done(m / 2); err != nil {
				t.Error(err)
			}
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	if len(got) != 400 {
		t.Fatalf("%d distinct sequences, want 400", len(got))
	}
	done := 400 - j.Pending()
	j.Close()
	j, recs := open(t, path, Options{Size: 16384})
	defer j.Close()
	if uint64(len(recs)) != 400-done {
		t.Fatalf("reopen returned %d records, want %d", len(recs), 400-done)
	}
	for _, r := range recs {
		if got[r.Seq] != string(r.Data) {
			t.Errorf("record %d: %q, want %q", r.Seq, r.Data, got[r.Seq])
		}
	}
}

// startSelf starts this test binary running only the test named test,
// with env added to this process's environment, and returns the process
// and a scanner of its standard output. The caller waits for it.
func startSelf(t *testing.T, test string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

// TestJournal_SurvivesKill: a process appending as fast as it can is
// killed (SIGKILL); every record it was told is on disk comes back, in
// order, with its data, and the journal takes records after them.
func TestJournal_SurvivesKill(t *testing.T) {
	if path := os.Getenv("JOURNAL_TEST_WRITER"); path != "" {
		writer(path)
		return
	}
	path := filepath.Join(t.TempDir(), "j")
	for round := range 3 {
		cmd, sc := startSelf(t, "TestJournal_SurvivesKill", "JOURNAL_TEST_WRITER="+path)
		acked := map[uint64]string{}
		for sc.Scan() {
			seq, data, ok := strings.Cut(sc.Text(), " ")
			n, err := strconv.ParseUint(seq, 10, 64)
			if !ok || err != nil {
				t.Fatalf("writer said %q", sc.Text())
			}
			acked[n] = data
			if len(acked) == 150 {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		cmd.Wait()
		j, recs := open(t, path, Options{Size: 8192})
		seen := map[uint64]bool{}
		for i, r := range recs {
			if i > 0 && r.Seq != recs[i-1].Seq+1 {
				t.Fatalf("round %d: sequence %d after %d", round, r.Seq, recs[i-1].Seq)
			}
			if d, ok := acked[r.Seq]; ok && d != string(r.Data) {
				t.Fatalf("round %d: record %d is %q, was %q", round, r.Seq, r.Data, d)
			}
			seen[r.Seq] = true
		}
		for seq := range acked {
			if !seen[seq] {
				t.Fatalf("round %d: acknowledged record %d lost (%d came back)", round, seq, len(recs))
			}
		}
		// What was read is processed: the next writer starts after it.
		if len(recs) > 0 {
			if err := j.Done(recs[len(recs)-1].Seq); err != nil {
				t.Fatal(err)
			}
		}
		j.Close()
	}
}

// writer appends numbered records to the journal at path until killed,
// printing "<seq> <data>" for each once Append returns.
func writer(path string) {
	j, _, err := Open(path, Options{Size: 8192})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		d := fmt.Sprintf("r%d-%s", i, strings.Repeat("z", i%700))
		seq, err := j.Append([]byte(d))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(w, "%d %s\n", seq, d)
		w.Flush()
	}
}

// TestJournal_DamageIsAnError: a record that cannot be read with whole
// records after it, or a file cut inside a record, is damage, not a
// crash's torn tail: Open refuses the file, naming the record and the
// offset, rather than return the records before it and lose the rest.
func TestJournal_DamageIsAnError(t *testing.T) {
	for _, c := range []struct {
		name string
		hurt func(t *testing.T, path string, offs []int64)
		want string
	}{
		{"middle record", func(t *testing.T, path string, offs []int64) { damage(t, path, offs[2]+headerSize+1) },
			"damaged: record 3 at offset %d cannot be read, but record 4 at offset %d after it is whole"},
		{"middle header", func(t *testing.T, path string, offs []int64) { damage(t, path, offs[2]+2) },
			"damaged: record 3 at offset %d cannot be read, but record 4 at offset %d after it is whole"},
		{"cut short", func(t *testing.T, path string, offs []int64) {
			if err := os.Truncate(path, offs[3]+headerSize+2); err != nil {
				t.Fatal(err)
			}
		}, "the file was cut short"},
		{"cut at a record's end", func(t *testing.T, path string, offs []int64) {
			if err := os.Truncate(path, offs[3]); err != nil {
				t.Fatal(err)
			}
		}, "the file was cut short"},
		{"emptied", func(t *testing.T, path string, offs []int64) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}, "damaged: 0 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			j, _ := open(t, path, Options{})
			var offs []int64
			for i := range 5 {
				offs = append(offs, j.off)
				appendAll(t, j, fmt.Sprintf("record %d", i+1))
			}
			j.Close()
			c.hurt(t, path, offs)
			want := c.want
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(c.want, offs[2], offs[3])
			}
			_, _, err := Open(path, Options{})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "move it aside") {
				t.Fatalf("Open: %v\nwant an error naming %s and %q", err, path, want)
			}
		})
	}
}

// TestJournal_TornHeaderAfterStartOver: the header written when the
// records started over is the one a crash tore; the other slot names the
// earlier base, and the records written since come back all the same.
func TestJournal_TornHeaderAfterStartOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := open(t, path, Options{})
	appendAll(t, j, "a", "b", "c")
	if err := j.Done(3); err != nil { // starts over: base 4
		t.Fatal(err)
	}
	newer := int64(j.counter%2) * slotSize
	appendAll(t, j, "d", "e")
	j.Close()
	damage(t, path, newer+20)
	j, recs := open(t, path, Options{})
	if diff := cmp.Diff(records(4, "d", 5, "e"), recs); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if seq, err := j.Append([]byte("f")); err != nil || seq != 6 {
		t.Fatalf("next append: %d, %v", seq, err)
	}
	j.Close()
	j, recs = open(t, path, Options{})
	defer j.Close()
	if diff := cmp.Diff(records(4, "d", 5, "e", 6, "f"), recs); diff != "" {
		t.Fatalf("after the next append (-want +got):\n%s", diff)
	}
}

// TestInspect: Inspect counts the records not done, as Open would return
// them, writes nothing (the file's bytes are the same after), treats a
// missing file as none, and reports damage (an empty file among it) as
// Open does.
func TestInspect(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	if n, err := Inspect(path, Options{}); n != 0 || err != nil {
		t.Fatalf("missing: %d, %v", n, err)
	}
	j, _ := open(t, path, Options{})
	appendAll(t, j, "a", "b", "c")
	if err := j.Done(1); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if n, err := Inspect(path, Options{}); n != 2 || err != nil {
		t.Fatalf("Inspect: %d, %v; want 2", n, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("Inspect changed the file")
	}
	j.Close()
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(filepath.Join(dir, "empty"), Options{}); err == nil || !strings.Contains(err.Error(), "damaged: 0 bytes") {
		t.Fatalf("empty: %v, want damage", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "short"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(filepath.Join(dir, "short"), Options{}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("short: %v", err)
	}
}

// TestJournal_DoneScrubs: once Done returns, the data of every record it
// marked done is gone from the file (zeros), whether the records start
// over or records not done stay after them; those still come back on a
// reopen, and the done ones never do.
func TestJournal_DoneScrubs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := open(t, path, Options{Size: 8192})
	appendAll(t, j, "secret-one", "secret-two", "secret-three", "pending-four")
	if err := j.Done(3); err != nil {
		t.Fatal(err)
	}
	holds(t, path, []string{"secret-one", "secret-two", "secret-three"}, []string{"pending-four"})
	j.Close()
	j, recs := open(t, path, Options{Size: 8192})
	if diff := cmp.Diff(records(4, "pending-four"), recs); diff != "" {
		t.Fatalf("after a partial Done (-want +got):\n%s", diff)
	}
	appendAll(t, j, "secret-five")
	if err := j.Done(5); err != nil { // every record done: they start over
		t.Fatal(err)
	}
	holds(t, path, []string{"secret-one", "secret-two", "secret-three", "pending-four", "secret-five"}, nil)
	appendAll(t, j, "six")
	j.Close()
	j, recs = open(t, path, Options{Size: 8192})
	defer j.Close()
	if diff := cmp.Diff(records(6, "six"), recs); diff != "" {
		t.Fatalf("after the start-over (-want +got):\n%s", diff)
	}
}

// holds fails unless the file at path holds none of gone and each of
// kept.
func holds(t *testing.T, path string, gone, kept []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range gone {
		if i := bytes.Index(b, []byte(s)); i >= 0 {
			t.Errorf("%s still holds %q at offset %d", path, s, i)
		}
	}
	for _, s := range kept {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("%s lost %q, a record not done", path, s)
		}
	}
}

// TestJournal_ScrubCrash: a crash after Done's header reached the disk
// and before (or while) its scrub did leaves done records holding their
// data, whole or in part. Open takes that for what it is, not damage:
// it returns only the records not done, and scrubs the done ones before
// it returns. The same holds for a start-over, and for a torn record
// and records of an earlier round past the last record.
func TestJournal_ScrubCrash(t *testing.T) {
	for _, c := range []struct {
		name string
		done uint64
		// keep returns, from the file as it was before Done (before)
		// and after it (after), the file a crash leaves.
		keep func(before, after []byte, offs []int64) []byte
		want []Record
	}{
		{"scrub not on disk", 2, func(before, after []byte, offs []int64) []byte {
			copy(after[dataStart:offs[2]], before[dataStart:offs[2]])
			return after
		}, records(3, "charlie-three")},
		{"scrub torn in the data", 2, func(before, after []byte, offs []int64) []byte {
			copy(after[offs[1]+headerSize:offs[1]+headerSize+4], before[offs[1]+headerSize:])
			return after
		}, records(3, "charlie-three")},
		{"scrub torn in the CRC", 2, func(before, after []byte, offs []int64) []byte {
			copy(after[offs[1]+4:offs[1]+8], before[offs[1]+4:])
			return after
		}, records(3, "charlie-three")},
		{"start-over scrub not on disk", 3, func(before, after []byte, offs []int64) []byte {
			copy(after[dataStart:offs[3]], before[dataStart:offs[3]])
			return after
		}, nil},
		{"start-over scrub torn", 3, func(before, after []byte, offs []int64) []byte {
			copy(after[offs[1]:offs[1]+headerSize+4], before[offs[1]:])
			return after
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			j, _ := open(t, path, Options{Size: 8192})
			var offs []int64
			for _, d := range []string{"alpha-one", "bravo-two", "charlie-three"} {
				offs = append(offs, j.off)
				appendAll(t, j, d)
			}
			offs = append(offs, j.off)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Done(c.done); err != nil {
				t.Fatal(err)
			}
			j.Close()
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c.keep(before, after, offs), 0o600); err != nil {
				t.Fatal(err)
			}
			j, recs := open(t, path, Options{Size: 8192})
			if diff := cmp.Diff(c.want, recs); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			var gone []string
			for i, d := range []string{"alpha-one", "bravo-two", "charlie-three"} {
				if uint64(i+1) <= c.done {
					gone = append(gone, d[:4]) // what a torn scrub may leave too
				}
			}
			holds(t, path, gone, nil)
			seq := appendAll(t, j, "four")[0]
			j.Close()
			j, recs = open(t, path, Options{Size: 8192})
			defer j.Close()
			if diff := cmp.Diff(append(c.want, Record{Seq: seq, Data: []byte("four")}), recs); diff != "" {
				t.Fatalf("after the next append (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJournal_OpenScrubsPastTheRecords: a torn last record and records
// an earlier round left past the last record are written over with
// zeros by Open (not by Inspect), and the journal reads the same after.
func TestJournal_OpenScrubsPastTheRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := open(t, path, Options{Size: 8192})
	appendAll(t, j, "first", "torn-secret")
	end := j.off
	j.Close()
	damage(t, path, end-1)
	if n, err := Inspect(path, Options{Size: 8192}); err != nil || n != 1 {
		t.Fatalf("Inspect: %d, %v", n, err)
	}
	holds(t, path, nil, []string{"torn-secre"})
	j, recs := open(t, path, Options{Size: 8192})
	if diff := cmp.Diff(records(1, "first"), recs); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if seq, _ := j.Torn(); seq != 2 {
		t.Errorf("Torn() names record %d, want 2", seq)
	}
	holds(t, path, []string{"torn-secre"}, []string{"first"})
	j.Close()
	j, recs = open(t, path, Options{Size: 8192})
	defer j.Close()
	if diff := cmp.Diff(records(1, "first"), recs); diff != "" {
		t.Fatalf("reopened (-want +got):\n%s", diff)
	}
}

// TestJournal_KilledAfterScrub: a process that appends and marks done as
// it goes is killed (SIGKILL) right after a Done returned, or at any
// point: no record it was told is done holds its data in the file, even
// before the next Open, and the next Open finds no damage and returns
// every record appended and not done.
func TestJournal_KilledAfterScrub(t *testing.T) {
	if path := os.Getenv("JOURNAL_TEST_SCRUBBER"); path != "" {
		die, _ := strconv.Atoi(os.Getenv("JOURNAL_TEST_DIE_AFTER"))
		scrubber(path, die)
		return
	}
	path := filepath.Join(t.TempDir(), "j")
	for round, die := range []int{1, 2, 7, 40, 0, 0, 3, 0} {
		cmd, sc := startSelf(t, "TestJournal_KilledAfterScrub", "JOURNAL_TEST_SCRUBBER="+path, "JOURNAL_TEST_DIE_AFTER="+strconv.Itoa(die))
		appended := map[uint64]string{}
		var done, trying uint64 // Done returned through done; was called through trying
		for lines := 0; sc.Scan(); lines++ {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				t.Fatalf("round %d: scrubber said %q", round, sc.Text())
			}
			n, _ := strconv.ParseUint(f[1], 10, 64)
			switch f[0] {
			case "a":
				appended[n] = f[2]
			case "t":
				trying = n
			case "d":
				done = n
			}
			if die == 0 && lines == 200+round*37 {
				cmd.Process.Signal(syscall.SIGKILL) // and read what it said before it died
			}
		}
		cmd.Wait()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for seq, d := range appended {
			if seq <= done && bytes.Contains(b, []byte(d)) {
				t.Errorf("round %d: record %d, done, still in the file after the kill: %q", round, seq, d)
			}
		}
		j, recs, err := Open(path, Options{Size: 8192})
		if err != nil {
			t.Fatalf("round %d: reopen after a kill: %v", round, err)
		}
		got := map[uint64]bool{}
		for _, r := range recs {
			if r.Seq <= done {
				t.Errorf("round %d: record %d came back, but it was done", round, r.Seq)
			}
			if d, ok := appended[r.Seq]; ok && d != string(r.Data) {
				t.Errorf("round %d: record %d is %q, was %q", round, r.Seq, r.Data, d)
			}
			got[r.Seq] = true
		}
		for seq := range appended {
			if seq > max(done, trying) && !got[seq] {
				t.Errorf("round %d: record %d, appended and not done, lost", round, seq)
			}
		}
		if len(recs) > 0 {
			if err := j.Done(recs[len(recs)-1].Seq); err != nil {
				t.Fatal(err)
			}
		}
		j.Close()
		b, _ = os.ReadFile(path)
		for _, d := range appended {
			if bytes.Contains(b, []byte(d)) {
				t.Errorf("round %d: %q still in the file once every record is done", round, d)
			}
		}
	}
}

// scrubber appends records to the journal at path and marks them done
// as it goes, printing "a <seq> <data>" once Append returns, "t <seq>"
// before it calls Done and "d <seq>" once Done returns; after its die-th
// Done (0: never) it kills itself.
func scrubber(path string, die int) {
	j, _, err := Open(path, Options{Size: 8192})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	dones := 0
	for i := 0; ; i++ {
		d := fmt.Sprintf("rec%d-%d-%s", os.Getpid(), i, strings.Repeat("q", i%300))
		seq, err := j.Append([]byte(d))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(w, "a %d %s\n", seq, d)
		w.Flush()
		if i%3 == 2 || i%7 == 6 {
			through := seq - 1
			if i%7 == 6 {
				through = seq // every record: a start-over
			}
			fmt.Fprintf(w, "t %d\n", through)
			w.Flush()
			if err := j.Done(through); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintf(w, "d %d\n", through)
			w.Flush()
			if dones++; dones == die {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}
}

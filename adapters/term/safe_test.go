package term

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

func TestTermSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Plain", "hello, world\n\tindented\n", "hello, world\n\tindented\n"},
		{"UTF8", "héllo — 世界 🙂\n", "héllo — 世界 🙂\n"},
		{"CRLF", "a\r\nb\r\n", "a\r\nb\r\n"},
		{"LoneCR", "safe\rrm -rf ~", `safe\rrm -rf ~`},
		{"SGR", "\x1b[31mred\x1b[0m", "red"},
		{"CursorMove", "a\x1b[2J\x1b[1;1Hb", "ab"},
		{"PrivateCSI", "\x1b[?1049hx", "x"},
		{"OSCTitleBEL", "\x1b]0;owned\x07text", "text"},
		{"OSCClipboardST", "\x1b]52;c;cm0gLXJmIH4K\x1b\\text", "text"},
		{"OSCHyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"DCS", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"APC", "\x1b_Gf=100;AAAA\x1b\\after", "after"},
		{"Charset", "\x1b(0lqk\x1b(B", "lqk"},
		{"Reset", "\x1bcafter", "after"},
		{"MalformedCSI", "\x1b[12\nnext", "\nnext"},
		{"UnterminatedOSC", "text\x1b]0;title", "text"},
		{"LoneESC", "x\x1b", "x"},
		{"Bell", "ding\x07", `ding\x07`},
		{"Backspace", "abc\b\b\bxyz", `abc\x08\x08\x08xyz`},
		{"NUL", "a\x00b", `a\x00b`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1CSI", "a\u009b31mb", `a\u009b31mb`},
		{"Bidi", "a\u202eb\u2066c", `a\u202eb\u2066c`},
		{"InvalidUTF8", "a\xffb\xc3", `a\xffb\xc3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Safe(tt.in); got != tt.want {
				t.Errorf("Safe(%q) = %q, want %q", tt.in, got, tt.want)
			}
			// Split at every point, as output arrives in chunks: the same.
			for cut := 0; cut <= len(tt.in); cut++ {
				var b bytes.Buffer
				w := NewWriter(&b)
				w.Write([]byte(tt.in[:cut]))
				w.Write([]byte(tt.in[cut:]))
				w.Close()
				if b.String() != tt.want {
					t.Errorf("split at %d: %q, want %q", cut, b.String(), tt.want)
				}
			}
		})
	}
}

// A sequence that never ends is not held back without bound.
func TestTermWriter_Bounded(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Write([]byte("\x1b]0;"))
	for range 100 {
		w.Write(bytes.Repeat([]byte("x"), 1000))
	}
	if len(w.pend) > maxSeq+1000 {
		t.Errorf("held back %d bytes", len(w.pend))
	}
	if bytes.ContainsRune(b.Bytes(), 0x1b) {
		t.Errorf("an escape reached the output")
	}
}

// What replay --rederive and events tail print of the log (hostile input:
// a hook's reason, a transcript's ids) reaches the terminal escaped: its
// escape sequences shown as text, not obeyed and not removed.
func TestTermSafe_LogValues(t *testing.T) {
	const evil = "\x1b]0;owned\x07bye\x1b[2J\rrm"
	ended := events.Envelope{Type: "session.ended\x1b[31m", Data: events.SessionEnded{From: "ready", Reason: evil}}
	abandoned := events.Envelope{Type: "session.entry_abandoned", Data: events.SessionEntryAbandoned{EntryID: "toolu_\x1b]52;c;cm0K\x07", Reason: evil}}
	r := replay.Rederivation{Session: "s1", Observations: 3, Diverged: 1, First: &replay.Divergence{
		ObsSeq: 7, Obs: events.Envelope{Type: "obs.claude.hook\u009b2J"}, Index: 0,
		Recorded:  []events.Envelope{ended},
		Rederived: []events.Envelope{abandoned},
		Refused:   "refused: " + evil,
	}}
	var b bytes.Buffer
	if err := Print(&b, func(w io.Writer) error { return Rederivation(w, r, 0) }); err != nil {
		t.Fatal(err)
	}
	if err := Record(&b, events.Record{Seq: 9, Envelope: ended}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if strings.ContainsAny(got, "\x1b\x07\r\u009b") {
		t.Errorf("terminal controls got through:\n%q", got)
	}
	for _, want := range []string{`recorded:  session.ended\x1b[31m \x1b]0;owned\x07bye\x1b[2J\rrm`, `rederived: session.entry_abandoned toolu_\x1b]52;c;cm0K\x07 \x1b]0;owned`, `refused today: refused: \x1b]0;owned\x07bye\x1b[2J\rrm`, `(obs.claude.hook\u009b2J)`, `/ v0  \x1b]0;owned\x07bye\x1b[2J\rrm`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// failWriter fails every write with err.
type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// TestFlushed_FailsOnce: a write that fails through the buffered writer
// (a full disk) is reported once, by Print and by PrintAudit, whether it
// failed while the text was written or at the final flush: not a second
// time by the flush that holds the same error.
func TestFlushed_FailsOnce(t *testing.T) {
	full := failWriter{errors.New("write /dev/stdout: no space left on device")}
	var items []replay.Item
	for i := range 2000 { // over the 64 KiB buffer: fails while written
		items = append(items, replay.Item{Seq: uint64(i + 1), Type: "session.transitioned", From: "ready", To: "working"})
	}
	for name, err := range map[string]error{
		"PrintAudit, long":  PrintAudit(full, items, 0),
		"PrintAudit, short": PrintAudit(full, items[:1], 0),
		"Print, long":       Print(full, func(w io.Writer) error { _, err := io.WriteString(w, strings.Repeat("x\n", 40<<10)); return err }),
		"Print, short":      Print(full, func(w io.Writer) error { _, err := io.WriteString(w, "x\n"); return err }),
	} {
		if err == nil || strings.Count(err.Error(), "no space left") != 1 {
			t.Errorf("%s: error %q, want the write's error once", name, err)
		}
	}
}

// A command of two lines and one that holds a backslash and an n show
// differently for approval: the newline as a mark, the backslash as it
// is.
func TestBlanks_Newline(t *testing.T) {
	real, typed := "echo safe\ncat ~/x", `echo safe\ncat ~/x`
	if got, want := Field(Blanks(real)), "echo safe[newline]cat ~/x"; got != want {
		t.Errorf("two lines shown %q, want %q", got, want)
	}
	if got := Field(Blanks(typed)); got != typed {
		t.Errorf("one line with a backslash shown %q, want it as it is", got)
	}
	if got, want := Blanks("a  \n\n"+strings.Repeat(" ", 20)+"b"), "a  [newline][newline][20 spaces]b"; got != want {
		t.Errorf("blanks around newlines shown %q, want %q", got, want)
	}
}

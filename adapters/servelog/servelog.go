// Package servelog is the log of a running `logbook serve`: every line
// serve and its parts write (the reconciler, the transcript watcher,
// workers, the API) becomes one log/slog record, text (key=value) or
// JSON, so that the log has one format.
package servelog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// Log is serve's log, an io.Writer of text lines. A line's
// "logbook serve: " (or "logbook: ") prefix is dropped (the record says
// where it is from); a line whose message starts with a level marker,
// "ERROR: ", "WARN: " or "INFO: ", is logged at that level without the
// marker, whatever its words: an informational line that names
// something a person chose (a path, a rule, a sink) marks itself INFO so
// that a name such as "failing" does not make it a warning. Of unmarked
// lines, one about a failure, and every report of the transcript
// watcher ("watch: ...": a file not followed, a line that does not parse,
// a file truncated or replaced), is logged at WARN, others at INFO.
// It is safe for concurrent use; a part of a line waits for its end.
type Log struct {
	mu   sync.Mutex
	h    slog.Handler // the handler without a component
	log  *slog.Logger
	pend []byte
}

// New returns a Log writing its records to w in format "text" (log/slog
// key=value lines) or "json" (one JSON object a line); any other format
// is text. Records at INFO and above are written; each carries
// component=serve.
func New(w io.Writer, format string) *Log {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return &Log{h: h, log: slog.New(h).With("component", "serve")}
}

// Logger returns a logger whose records go to the same output as the
// lines written to s, as they are (their own levels and attributes),
// marked with component: for a part that logs with log/slog (a worker),
// so its records are not wrapped as the message of another.
func (s *Log) Logger(component string) *slog.Logger {
	return slog.New(s.h).With("component", component)
}

// PartLogger returns the logger a part of serve writes to w with: w's
// own (Logger) when w is a *Log, else a text handler on w.
func PartLogger(w io.Writer, component string) *slog.Logger {
	if s, ok := w.(*Log); ok {
		return s.Logger(component)
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// Write logs each whole line of p as one record and keeps a trailing
// part of a line for the next Write. It never fails: n is len(p).
func (s *Log) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pend = append(s.pend, p...)
	for {
		i := bytes.IndexByte(s.pend, '\n')
		if i < 0 {
			break
		}
		s.line(string(s.pend[:i]))
		s.pend = s.pend[i+1:]
	}
	return len(p), nil
}

// Say writes line, one line of serve's output whose words may come from
// input (a path, a file name, an error naming either), to w: as one
// record whatever it holds when w is a *Log, a newline inside it kept in
// the record's message (the text format shows it escaped) rather than
// starting a record of its own that could pass for serve's; on any other
// writer, as the line and a newline. The line takes the level its words
// give it, as a line written to the Log does.
func Say(w io.Writer, line string) {
	if s, ok := w.(*Log); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.line(line)
		return
	}
	fmt.Fprintf(w, "%s\n", line)
}

// SayPart is Say of msg, a line of part (a name, such as "reconciler"):
// "logbook serve: part: msg". A level marker that starts msg ("WARN: ")
// goes before the part's name, so that the line takes that level
// whatever its words: a part marks its faults and its news, and a name
// it quotes (a path, an error naming one) decides nothing.
func SayPart(w io.Writer, part, msg string) {
	for marker := range levelMarkers {
		if m, ok := strings.CutPrefix(msg, marker); ok {
			Say(w, "logbook serve: "+marker+part+": "+m)
			return
		}
	}
	Say(w, "logbook serve: "+part+": "+msg)
}

// levelMarkers are the prefixes of a message that give its level.
var levelMarkers = map[string]slog.Level{"ERROR: ": slog.LevelError, "WARN: ": slog.LevelWarn, "INFO: ": slog.LevelInfo}

// failureWords mark a line about a failure.
var failureWords = []string{"error", "fail", "refused", "not sent", "gone", "cannot", "denied", "lost"}

// line logs one line at the level its words give it.
func (s *Log) line(l string) {
	l = strings.TrimSpace(l)
	if l == "" {
		return
	}
	msg := strings.TrimPrefix(strings.TrimPrefix(l, "logbook serve: "), "logbook: ")
	for marker, level := range levelMarkers {
		if m, ok := strings.CutPrefix(msg, marker); ok {
			s.log.Log(context.Background(), level, m)
			return
		}
	}
	level := slog.LevelInfo
	low := strings.ToLower(msg)
	if strings.HasPrefix(msg, "watch: ") {
		level = slog.LevelWarn
	}
	for _, w := range failureWords {
		if strings.Contains(low, w) {
			level = slog.LevelWarn
			break
		}
	}
	s.log.Log(context.Background(), level, msg)
}

// NATSErrors returns the handler of a NATS connection's asynchronous
// errors (a permissions violation, a slow consumer), which nats.go would
// otherwise print raw to the process's stderr: a WARN record (with err
// and the subscription's subject) of w's log when w is a *Log, else the
// line "logbook serve: nats client error: ERR" on w. The handler runs on
// the connection's callback goroutine.
func NATSErrors(w io.Writer) nats.ErrHandler {
	return func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if s, ok := w.(*Log); ok {
			attrs := []any{"err", err.Error()}
			if sub != nil {
				attrs = append(attrs, "subject", sub.Subject)
			}
			s.log.Warn("nats client error", attrs...)
			return
		}
		fmt.Fprintf(w, "logbook serve: nats client error: %v\n", err)
	}
}

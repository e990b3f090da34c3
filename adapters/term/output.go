package term

import (
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/reducers/command"
)

// Output writes a command's output chunks as they come: stdout and pty
// to Stdout, stderr to Stderr, each made safe for a terminal (a Writer
// per stream, a sequence split across chunks included) unless Raw; or,
// with JSON, one OutputChunk line per chunk to Stdout. Nothing is kept:
// memory stays flat whatever the command prints. Close writes what the
// terminal writers held back. Not safe for concurrent use.
type Output struct {
	Stdout, Stderr io.Writer
	JSON           bool
	Raw            bool  // exact bytes; else made safe for a terminal
	Pos            int64 // end of the output written so far (bytes of the whole output)
	tout, terr     *Writer
}

// OutputChunk is one line of `exec --json`: a chunk of output.
type OutputChunk struct {
	Type       string `json:"type"` // "output"
	Stream     string `json:"stream"`
	Offset     int64  `json:"offset"` // byte offset in its stream
	Pos        int64  `json:"pos"`    // byte offset in the whole output
	Data       string `json:"data,omitempty"`
	DataBase64 []byte `json:"data_base64,omitempty"` // when the bytes are not UTF-8
}

// Print writes chunk c; errors are the writer's.
func (p *Output) Print(c worker.Chunk) error {
	p.Pos = c.Pos + int64(len(c.Data))
	if p.JSON {
		line := OutputChunk{Type: "output", Stream: c.Stream, Offset: c.Offset, Pos: c.Pos}
		if utf8.Valid(c.Data) {
			line.Data = string(c.Data)
		} else {
			line.DataBase64 = c.Data
		}
		return JSONLine(p.Stdout, line)
	}
	w := p.Stdout
	if c.Stream == "stderr" {
		w = p.Stderr
	}
	if !p.Raw {
		tw := &p.tout
		if c.Stream == "stderr" {
			tw = &p.terr
		}
		if *tw == nil {
			*tw = NewWriter(w)
		}
		w = *tw
	}
	_, err := w.Write(c.Data)
	return err
}

// Close writes what the terminal writers held back at the end. It may be
// called more than once.
func (p *Output) Close() {
	for _, tw := range []*Writer{p.tout, p.terr} {
		if tw != nil {
			_ = tw.Close()
		}
	}
}

// OutputResult is the last line of `exec --json`.
type OutputResult struct {
	Type       string `json:"type"` // "result"
	ID         string `json:"id"`
	Status     string `json:"status"`
	Background bool   `json:"background"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// NotRun says why an exited command never ran (command.State.NotRun).
	NotRun    string `json:"not_run,omitempty"`
	OutputPos int64  `json:"output_pos"` // where `command output --after` resumes
}

// Result is the result line of command id in state st, its output_pos
// the end of the output written so far.
func (p *Output) Result(id string, st command.State, background bool) OutputResult {
	return OutputResult{
		Type: "result", ID: id, Status: st.Status, Background: background, ExitCode: st.ExitCode, Signal: st.Signal,
		Reason: st.EndReason, NotRun: st.NotRun, OutputPos: p.Pos,
	}
}

// JSONLine writes v as one line of JSON. Errors are json.Marshal's and
// w's.
func JSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

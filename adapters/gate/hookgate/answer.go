package hookgate

import "io"

// AnswerWriter passes what is written on to W and notes in Written
// whether anything was: whether a gated hook has answered yet. Not safe
// for concurrent use.
type AnswerWriter struct {
	W       io.Writer
	Written bool
}

// Write writes p to W, as W does.
func (a *AnswerWriter) Write(p []byte) (int, error) {
	a.Written = a.Written || len(p) > 0
	return a.W.Write(p)
}

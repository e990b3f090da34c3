package worker

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/redact/redacttest"
	"github.com/logbook-dev/logbook/sandbox"
)

// TestOutRedactor: a secret split across chunks is stored redacted, a
// partial line (a prompt) is stored after a quiet pause, and the stored
// offsets of each stream are those of the bytes stored.
func TestOutRedactor(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []sandbox.Chunk
	o := newOutRedactor(redact.Default(), func(c sandbox.Chunk) {
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
	})
	sh := redacttest.Shapes()[0]
	text := "key: " + sh.Text + "\n"
	half := len(text) / 2
	o.write(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte(text[:half])})
	o.write(sandbox.Chunk{Stream: sandbox.Stdout, Offset: int64(half), Data: []byte(text[half:])})
	o.write(sandbox.Chunk{Stream: sandbox.Stderr, Data: []byte("Password: ")})
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	o.write(sandbox.Chunk{Stream: sandbox.Stdout, Offset: int64(len(text)), Data: []byte("tail without newline")})
	o.close()
	o.write(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("after close")})
	mu.Lock()
	defer mu.Unlock()
	var out, errOut strings.Builder
	var off = map[sandbox.Stream]int64{}
	for _, c := range got {
		if c.Offset != off[c.Stream] {
			t.Errorf("%s chunk at offset %d, want %d", c.Stream, c.Offset, off[c.Stream])
		}
		off[c.Stream] += int64(len(c.Data))
		if c.Stream == sandbox.Stdout {
			out.Write(c.Data)
		} else {
			errOut.Write(c.Data)
		}
	}
	if strings.Contains(out.String(), sh.Secret) || !strings.Contains(out.String(), "[REDACTED:") {
		t.Errorf("stdout %q: want the split secret redacted", out.String())
	}
	if !strings.HasSuffix(out.String(), "tail without newline") || strings.Contains(out.String(), "after close") {
		t.Errorf("stdout %q: want the tail flushed at close and nothing after", out.String())
	}
	if errOut.String() != "Password: " {
		t.Errorf("stderr %q: want the prompt after the quiet pause", errOut.String())
	}
}

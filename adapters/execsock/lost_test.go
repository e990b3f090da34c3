package execsock

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadAnswer_ServerGone: a serve killed while it answers closes the
// exec socket (EOF) or, with the request still unread on its side,
// resets it (ECONNRESET): either way the client says whether the
// command ran, by the output it had, never a bare read error.
func TestReadAnswer_ServerGone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		output string // stdout frames the server sends before it goes
		unread bool   // the client's bytes left unread: the close resets the connection
		want   string
	}{
		{"closed, no output", "", false, "whether the command was requested, or ran, is unknown"},
		{"closed after output", "hello", false, "after 5 bytes of the command's output: the command ran"},
		{"reset, no output", "", true, "whether the command was requested, or ran, is unknown"},
		{"reset after output", "hello", true, "after 5 bytes of the command's output: the command ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			client, server := fds[0], fds[1]
			defer unix.Close(client)
			if tc.unread {
				if _, err := unix.Write(client, []byte("a request the server never read")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.output != "" {
				frame := make([]byte, 5, 5+len(tc.output))
				frame[0] = KindStdout
				binary.BigEndian.PutUint32(frame[1:], uint32(len(tc.output)))
				if _, err := unix.Write(server, append(frame, tc.output...)); err != nil {
					t.Fatal(err)
				}
			}
			unix.Close(server)
			var stdout, stderr bytes.Buffer
			code, err := readAnswer(client, &stdout, &stderr)
			if code != 1 || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("readAnswer = %d, %v; want 1 and an error saying %q", code, err, tc.want)
			}
			if stdout.String() != tc.output {
				t.Errorf("stdout %q, want %q", stdout.String(), tc.output)
			}
		})
	}
}

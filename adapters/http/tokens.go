package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/logbook-dev/logbook/adapters/claude"
)

// LoadTokens returns the tokens stored at path (JSON {"reader": …,
// "writer": …}, mode 0600), first writing new random ones (32 bytes each,
// hex) when the file does not exist. It refuses a file others may read or
// one that lacks either token, and reads only a regular file of at most
// maxTokensBytes (claude.ReadRegular: a FIFO or a device in its place
// is refused, never blocked on nor read without end).
func LoadTokens(path string) (*Tokens, error) {
	b, err := claude.ReadRegular(path, maxTokensBytes)
	if errors.Is(err, fs.ErrNotExist) {
		t := &Tokens{Reader: randomToken(), Writer: randomToken()}
		b, _ := json.MarshalIndent(t, "", "  ")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return LoadTokens(path) // another process wrote it first
		}
		if err != nil {
			return nil, fmt.Errorf("write tokens %s: %w", path, err)
		}
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("write tokens %s: %w", path, err)
		}
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("tokens %s: mode %v lets others read it; chmod 600 it", path, fi.Mode().Perm())
	}
	var t Tokens
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("tokens %s: %w", path, err)
	}
	if len(t.Reader) < 16 || len(t.Writer) < 16 || t.Reader == t.Writer {
		return nil, fmt.Errorf("tokens %s: want two different tokens of 16 bytes or more, reader and writer", path)
	}
	return &t, nil
}

// maxTokensBytes is the most a tokens file may hold (one is ~150 bytes).
const maxTokensBytes = 64 << 10

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

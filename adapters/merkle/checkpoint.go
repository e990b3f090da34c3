package merkle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Checkpoint is the body of a C2SP tlog-checkpoint v1.0.0 note: the log's
// origin, its tree size and the RFC 6962 root of that many leaves. It
// carries no extension lines.
type Checkpoint struct {
	Origin string    `json:"origin"` // see Origin
	Size   int64     `json:"size"`   // leaves, i.e. stream sequences 1..Size
	Root   tlog.Hash `json:"root"`   // tree hash of the first Size leaves
}

// Origin returns the checkpoint origin of one incarnation of the LOGBOOK
// stream, e.g. "logbook.local/LOGBOOK/20261202T034243.123456789Z": the
// stream's name and creation time (UTC, nanoseconds), so that a stream
// deleted and made again has another origin. It has no spaces and no
// '+', as tlog-checkpoint asks.
func Origin(id natslog.Identity) string {
	return OriginPrefix + id.Created.UTC().Format("20060102T150405.000000000Z")
}

// OriginPrefix begins every origin Origin returns; the rest is the
// stream's creation time.
const OriginPrefix = "logbook.local/" + natslog.StreamName + "/"

// String returns the note text: origin, size, std-base64 root, each
// ending in "\n".
func (c Checkpoint) String() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, c.Root)
}

// ParseCheckpoint parses a checkpoint note's text (the part before the
// blank line). Extension lines are refused: Logbook writes none.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return Checkpoint{}, fmt.Errorf("checkpoint: want 3 lines (origin, size, root), got %q", text)
	}
	origin := strings.TrimSuffix(lines[0], "\n")
	if origin == "" {
		return Checkpoint{}, errors.New("checkpoint: empty origin")
	}
	sz := strings.TrimSuffix(lines[1], "\n")
	n, err := strconv.ParseInt(sz, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != sz {
		return Checkpoint{}, fmt.Errorf("checkpoint %s: size %q: want a decimal without leading zeros", origin, sz)
	}
	root, err := tlog.ParseHash(strings.TrimSuffix(lines[2], "\n"))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint %s: root %q: %w", origin, lines[2], err)
	}
	return Checkpoint{Origin: origin, Size: n, Root: root}, nil
}

// Sign returns c as a signed note (golang.org/x/mod/sumdb/note) with s's
// signature.
func (c Checkpoint) Sign(s note.Signer) ([]byte, error) {
	msg, err := note.Sign(&note.Note{Text: c.String()}, s)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint %s %d: %w", c.Origin, c.Size, err)
	}
	return msg, nil
}

// Key files in a data dir.
const (
	// CheckpointKeyFile holds the note signer key (PRIVATE+KEY+…) serve
	// signs checkpoints with, mode 0600.
	CheckpointKeyFile = "checkpoint.key"
	// WitnessKeyFile holds the Ed25519 seed (std base64 on one line
	// after the key name) a witness co-signs with, mode 0600.
	WitnessKeyFile = "witness.key"
	// TrustedKeysFile lists, one a line, the verifier keys a host
	// trusts: checkpoint keys (note verifier keys, type 0x01) and
	// witness keys (type 0x04, see WitnessVerifierKey). Blank lines and
	// lines starting with # are skipped.
	TrustedKeysFile = "trusted-keys"
)

// keyName returns a note key name for role on this host, e.g.
// "logbook-checkpoint/myhost": no spaces, no '+'.
func keyName(role string) string {
	h, _ := os.Hostname()
	h = strings.Map(func(r rune) rune {
		if r <= ' ' || r == '+' || r > '~' {
			return '-'
		}
		return r
	}, h)
	if h == "" {
		h = "host"
	}
	return "logbook-" + role + "/" + h
}

// maxStateFile is the most bytes a key, trusted-keys or witness state
// file of the data dir is read to: each is read only if it is a regular
// file (hookspool.ReadRegular), so a FIFO or a device in its place is
// refused, never blocked on.
const maxStateFile = 1 << 20

// LoadCheckpointKey reads dir's CheckpointKeyFile, creating it with a new
// Ed25519 key when missing, and returns the signer and its verifier key
// (the line to pin in other hosts' TrustedKeysFile).
func LoadCheckpointKey(dir string) (note.Signer, string, error) {
	path := filepath.Join(dir, CheckpointKeyFile)
	b, err := hookspool.ReadRegular(path, maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		skey, _, gerr := note.GenerateKey(rand.Reader, keyName("checkpoint"))
		if gerr != nil {
			return nil, "", fmt.Errorf("checkpoint key %s: %w", path, gerr)
		}
		if err := writeNew(path, []byte(skey+"\n")); err != nil {
			return nil, "", fmt.Errorf("checkpoint key %s: %w", path, err)
		}
		b, err = hookspool.ReadRegular(path, maxStateFile)
	}
	if err != nil {
		return nil, "", fmt.Errorf("checkpoint key %s: %w", path, err)
	}
	skey := strings.TrimSpace(string(b))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, "", fmt.Errorf("checkpoint key %s: %w", path, err)
	}
	// The verifier key is the signer key without PRIVATE+KEY+ and with
	// the public key in place of the seed.
	parts := strings.SplitN(skey, "+", 5)
	seed, err := b64(parts[4])
	if err != nil || len(seed) != 1+ed25519.SeedSize {
		return nil, "", fmt.Errorf("checkpoint key %s: malformed key", path)
	}
	vkey, err := note.NewEd25519VerifierKey(s.Name(), ed25519.NewKeyFromSeed(seed[1:]).Public().(ed25519.PublicKey))
	if err != nil {
		return nil, "", fmt.Errorf("checkpoint key %s: %w", path, err)
	}
	return s, vkey, nil
}

// writeNew writes data to a new file at path, mode 0600, synced; an
// existing file is left alone and is an error.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Keys are the verifier keys a host trusts, from TrustedKeysFile and its
// own key files.
type Keys struct {
	Checkpoint []note.Verifier // checkpoint signers
	Witness    []note.Verifier // witnesses (cosignature verifiers)
}

// ParseKey adds one verifier key line to k: a note Ed25519 verifier key
// (type 0x01) to Checkpoint, a witness key (type 0x04) to Witness.
func (k *Keys) ParseKey(vkey string) error {
	if v, err := note.NewVerifier(vkey); err == nil {
		k.Checkpoint = append(k.Checkpoint, v)
		return nil
	}
	v, err := NewCosignatureVerifier(vkey)
	if err != nil {
		return fmt.Errorf("key %q: neither a checkpoint key (type 0x01) nor a witness key (type 0x04)", vkey)
	}
	k.Witness = append(k.Witness, v)
	return nil
}

// LoadKeys reads dir's TrustedKeysFile (missing: none) and adds dir's own
// checkpoint and witness verifier keys when their files exist. Errors
// name the file and line.
func LoadKeys(dir string) (Keys, error) {
	var k Keys
	path := filepath.Join(dir, TrustedKeysFile)
	b, err := hookspool.ReadRegular(path, maxStateFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return k, fmt.Errorf("trusted keys %s: %w", path, err)
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if err := k.ParseKey(s); err != nil {
			return k, fmt.Errorf("trusted keys %s:%d: %w", path, i+1, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointKeyFile)); err == nil {
		_, vkey, err := LoadCheckpointKey(dir)
		if err != nil {
			return k, err
		}
		if err := k.ParseKey(vkey); err != nil {
			return k, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, WitnessKeyFile)); err == nil {
		w, err := LoadWitnessKey(dir)
		if err != nil {
			return k, err
		}
		if err := k.ParseKey(w.VerifierKey()); err != nil {
			return k, err
		}
	}
	return k, nil
}

// now is the clock cosignatures are dated with.
func now() time.Time { return time.Now() }

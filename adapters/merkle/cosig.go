package merkle

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// algCosignature is the signed-note signature type of a C2SP
// tlog-cosignature/v1 Ed25519 cosignature.
const algCosignature = 0x04

// cosignedMessage returns what a tlog-cosignature/v1 signs: the header
// "cosignature/v1\ntime <unix seconds>\n" and the checkpoint body.
func cosignedMessage(t uint64, body []byte) []byte {
	msg := []byte("cosignature/v1\ntime " + strconv.FormatUint(t, 10) + "\n")
	return append(msg, body...)
}

// cosigKeyHash is the key ID of a cosignature key: the first 4 bytes of
// SHA-256(name‖"\n"‖0x04‖pubkey), big-endian (C2SP signed-note).
func cosigKeyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write([]byte{algCosignature})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// Witness is a witness's key: it signs C2SP tlog-cosignature/v1
// cosignatures, dated to the second. It implements note.Signer.
type Witness struct {
	name string
	key  ed25519.PrivateKey
	hash uint32
}

// Name implements note.Signer: the witness's key name.
func (w *Witness) Name() string { return w.name }

// KeyHash implements note.Signer.
func (w *Witness) KeyHash() uint32 { return w.hash }

// Sign implements note.Signer: the 8-byte big-endian timestamp (Unix
// seconds, now) followed by the Ed25519 signature of the cosigned
// message.
func (w *Witness) Sign(body []byte) ([]byte, error) {
	ts := uint64(now().Unix())
	sig := ed25519.Sign(w.key, cosignedMessage(ts, body))
	return append(binary.BigEndian.AppendUint64(nil, ts), sig...), nil
}

// VerifierKey returns the witness's verifier key, as TrustedKeysFile
// lists it: <name>+<hex8 key ID>+base64(0x04‖public key).
func (w *Witness) VerifierKey() string {
	pub := w.key.Public().(ed25519.PublicKey)
	return fmt.Sprintf("%s+%08x+%s", w.name, w.hash, base64.StdEncoding.EncodeToString(append([]byte{algCosignature}, pub...)))
}

// NewWitness returns a witness named name with key.
func NewWitness(name string, key ed25519.PrivateKey) *Witness {
	return &Witness{name: name, key: key, hash: cosigKeyHash(name, key.Public().(ed25519.PublicKey))}
}

// LoadWitnessKey reads dir's WitnessKeyFile ("<name> <std base64 seed>"),
// creating it with a new key when missing.
func LoadWitnessKey(dir string) (*Witness, error) {
	path := filepath.Join(dir, WitnessKeyFile)
	b, err := hookspool.ReadRegular(path, maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		seed := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(seed); err != nil {
			return nil, fmt.Errorf("witness key %s: %w", path, err)
		}
		line := keyName("witness") + " " + base64.StdEncoding.EncodeToString(seed) + "\n"
		if err := writeNew(path, []byte(line)); err != nil {
			return nil, fmt.Errorf("witness key %s: %w", path, err)
		}
		b, err = hookspool.ReadRegular(path, maxStateFile)
	}
	if err != nil {
		return nil, fmt.Errorf("witness key %s: %w", path, err)
	}
	name, enc, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	seed, derr := base64.StdEncoding.DecodeString(enc)
	if !ok || name == "" || derr != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("witness key %s: want \"<name> <base64 32-byte seed>\"", path)
	}
	return NewWitness(name, ed25519.NewKeyFromSeed(seed)), nil
}

// cosigVerifier checks tlog-cosignature/v1 cosignatures of one witness.
type cosigVerifier struct {
	name string
	pub  ed25519.PublicKey
	hash uint32
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }
func (v *cosigVerifier) Verify(body, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(v.pub, cosignedMessage(binary.BigEndian.Uint64(sig), body), sig[8:])
}

// NewCosignatureVerifier parses a witness verifier key
// (<name>+<hex8>+base64(0x04‖32-byte Ed25519 public key)) into a
// note.Verifier of its cosignatures. A key ID that does not match the
// name and key is an error.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hex8, enc, ok2 := strings.Cut(rest, "+")
	h, err := strconv.ParseUint(hex8, 16, 32)
	key, derr := base64.StdEncoding.DecodeString(enc)
	if !ok1 || !ok2 || name == "" || len(hex8) != 8 || err != nil || derr != nil || len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignature {
		return nil, fmt.Errorf("witness key %q: want <name>+<hex8>+base64(0x04‖public key)", vkey)
	}
	v := &cosigVerifier{name: name, pub: ed25519.PublicKey(key[1:])}
	v.hash = cosigKeyHash(name, v.pub)
	if uint32(h) != v.hash {
		return nil, fmt.Errorf("witness key %q: key ID %s does not match the key", vkey, hex8)
	}
	return v, nil
}

// CosignatureTime returns the time a cosignature line's signature (as
// note.Signature.Base64 holds it) was made.
func CosignatureTime(sigB64 string) (time.Time, error) {
	b, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil || len(b) != 4+8+ed25519.SignatureSize {
		return time.Time{}, errors.New("cosignature: malformed")
	}
	return time.Unix(int64(binary.BigEndian.Uint64(b[4:12])), 0).UTC(), nil
}

// b64 decodes std base64.
func b64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

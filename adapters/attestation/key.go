package attestation

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// Headers of a signed message.
const (
	// HeaderKey holds the signing key's id (KeyID).
	HeaderKey = "Lb-Key"
	// HeaderSig holds the standard base64 Ed25519 signature of Signed.
	HeaderSig = "Lb-Sig"
)

// KeyID returns the id of pub: the lowercase hex of the first 8 bytes of
// SHA-256(pub), 16 characters.
func KeyID(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return hex.EncodeToString(h[:8])
}

// Key is a principal's signing key: an Ed25519 private key with the
// principal and role it is registered for. It is safe for concurrent use.
type Key struct {
	ID        string             // KeyID of Public
	Principal string             // e.g. "serve@build-3"
	Role      Role               // what the key may append (Table)
	Private   ed25519.PrivateKey // 64 bytes; owned by the Key
}

// NewKey returns a fresh key for principal in role, from crypto/rand.
func NewKey(principal string, role Role) (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("attest: new key: %w", err)
	}
	return newKey(priv, principal, role), nil
}

func newKey(priv ed25519.PrivateKey, principal string, role Role) *Key {
	return &Key{ID: KeyID(priv.Public().(ed25519.PublicKey)), Principal: principal, Role: role, Private: priv}
}

// Public returns the key's 32-byte public key.
func (k *Key) Public() ed25519.PublicKey { return k.Private.Public().(ed25519.PublicKey) }

// PublicText returns Public as standard base64, as key.registered carries it.
func (k *Key) PublicText() string { return base64.StdEncoding.EncodeToString(k.Public()) }

// signedPrefix starts every signed form (see the package doc).
const signedPrefix = "logbook event signature v1\n"

// Signed returns the bytes a signature covers: the v1 prefix line, the
// subject, expect (the message's Nats-Expected-Last-Subject-Sequence
// header, "" when it carries none, written "-"), each on a line, then
// data as stored.
func Signed(subject, expect string, data []byte) []byte {
	if expect == "" {
		expect = "-"
	}
	b := make([]byte, 0, len(signedPrefix)+len(subject)+len(expect)+2+len(data))
	b = append(b, signedPrefix...)
	b = append(b, subject...)
	b = append(b, '\n')
	b = append(b, expect...)
	b = append(b, '\n')
	return append(b, data...)
}

// Sign returns the header values of a message on subject whose expected
// last subject sequence header is expect ("" for none) and body data:
// the key id and the base64 signature of Signed.
func (k *Key) Sign(subject, expect string, data []byte) (keyID, sig string) {
	s := ed25519.Sign(k.Private, Signed(subject, expect, data))
	return k.ID, base64.StdEncoding.EncodeToString(s)
}

// keyFile is a key's file form (JSON, mode 0600).
type keyFile struct {
	Key       string `json:"key"`
	Seed      string `json:"seed"` // standard base64 of the 32-byte RFC 8032 seed
	Principal string `json:"principal"`
	Role      Role   `json:"role"`
}

// MarshalJSON returns the key's file form: {"key","seed","principal",
// "role"}, the seed standard base64. It holds the private key.
func (k *Key) MarshalJSON() ([]byte, error) {
	return json.Marshal(keyFile{Key: k.ID, Seed: base64.StdEncoding.EncodeToString(k.Private.Seed()), Principal: k.Principal, Role: k.Role})
}

// UnmarshalJSON reads the file form MarshalJSON writes, refusing a seed
// that is not 32 bytes, a key id that is not the seed's, or an unknown role.
func (k *Key) UnmarshalJSON(b []byte) error {
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	seed, err := base64.StdEncoding.DecodeString(f.Seed)
	if err != nil || len(seed) != ed25519.SeedSize {
		return fmt.Errorf("attest: key %s: seed is not %d bytes of base64", f.Key, ed25519.SeedSize)
	}
	if _, err := ParseRole(string(f.Role)); err != nil {
		return fmt.Errorf("attest: key %s: %w", f.Key, err)
	}
	nk := newKey(ed25519.NewKeyFromSeed(seed), f.Principal, f.Role)
	if f.Key != "" && f.Key != nk.ID {
		return fmt.Errorf("attest: key file says id %s, its seed is key %s", f.Key, nk.ID)
	}
	*k = *nk
	return nil
}

// maxKeyFile is the most bytes ReadKey and ReadPin read (a key file is
// under a hundred): they read only a regular file (hookspool.ReadRegular),
// so a FIFO or a device in a key's place is refused, never blocked on.
const maxKeyFile = 64 << 10

// ReadKey reads a key file written by WriteKey. Errors name path.
func ReadKey(path string) (*Key, error) {
	b, err := hookspool.ReadRegular(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	var k Key
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("read key %s: %w", path, err)
	}
	return &k, nil
}

// WriteKey writes k to path, mode 0600, creating its directory (0700),
// through a temporary file renamed into place.
func WriteKey(path string, k *Key) error {
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'))
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ParsePublic reads a public key as key.registered and a pin file carry
// it: standard base64 of 32 bytes (surrounding space ignored).
func ParsePublic(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("attest: public key %q: want standard base64 of %d bytes", s, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// ReadPin reads a pinned admin public key file (one line: the key in
// standard base64). Errors name path.
func ReadPin(path string) (ed25519.PublicKey, error) {
	b, err := hookspool.ReadRegular(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	pub, err := ParsePublic(string(b))
	if err != nil {
		return nil, fmt.Errorf("read pin %s: %w", path, err)
	}
	return pub, nil
}

// WritePin writes pub to path as ReadPin reads it, mode 0600.
func WritePin(path string, pub ed25519.PublicKey) error {
	return writeFile(path, []byte(base64.StdEncoding.EncodeToString(pub)+"\n"))
}

// ErrNoRole reports a role name outside Roles.
var ErrNoRole = errors.New("attest: unknown role")

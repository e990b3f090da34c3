package events

// The key aggregate binds signing keys to principals and roles. Its
// events are signed by the admin key a host pins (adapters/attestation), and
// a reader folds them in stream order to know, at each sequence, which
// keys may append what:
//
//	lb.ev.key.<key-id>   key.registered, then at most one key.revoked
//	lb.ev.key.signing    signing.began, once per log
//
// A key id is the lowercase hex of the first 8 bytes of the SHA-256 of
// the key's 32-byte Ed25519 public key (16 characters).

// KindKey is the key aggregate kind: lb.ev.key.<key-id>.
const KindKey = "key"

// SigningAggregate is the aggregate id of the one signing.began event.
const SigningAggregate = "signing"

// KeyRegistered binds the Ed25519 public key Public (standard base64 of
// its 32 bytes; its id is the aggregate id) to Principal (e.g.
// "serve@build-3", "worker@build-3", "alice@build-3") in Role (admin,
// serve, writer, worker: adapters/attestation.Roles). From its sequence on,
// events signed by the key are attested when Role may append their type.
type KeyRegistered struct {
	Public    string `json:"public"`
	Principal string `json:"principal"`
	Role      string `json:"role"`
}

// EventType implements Payload.
func (KeyRegistered) EventType() string { return "key.registered" }

// KeyRevoked ends the key of its aggregate: events it signed after the
// revocation's sequence are refused, those before it stay valid. Reason
// says why (1..1000 bytes).
type KeyRevoked struct {
	Reason string `json:"reason"`
}

// EventType implements Payload.
func (KeyRevoked) EventType() string { return "key.revoked" }

// SigningBegan marks the sequence from which every event must be signed:
// events stored after it that carry no valid signature are quarantined;
// those before it are "before signing". Host names the host whose serve
// began it.
type SigningBegan struct {
	Host string `json:"host"`
}

// EventType implements Payload.
func (SigningBegan) EventType() string { return "signing.began" }

func registerKey(r *Registry) {
	r.Register(KeyRegistered{}, 1, false)
	r.Register(KeyRevoked{}, 1, false)
	r.Register(SigningBegan{}, 1, false)
}

package datadir

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// KeyLine is one key `logbook keys show` prints: a signing key of this
// host's on a cluster, and its state on the log.
type KeyLine struct {
	Role      attestation.Role `json:"role"`
	ID        string           `json:"id"`
	Public    string           `json:"public"`
	Principal string           `json:"principal"`
	File      string           `json:"file"`
	// Registered and Revoked are the sequences of the key's
	// key.registered and key.revoked on the log (0: none, or the log
	// was not read).
	Registered uint64 `json:"registered,omitempty"`
	Revoked    uint64 `json:"revoked,omitempty"`
}

// ClusterKeyLines returns the keys this host signs with on a cluster,
// serve's, a writer's and a worker's (ClusterKey, which makes those
// missing), in that order, their states not read. Errors are
// ClusterKey's.
func (d Dir) ClusterKeyLines() ([]KeyLine, error) {
	var lines []KeyLine
	for _, r := range []natslog.Role{natslog.RoleServe, natslog.RoleWriter, natslog.RoleWorker} {
		k, name, err := d.ClusterKey(r)
		if err != nil {
			return nil, err
		}
		lines = append(lines, KeyLine{Role: k.Role, ID: k.ID, Public: k.PublicText(), Principal: k.Principal, File: d.KeyPath(name)})
	}
	return lines, nil
}

// KeyStates fills in each line's Registered and Revoked from l's key
// events (natslog.Log.KeyState). It stops at the first error, the log's.
func KeyStates(ctx context.Context, l *natslog.Log, lines []KeyLine) error {
	for i := range lines {
		info, ok, err := l.KeyState(ctx, lines[i].ID)
		if err != nil {
			return err
		}
		if ok {
			lines[i].Registered, lines[i].Revoked = info.Registered, info.Revoked
		}
	}
	return nil
}

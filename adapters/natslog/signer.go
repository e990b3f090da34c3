package natslog

import (
	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// signerOf is what a record read carries of vd, the Verifier's
// judgement of it: status, key, principal and role.
func signerOf(vd attestation.Verdict) events.Signer {
	return events.Signer{Status: string(vd.Status), Key: vd.Key, Principal: vd.Principal, Role: string(vd.Role)}
}

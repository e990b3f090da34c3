package command

import (
	"fmt"
	"strings"
)

// ErrEnvShape is what CheckEnv's errors wrap: an environment entry that
// is not KEY=VALUE with a non-empty KEY. It is a constant, as reducers
// hold no package-level variables.
const ErrEnvShape = envError("want KEY=VALUE")

// envError is the type of ErrEnvShape.
type envError string

// Error returns the text of e.
func (e envError) Error() string { return string(e) }

// CheckEnv reports the first entry of env (a command's environment,
// "KEY=VALUE" each) without "=" or with an empty KEY, wrapping
// ErrEnvShape. The error names the entry by EnvName, never by its
// value. It is the one check of an environment's shape: the reducer's,
// and the one adapters/worker.CheckEnv runs for every requester before
// a request is sent.
func CheckEnv(env []string) error {
	for i, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return fmt.Errorf("%s: %w (no \"=\")", EnvName(i, kv), ErrEnvShape)
		case k == "":
			return fmt.Errorf("%s: %w (empty KEY)", EnvName(i, kv), ErrEnvShape)
		}
	}
	return nil
}

// maxEnvName is the longest variable name EnvName quotes, in bytes.
const maxEnvName = 128

// EnvName names entry i of a command's environment, kv, in an error:
// "environment variable NAME" when NAME, the text before kv's first "="
// (all of kv without one), is a letter or "_" followed by letters,
// digits, "_", "-" or "." (at most 128 bytes), else "env[i]". The value
// (after "=") is never part of it.
func EnvName(i int, kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	if !envName(k) {
		return fmt.Sprintf("env[%d]", i)
	}
	return "environment variable " + k
}

// envName reports whether k is a name EnvName quotes.
func envName(k string) bool {
	if k == "" || len(k) > maxEnvName {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

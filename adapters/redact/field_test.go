package redact_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/redact/redacttest"
)

// TestCheckField: every fake secret shape, alone or inside a name, is
// refused naming the field and a rule, never the value; plain names,
// ids and folders pass; a custom rule counts.
func TestCheckField(t *testing.T) {
	r, err := redact.New([]string{`internal-[0-9]{6}`})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range redacttest.Shapes() {
		for _, v := range []string{sh.Text, "fix " + sh.Text + " now"} {
			err := r.CheckField("--name", "name", v)
			var fe *redact.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, redact.ErrSecretField) {
				t.Errorf("%s: %v, want a FieldError", sh.Name, err)
				continue
			}
			if strings.Contains(err.Error(), sh.Secret) || !strings.HasPrefix(err.Error(), "--name: holds what looks like a secret (rule ") ||
				!strings.HasSuffix(err.Error(), "; choose another name") || len(fe.Rules) == 0 || fe.Rules[0] == "" {
				t.Errorf("%s: %q", sh.Name, err)
			}
		}
	}
	for _, v := range []string{"", "fix-login", "01JB7M3W2Q9X8K4N5P6R7S8T9V", "/home/u/src/app", "worktree/fix-login", "feature x (v2)"} {
		if err := r.CheckField("f", "name", v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	if err := r.CheckField("id", "id", "ok", "internal-123456"); err == nil || err.Error() != "id: holds what looks like a secret (rule custom-1); choose another id" {
		t.Errorf("custom rule: %v", err)
	}
	if err := (*redact.Redactor)(nil).CheckField("x", "y", "gl"+"pat-"+strings.Repeat("a1B2", 5)); err == nil {
		t.Error("nil Redactor: no refusal by the default rules")
	}
}

func ExampleRedactor_CheckField() {
	err := redact.Default().CheckField("--title", "title", "rotate "+"AK"+"IA"+"Q3EGRAXZ7WJ4M5HT")
	fmt.Println(err)
	// Output: --title: holds what looks like a secret (rule aws_access_key); choose another title
}

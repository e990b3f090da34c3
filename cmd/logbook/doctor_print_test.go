package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/doctor"
)

// TestPrintChecks_OneLineEach: a check naming a path that holds a
// newline or an escape sequence (a --data of the user's) prints on its
// own lines, the path's control characters shown escaped, so that no
// line of doctor's can be forged by a name.
func TestPrintChecks_OneLineEach(t *testing.T) {
	var buf bytes.Buffer
	printChecks(&buf, []doctorCheck{{
		Status: doctor.Warn, Name: "data dir",
		Detail: "/tmp/dd\nok    server       running \x1b[2J",
		Fix:    "set --data /tmp/a\nb",
	}})
	want := "warn  data dir     /tmp/dd\\nok    server       running \\x1b[2J\n" +
		"                   fix: set --data /tmp/a\\nb\n"
	if got := buf.String(); got != want {
		t.Errorf("printChecks:\n%s\nwant:\n%s", got, want)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
}

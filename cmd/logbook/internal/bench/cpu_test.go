package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPageTouchCost(t *testing.T) {
	d := pageTouchCost(3)
	// A page fault costs something, and far less than a millisecond on
	// any machine the bench runs on.
	if d <= 0 || d > time.Millisecond {
		t.Fatalf("pageTouchCost = %v, want in (0, 1ms]", d)
	}
	var b strings.Builder
	if err := (Report{PageTouchNs: int64(d)}).WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "machine: a page of memory first touched costs ") {
		t.Errorf("WriteText does not name the page's cost:\n%s", b.String())
	}
}

package hookspool

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// startTree runs sh -c script under this test process; script prints a
// pid on its first line, which startTree returns.
func startTree(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child pid: %q: %v", buf[:n], err)
	}
	return pid
}

func TestAgentProcess_SkipsShells(t *testing.T) {
	// this test process → sh → sh → sleep: the agent of sleep is this
	// test process, the nearest ancestor that is not a shell.
	pid := startTree(t, `sh -c 'echo $$; exec sleep 30'`)
	p, err := AgentProcess(pid, "h", "b")
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || p.PID != os.Getpid() || p.Host != "h" || p.Boot != "b" || p.Start == 0 || p.PidNS != PidNS() || p.PidNS == "" {
		t.Fatalf("agent = %+v, want this test process (%d)", p, os.Getpid())
	}
	if c := CheckProcess(*p, "h", "b"); c.Result != events.ProcessAlive {
		t.Errorf("check of this live process = %+v", c)
	}
}

func TestCheckProcess(t *testing.T) {
	boot := BootID()
	if boot == "" {
		t.Skip("no /proc/sys/kernel/random/boot_id")
	}
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := readStat(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := events.Process{PID: sleep.Process.Pid, Start: st.start, Host: "h", Boot: boot, Comm: st.comm}
	if c := CheckProcess(p, "h", boot); c.Result != events.ProcessAlive {
		t.Fatalf("live: %+v", c)
	}
	reused := p
	reused.Start++
	if c := CheckProcess(reused, "h", boot); c.Result != events.ProcessGone {
		t.Errorf("another start time: %+v, want gone", c)
	}
	if c := CheckProcess(p, "other", boot); c.Result != events.ProcessUnknown {
		t.Errorf("another host: %+v, want unknown", c)
	}
	if c := CheckProcess(p, "h", "another-boot"); c.Result != events.ProcessGone {
		t.Errorf("rebooted: %+v, want gone", c)
	}
	sleep.Process.Kill()
	sleep.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := CheckProcess(p, "h", boot)
		if c.Result == events.ProcessGone && c.Detail != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("killed: %+v, want gone", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkAgentProcess is what finding its agent process adds to each
// hook's start-up: a few reads of /proc (this test process's parents).
func BenchmarkAgentProcess(b *testing.B) {
	for b.Loop() {
		if _, err := AgentProcess(os.Getpid(), "h", "b"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPassThrough_LogbookPrograms: logbook-hook, which hands a payload
// it does not handle to logbook as its child, and logbook are never taken
// for the agent.
func TestPassThrough_LogbookPrograms(t *testing.T) {
	for _, comm := range []string{"logbook-hook", "logbook", "bash"} {
		if !passThrough(comm) {
			t.Errorf("%s is taken for the agent", comm)
		}
	}
	for _, comm := range []string{"claude", "node", "python3"} {
		if passThrough(comm) {
			t.Errorf("%s is passed through", comm)
		}
	}
}

// TestAgentProcess_Chain: a program between the agent and the hook that
// is no shell (here xargs, as a dispatcher script would be) is found
// first, and the chain goes on above it to the agent (this test process)
// and the agent's own ancestors that are no shells, each with its start
// time: the session takes its agent from the chains its hooks share.
func TestAgentProcess_Chain(t *testing.T) {
	if _, err := exec.LookPath("xargs"); err != nil {
		t.Skip("no xargs")
	}
	// this test process → sh → xargs → sh → sleep
	pid := startTree(t, `echo | xargs sh -c 'echo $$; exec sleep 30'`)
	p, err := AgentProcess(pid, "h", "b")
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || p.Comm != "xargs" || len(p.Chain) < 2 {
		t.Fatalf("agent = %+v, want xargs with a chain above it", p)
	}
	if c := p.Chain[0]; c.PID != p.PID || c.Start != p.Start || c.Comm != "xargs" {
		t.Errorf("chain[0] = %+v, want the process found (%d)", c, p.PID)
	}
	self, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Chain[1]; c.PID != os.Getpid() || c.Start != self.start {
		t.Errorf("chain[1] = %+v, want this test process (%d, start %d)", c, os.Getpid(), self.start)
	}
	for _, c := range p.Chain {
		if c.PID <= 1 || passThrough(c.Comm) {
			t.Errorf("chain holds %+v: pid 1 and shells are left out", c)
		}
	}
}

// TestOwnNSpid: /proc is this process's own namespace's only when the
// NSpid line of its status lists its pid alone.
func TestOwnNSpid(t *testing.T) {
	for _, c := range []struct {
		status string
		want   bool
	}{
		{"Name:\tx\nNSpid:\t42\nNSpgid:\t42\n", true},
		{"Name:\tx\nNSpid:\t1459\t42\n", false}, // /proc of the namespace above
		{"Name:\tx\nNSpid:\t43\n", false},       // another process's pid
		{"Name:\tx\nPid:\t42\n", false},         // no NSpid line: cannot say
		{"NSpid:\t42", true},
	} {
		if got := ownNSpid([]byte(c.status), 42); got != c.want {
			t.Errorf("ownNSpid(%q, 42) = %v, want %v", c.status, got, c.want)
		}
	}
}

// TestCheckProcess_OtherPidNamespace: a process recorded in another PID
// namespace, or in one its recorder could not name, is never looked up
// here, alive or not: its pid numbers another process here. One recorded
// in this namespace, or before namespaces were recorded, is.
func TestCheckProcess_OtherPidNamespace(t *testing.T) {
	boot, ns := BootID(), PidNS()
	if boot == "" || ns == "" {
		t.Skipf("boot id %q, PID namespace %q: unknown", boot, ns)
	}
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := readStat(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := events.Process{PID: sleep.Process.Pid, Start: st.start, Host: "h", Boot: boot, Comm: st.comm}
	for _, pidns := range []string{"", ns} {
		p.PidNS = pidns
		if c := CheckProcess(p, "h", boot); c.Result != events.ProcessAlive {
			t.Errorf("PID namespace %q: %+v, want alive", pidns, c)
		}
	}
	sleep.Process.Kill()
	sleep.Wait()
	for _, pidns := range []string{"pid:[1]", events.PidNSUnknown} {
		p.PidNS = pidns
		if c := CheckProcess(p, "h", boot); c.Result != events.ProcessUnknown || !strings.Contains(c.Detail, pidns) {
			t.Errorf("PID namespace %q: %+v, want unknown, naming it", pidns, c)
		}
	}
	p.PidNS = ns
	if c := CheckProcess(p, "h", boot); c.Result != events.ProcessGone {
		t.Errorf("PID namespace %q (this one), killed: %+v, want gone", ns, c)
	}
}

package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/logbook-dev/logbook/sandbox"
)

func ExampleStart() {
	ws, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(ws)

	spec := sandbox.Spec{
		Argv:      []string{"sh", "-c", "echo hello; echo oops >&2; exit 3"},
		Env:       []string{"PATH=/usr/bin:/bin"},
		Workspace: ws,
		Mode:      sandbox.FullAccess, // ReadOnly or WorkspaceWrite need bubblewrap
	}
	var out strings.Builder
	p, err := sandbox.Start(context.Background(), spec, func(c sandbox.Chunk) {
		fmt.Fprintf(&out, "%s@%d %q\n", c.Stream, c.Offset, c.Data)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := p.Wait()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.String())
	fmt.Println("exit", res.ExitCode)
	// Unordered output:
	// stdout@0 "hello\n"
	// stderr@0 "oops\n"
	// exit 3
}

package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
)

// Build compiles the main package pkg (an import path, or a directory
// relative to the working directory, of the current module or of one it
// requires) into the executable out, mode 0755, as `go run` links it:
// without DWARF and symbol table (-s -w), and kept in the go command's
// build cache. Another Build of the same package from the same inputs
// (another test binary's, a later run's) copies the cached executable
// rather than link it again; a change to any package it links links it
// anew. It runs in the caller's working directory, so the versions built
// are go.mod's. out is written by cp(1), a child of the go command, never
// open for writing in the calling process (see WriteExecutable). A
// failed build's error carries go's output.
func Build(ctx context.Context, pkg, out string) error {
	c := exec.CommandContext(ctx, "go", "run", "-exec", "cp", pkg, out)
	if b, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s into %s: %v: %s", pkg, out, err, bytes.TrimSpace(b))
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return fmt.Errorf("build %s into %s: %w", pkg, out, err)
	}
	return nil
}

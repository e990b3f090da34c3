// Package sandbox runs one command, under a pseudo-terminal or under pipes,
// optionally inside a bubblewrap boundary, and stops its whole process tree
// on request. It knows nothing about events or the log: a worker turns the
// Chunks and the Result it reports into events.
//
// # Modes
//
// A Spec names one of three modes, the same words the session aggregate
// stores:
//
//   - ReadOnly: the whole file system, the workspace included, is read-only;
//     /tmp and /run are private, empty and writable; there is no network.
//   - WorkspaceWrite: as ReadOnly, but the workspace is writable, except for
//     protected paths.
//   - FullAccess: the command runs directly, with no boundary at all.
//
// ReadOnly and WorkspaceWrite are the restricted modes. They run the command
// under bubblewrap (bwrap) with --unshare-net, --unshare-pid,
// --die-with-parent, --chdir to the working directory, and these mounts, in
// this order: --ro-bind / /, --dev /dev, --proc /proc, --tmpfs /tmp,
// --tmpfs /run, the workspace bound onto itself (--bind or --ro-bind), and
// every protected path --ro-bind'ed onto itself. Because the tmpfs mounts
// come first, a workspace under /tmp stays visible. /run is hidden because a
// read-only mount does not stop connect(2) on the Unix sockets there
// (databases, D-Bus, container engines). If bubblewrap is missing or cannot
// build that boundary, a restricted command is refused with an error
// wrapping ErrRefused; it is never run unconfined.
//
// # Protected paths
//
// In the restricted modes these stay read-only even inside a writable
// workspace: the paths listed in Spec.Protected and the workspace's
// top-level .git (the whole directory, or a .git file together with the git
// directory it names if that lies in the workspace). All of .git is protected,
// not just .git/config and .git/hooks: git also follows files such as
// .git/commondir that a command could create to point git at a config of its
// own, and a writable .git could be renamed away and replaced. So git commands
// that only read (status, diff, log) work, and commands that write the
// repository (add, commit, fetch) fail; run them in FullAccess. Paths that do
// not exist when the command starts are not protected, nor are repositories
// nested deeper in the workspace.
//
// # What is contained
//
// In the restricted modes, the command and everything it starts:
//   - cannot write outside the workspace, except to its own /tmp, /run and
//     /dev/shm, which are private and discarded at exit;
//   - cannot open network connections, loopback included, nor reach abstract
//     Unix sockets (they live in the network namespace);
//   - cannot see host processes, and die together: when the command exits, or
//     is killed, bubblewrap's PID 1 ends and the kernel kills every process left
//     in the namespace, including ones that called setsid or daemonized.
//
// What is not contained:
//   - reading: every file the worker can read outside /tmp and /run is
//     readable, secrets in $HOME included;
//   - Unix sockets in the file system outside /tmp and /run accept
//     connections; a read-only mount does not stop connect(2);
//   - CPU, memory, disk and process-count limits; there are none;
//   - in FullAccess, nothing: in particular a descendant that leaves the
//     process group (setsid, a daemon, a job-control shell's jobs) survives
//     Stop and the command's exit. Wait does not hang on it (see
//     Result.Lingering), but it keeps running.
//
// # Terminal and environment
//
// The command's environment is exactly Spec.Env, never the worker's, plus
// PWD set to the working directory (bubblewrap always sets PWD, so every mode
// does, for the same environment everywhere). With Spec.TTY the command runs
// on a fresh pseudo-terminal of TermCols × TermRows and the variables of
// TTYEnv override Spec.Env; without it, stdin, stdout and stderr are three
// pipes, and stdout and stderr are reported apart.
//
// # Stopping
//
// Every command runs in a new session, so its process group is its own. Stop
// sends SIGTERM to the group, then SIGKILL to the group Grace later. In the
// restricted modes SIGTERM goes to every member but bubblewrap itself, which
// would otherwise die at once and take the command with it, so the command
// gets its full Grace. When the group leader exits on its own, whatever is
// left of its group is killed.
package sandbox

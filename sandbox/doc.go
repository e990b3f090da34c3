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
//   - ReadOnly: the command sees its workspace read-only, the system
//     directories read-only, an empty home and the allowlist (Spec.Allow),
//     and nothing else of the host; /tmp and /run are private, empty and
//     writable; there is no network.
//   - WorkspaceWrite: as ReadOnly, but the workspace is writable, except for
//     protected paths and files with hard links out of reach.
//   - FullAccess: the command runs directly, with no boundary at all.
//
// ReadOnly and WorkspaceWrite are the restricted modes. They run the command
// under bubblewrap (bwrap) in new user, mount, PID, network, IPC, UTS and
// (where the kernel has them) cgroup namespaces, with every capability
// dropped (--cap-drop ALL, as root too), no further user namespaces
// (--disable-userns), --die-with-parent and --chdir to the working
// directory. The file system is deny by default: bubblewrap's root is an
// empty tmpfs, read-only once the mounts are made, and gets, in this
// order: the SystemDirs read-only (/usr, /bin, /sbin, /lib*, /etc, /opt; a
// symbolic link among them as the same link), with every file and
// directory of /etc that other users may not read covered (searched at
// each start, or kept by an EtcWatch between starts while nothing that
// decides it changed); a fresh /dev,
// read-only, with a private /dev/shm; a fresh /proc whose /proc/sys is
// read-only (bwrap leaves it writable, and root without capabilities still
// holds an owner's rights on sysctls such as kernel.core_pattern); private
// /tmp and /run; then, parents first, the command's home (HOME in
// Spec.Env) as an empty private tmpfs, the Spec.Allow entries and the
// workspace (--bind or --ro-bind); the protected paths read-only; the
// placeholders; the paths read-only for their hard links; and the hidden
// paths, covered (resolved at each start, or kept by a HiddenWatch
// between starts while nothing that decides their resolution changed).
// /tmp, /run, /dev/shm and the home are RAM-backed tmpfs of
// bounded size (Limits.TmpBytes for /tmp and the home, DefaultRunBytes,
// DefaultShmBytes). /run is private because a read-only mount does not stop
// connect(2) on the Unix sockets there (databases, D-Bus, container
// engines). The home is not mounted where it lies in the workspace, in a
// system directory, or is an Allow entry itself. If bubblewrap is missing
// or cannot build that boundary, a restricted command is refused with an
// error wrapping ErrRefused; it is never run unconfined.
//
// # Protected paths and hard links
//
// In WorkspaceWrite these stay read-only inside the writable workspace:
// every file or directory named like one of ProtectedNames (.git, .claude,
// .codex, .agents, .logbook, .mcp.json, .envrc) at any depth, nested
// repositories included, the git directory a .git file names inside the
// workspace, and the paths listed in Spec.Protected. A protected path is a
// mount point inside the boundary, so it can be neither written, renamed
// nor removed (EROFS, EBUSY), and a hard link to a file in it cannot be
// made from the writable part (EXDEV). A top-level protected name that does
// not exist when the command starts is kept missing: an empty read-only
// directory (or empty file) is mounted there while the command runs. Its
// mount point is a placeholder on the host (an empty directory or file of
// mode 0000; the workspace is the host's directory, and a mount needs
// one), made and removed by that command; recorded first in Spec.Ledger,
// so that SweepPlaceholders removes what a killed worker left. Each directory between the
// workspace and a nested protected path is bound onto itself, a mount
// point too, so it can be neither renamed nor removed: a nested
// repository cannot be moved aside and a writable one made in its place.
// The same holds for a hidden path in a writable view (the data dir in
// the workspace): it and the directories above it stay where the hidden
// list names them. More than 256 such directories refuse the workspace.
//
// What git on the host would run from the work tree is protected too:
// for the workspace's repository and each nested one found at the
// start (their config and config.worktree, a worktree's common config,
// the files [include] and [includeIf] name, whatever their condition,
// and the worker's own global and system configuration), the directory
// core.hooksPath and init.templateDir name (with husky's .husky/_ its
// parent), each included file in the workspace, and each word with a
// slash in the value of a key that runs a program (gitCommandKeys:
// core.fsmonitor, core.sshCommand, filters, diff and merge drivers, !
// aliases, …), relative paths taken from the repository's top level. A
// named path that is missing is kept missing: a placeholder at the top
// level, else its deepest existing directory read-only. One reached
// through a symbolic link, and a hooks directory that is the workspace
// itself, refuse the workspace. A workspace inside another repository's
// work tree is held to that repository's configuration.
//
// bubblewrap resolves each path when it mounts it, so a start locks, with
// flock(2), for every worker process on the host: a WorkspaceWrite command
// holds its workspace exclusively from before it is searched until its
// boundary is gone, and every restricted start holds shared each directory
// above a path it mounts by name (the workspace, the allowlist entries,
// the hidden paths; not the home's tmpfs) while it runs, opening none of
// them through a symbolic link, and refusing where it cannot open one (a
// command could make a directory unreadable to pass the lock by); once it holds them it resolves every path again and
// refuses (ErrRefused) if one now resolves elsewhere than when it was
// planned. A start of a spec like one this process started before takes
// the locks that one took first and plans once, under them: that plan
// stands if it locks the very same directories, and is the start's first
// plan otherwise. No command can swap a directory for a symbolic link between
// the search and the mounts: two WorkspaceWrite
// commands in one workspace, or one in a directory below another's, run
// one after the other, the second waiting for as long as its context
// lets it. A ReadOnly command of the same workspace does not wait, and a
// ReadOnly command lets its locks go once its command runs (its mounts
// are made by then), so a long reader holds up no writer.
//
// A workspace that is a linked worktree (its .git a file naming
// <common>/worktrees/<name> outside it, whose gitdir file names that
// .git back, <common> holding HEAD, objects and refs) sees <common>
// read-only in both restricted modes, hidden paths in it covered; a .git
// file naming anything else shows nothing. Git commands that only read
// (status, diff, log) work; commands that write a repository (add,
// commit, fetch) fail; run them in FullAccess.
//
// A regular file of the workspace with more links than the names the
// scan finds for it in the workspace outside protected paths (a link into
// pnpm's store or uv's cache, into another project, or a second name of a
// protected file) is read-only: protected files are checked by inode, not
// by name. Such links are not broken on write. A directory holding only
// such files is bound read-only as a whole, and where more than 64 mounts
// would be needed, one holding only a few other files too (the fewest
// that fit); Result.Limits counts both kinds.
//
// Start refuses WorkspaceWrite (ErrRefused, with the reason) for a
// workspace where a protected name is a symbolic link (the link could be
// replaced), with more than 400,000 entries to search, or whose hard links
// cannot be covered by 64 mounts; ReadOnly runs there.
//
// Spec.Hidden paths (the data dir, CredentialPaths) are covered in both
// restricted modes where they lie in what the command sees: a directory
// by an empty, inaccessible, read-only tmpfs, a file by an empty
// read-only file.
//
// # What is contained
//
// In the restricted modes, the command and everything it starts:
//   - cannot read or write outside the workspace, the system directories
//     and the allowlist, except in its own /tmp, /run, /dev/shm and home,
//     which are private, bounded and discarded at exit;
//   - cannot write through a hard link to a file outside the workspace;
//   - cannot open network connections, loopback included, nor reach abstract
//     Unix sockets (they live in the network namespace);
//   - cannot see host processes, their memory or environment, nor the
//     host's SysV IPC objects;
//   - holds no capability, so cannot mount, unmount, enter namespaces or
//     change the hostname, even when the worker is root;
//   - inherits no file descriptor but its standard input, output and error:
//     descriptors the worker itself inherited are closed on exec;
//   - die together: when the command exits, or is killed, bubblewrap's PID 1
//     ends and the kernel kills every process left in the namespace,
//     including ones that called setsid or daemonized.
//
// # Limits
//
// Each command gets a process-count limit (Limits.Procs, DefaultProcs) and,
// where a memory cgroup can be made, a memory limit (Limits.MemoryBytes,
// DefaultMemoryBytes); Result.Limits says which held and by what. A cgroup
// v2 with the pids controller delegated holds the whole command from its
// first instruction (clone3 CLONE_INTO_CGROUP) in every mode, and is killed
// as a whole when the command ends, so in FullAccess too nothing it started
// outlives it. Without one, on cgroup v1 with writable pids and memory
// hierarchies (root), the restricted modes use those: bwrap's sandbox waits
// on --block-fd until its first process is inside. An unprivileged worker
// without a delegated cgroup bounds restricted commands with RLIMIT_NPROC,
// which counts in the command's own user namespace, and has no memory limit.
// RLIMIT_NPROC never binds root, so a root worker without any cgroup has no
// process limit, and FullAccess on cgroup v1 has no limits. The private /tmp,
// /run and /dev/shm are bounded by their tmpfs sizes in every case.
//
// What is not contained:
//   - reading what the boundary shows: the workspace, the system
//     directories (world-readable /etc), the allowlist, a linked
//     worktree's common git directory (with whatever its config holds);
//   - Unix sockets in what it shows accept connections; a read-only mount
//     does not stop connect(2);
//   - a repository created during the command below the top level (a new
//     sub/.git) is writable, its configuration included (and with it
//     what git on the host runs there); only names that exist at the
//     start, and missing top-level ones, are protected, and what a
//     repository's configuration names from the next command on. Paths
//     in a configuration value that only the shell expands ($HOME/x),
//     and what a hook itself runs from the work tree, are not protected. That includes a submodule
//     whose checkout is missing: a .git made at its path is one git on
//     the host then enters (git status recurses into it); likewise a hard
//     link made into the workspace from outside while the command runs;
//   - writes to a writable (Allow.Write) allowlist entry reach the host,
//     and nothing stops a command from swapping directories in one while
//     another command mounts a path below it (the workspace or a hidden
//     path of a command whose workspace lies in a writable allowlist
//     entry);
//   - in FullAccess, nothing: a descendant that leaves the process group
//     and the session (setsid, a daemon) is stopped by Stop only if it is
//     still a descendant of the leader when Stop is called, and survives
//     the command's own exit. Wait does not hang on it (see
//     Result.Lingering), but it keeps running.
//
// bwrap's --new-session is not used: it would take the pseudo-terminal
// away as the controlling terminal (no job control, no /dev/tty). The
// TIOCSTI injection it guards against needs a terminal shared with
// something outside; a command's terminal is its own fresh pseudo-terminal
// (or none, with pipes: a new session, unless the worker has none to
// share; see Stopping), the boundary's /dev/pts is a new instance, and
// TIOCSTI on any other terminal needs CAP_SYS_ADMIN, which is dropped.
//
// # Exit status
//
// Result says how the command itself ended in every mode: an exit status,
// or the signal that killed it. bubblewrap reports a command killed by
// signal N as exit status 128+N, which a command can give itself, so in
// the restricted modes bubblewrap runs the reporter first (package
// reporter: Spec.Reporter, by default logbook-reporter beside the
// worker's executable, else that executable itself, slower to start),
// bound read-only at /.logbook-reporter (the only thing of the host the
// boundary shows beyond the list above): it runs the command as its
// child and writes the child's wait status to a pipe to the worker. The
// command never holds that pipe, and cannot reach the reporter's copy:
// the reporter is not dumpable, so the command can neither open its
// descriptors in /proc nor ptrace it. A command that kills its reporter
// ends the boundary, and with it itself, and is recorded as killed by
// SIGKILL. The reporter ignores the signals a stop or a terminal sends
// to the group, and its threads (the Go runtime's) are allowed on top
// of Limits.Procs.
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
// Every command's process group is its own. A command on a pseudo-terminal
// runs in a new session, whose controlling terminal that is; one on pipes
// too, but where the worker has no controlling terminal and, not leading
// its session, cannot get one, and the command's whole tree is held
// otherwise (a restricted command's PID namespace, a FullAccess command's
// cgroup v2, see Process.Cgroup): such a command (bubblewrap, in a
// restricted mode) then runs in the worker's session, with no terminal either way, and, where
// the kernel groups each session's processes for scheduling
// (sched_autogroup_enabled=1), in the worker's group rather than a new
// one, which a busy machine runs last. (Its group then has a parent
// outside it in the same session, so a SIGTSTP the command sends itself
// stops it, where a new session's group would ignore one.) Stop
// sends SIGTERM to the group, then SIGKILL to the group Grace later. In the
// restricted modes SIGTERM goes to every member but bubblewrap itself, which
// would otherwise die at once and take the command with it, so the command
// gets its full Grace. In FullAccess Stop also takes hold of the leader's
// whole tree first (every descendant by parent links, and the session's
// members), each by a pidfd, and signals it with the group, so a
// descendant that called setsid goes too. When the group leader exits on
// its own, whatever is left of its group and session is killed.
//
// Every command's leader gets SIGKILL as its parent-death signal: when the
// worker's process dies (SIGKILL included), the leader dies with it (and
// bubblewrap's --die-with-parent takes a restricted command's namespace).
// What the leader started in its group and session may outlive it; a
// worker that later finds the dead worker's command on the same host kills
// that rest with KillCgroup when the command had a cgroup v2
// (Process.Cgroup: where no limits can be delegated, a FullAccess command
// still gets an empty one as a handle on its tree), else with KillTree,
// from the pid, start time and boot id recorded when the command started.
// Every bubblewrap the package starts runs under an argv[0] that names
// the process that started it (BoundaryMarker), which its first child
// keeps; SweepBoundaries kills those whose starter is gone, with no
// record needed: bubblewrap's first child, blocked until bubblewrap lets
// it go on, outlives a bubblewrap killed in the meantime.
package sandbox

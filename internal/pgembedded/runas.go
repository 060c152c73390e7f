package pgembedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serverUser is the OS account PostgreSQL runs as when we are root.
// initdb and postgres refuse to run as root (a compromised server must not
// own the machine), and Debian's postgresql package creates this account.
const serverUser = "postgres"

// runner executes PostgreSQL programs, as serverUser when we are root and
// directly otherwise.
type runner struct {
	binDir  string
	workDir string // a directory the server user can enter; see command()

	// Set only when running as root.
	runuser  string // path of runuser(1)
	uid, gid int    // serverUser's ids, for chown
}

func newRunner(binDir, workDir string) (*runner, error) {
	r := &runner{binDir: binDir, workDir: workDir}
	if os.Geteuid() != 0 {
		return r, nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return nil, fmt.Errorf("running as root, so PostgreSQL must run as the %q OS user, "+
			"but it cannot be looked up (%v); install the postgresql package, which creates it, "+
			"or run as an ordinary user", serverUser, err)
	}
	if r.uid, err = strconv.Atoi(u.Uid); err != nil {
		return nil, fmt.Errorf("user %q has non-numeric uid %q", serverUser, u.Uid)
	}
	if r.gid, err = strconv.Atoi(u.Gid); err != nil {
		return nil, fmt.Errorf("user %q has non-numeric gid %q", serverUser, u.Gid)
	}
	if r.runuser, err = exec.LookPath("runuser"); err != nil {
		return nil, fmt.Errorf("running as root, so PostgreSQL must run as the %q OS user via runuser(1), "+
			"which is not on PATH: %v", serverUser, err)
	}
	return r, nil
}

func (r *runner) asRoot() bool { return r.runuser != "" }

// command builds an exec.Cmd for a PostgreSQL program.
func (r *runner) command(ctx context.Context, program string, args ...string) *exec.Cmd {
	path := filepath.Join(r.binDir, program)
	var cmd *exec.Cmd
	if r.asRoot() {
		cmd = exec.CommandContext(ctx, r.runuser, append([]string{"-u", serverUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	// The programs resolve their own location and may chdir; a working
	// directory the server user cannot enter (e.g. /root) makes them warn
	// or fail, so run them from a directory we made traversable.
	cmd.Dir = r.workDir
	// On cancellation ask politely first: runuser forwards SIGTERM to its
	// child, whereas SIGKILL would orphan pg_ctl/initdb.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// chownTree gives path (recursively) to the server user. It is applied only
// to directories this package creates for the cluster (pgdata, the socket
// directory, the log file), never to the caller's DataDir as a whole.
func (r *runner) chownTree(path string) error {
	if !r.asRoot() {
		return nil
	}
	return filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, r.uid, r.gid)
	})
}

// makeTraversable ensures the server user can reach dir: dir and each of its
// parents get the "others may search" bit if they lack it. Only that bit is
// ever added; no permission is removed. Without it, a DataDir under a 0700
// directory (os.MkdirTemp's default, or /root) is unreachable for postgres.
func (r *runner) makeTraversable(dir string) error {
	if !r.asRoot() {
		return nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if mode := fi.Mode(); mode.Perm()&0o001 == 0 {
			// Keep the special bits (sticky, setgid): os.Chmod takes them too.
			keep := mode & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid | fs.ModeSetuid)
			if err := os.Chmod(dir, keep|0o001); err != nil {
				return fmt.Errorf("make %s traversable for the %s user: %w", dir, serverUser, err)
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// processAlive reports whether pid is a running PostgreSQL server process.
// Signal 0 checks existence; EPERM means it exists but belongs to another
// user. Because PIDs get reused (notably in containers, where a restarted
// machine hands out the same low PIDs again), the process name is checked
// too when /proc allows it.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// /proc/PID/stat is "PID (comm) STATE ...". No /proc (or unreadable):
	// trust the signal check.
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	s := string(stat)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return true
	}
	name, rest := s[open+1:closing], strings.TrimSpace(s[closing+1:])
	if !strings.HasPrefix(name, "postgres") && !strings.HasPrefix(name, "postmaster") {
		return false
	}
	// A server that has exited but not yet been reaped by its parent
	// (often init, after pg_ctl detached it) still answers signal 0.
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

package pgembedded

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidInfo is what postmaster.pid says, and whether its process lives.
type pidInfo struct {
	exists    bool
	alive     bool
	pid       int
	port      int
	socketDir string
}

// serverPID reads DataDir/pgdata/postmaster.pid. Its lines are: PID, data
// directory, start time, port, first socket directory, listen address,
// shared memory key, status.
func (c *Cluster) serverPID() (pidInfo, error) {
	data, err := os.ReadFile(filepath.Join(c.pgData, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return pidInfo{}, nil
	}
	if err != nil {
		return pidInfo{}, fmt.Errorf("embedded postgres: read postmaster.pid: %w", err)
	}
	info := pidInfo{exists: true}
	lines := strings.Split(string(data), "\n")
	field := func(i int) string {
		if i < len(lines) {
			return strings.TrimSpace(lines[i])
		}
		return ""
	}
	info.pid, _ = strconv.Atoi(field(0))
	info.port, _ = strconv.Atoi(field(3))
	info.socketDir = field(4)
	info.alive = processAlive(info.pid)
	return info, nil
}

// reapServer collects the exited postmaster when it is our own child, which
// happens when this process is a subreaper (see AdoptServers), so that it
// does not linger as a zombie. pg_ctl -w returns once the server removed its
// pid file, a moment before the process itself is gone, hence the short
// poll. ECHILD means it is not ours to reap (init does it).
func reapServer(pid int) {
	if pid <= 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || got == pid || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failure formats an error for a failed command with its output and the
// end of the server log, which is where PostgreSQL explains itself.
func (c *Cluster) failure(what string, out []byte, err error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "embedded postgres: %s: %v", what, err)
	if s := strings.TrimSpace(string(out)); s != "" {
		fmt.Fprintf(&b, "\n%s", s)
	}
	if tail := logTail(c.logPath, 30); tail != "" {
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", c.logPath, tail)
	}
	return errors.New(b.String())
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Log != nil {
		c.opts.Log(fmt.Sprintf(format, args...))
	}
}

// logTail returns up to n last lines of the file at path.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxTail = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxTail {
		_, _ = f.Seek(fi.Size()-maxTail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the content of path from offset on.
func readFrom(path string, offset int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	data, _ := io.ReadAll(f)
	return data
}

// portInUse tells from the server log whether the start failed because the
// TCP port was taken.
func portInUse(log []byte) bool {
	return bytes.Contains(log, []byte("Address already in use")) ||
		bytes.Contains(log, []byte("could not create any TCP/IP sockets"))
}

// freePort asks the kernel for an unused loopback port. Another process can
// take it before PostgreSQL binds it, hence the retry in startServer.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// clearDir removes everything inside dir but keeps dir (and its owner).
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// shellQuote wraps s in single quotes for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

package pgembedded

import "syscall"

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// AdoptServers makes the calling process a child subreaper.
//
// pg_ctl detaches the server it starts, so once pg_ctl exits the postmaster
// is re-parented to the nearest subreaper ancestor, normally init. When it
// exits later, it stays a "<defunct> postgres" zombie until init gets round
// to reaping it, which looks like a leaked server to anyone checking with
// pgrep right after Stop. As a subreaper, this process adopts those servers
// (also ones started by its descendants, e.g. test binaries); Stop then
// reaps its own server at once, and ReapAdopted collects the others.
// Meant for short-lived supervisors such as cmd/pgcluster.
func AdoptServers() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// ReapAdopted collects every exited child without blocking. Call it only
// when the process has no exec.Cmd of its own left to Wait for: it would
// otherwise steal their exit status.
func ReapAdopted() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}

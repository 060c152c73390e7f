package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTicks = 100

// databaseCPU is the CPU time the local PostgreSQL cluster behind pool has used so far: its
// postmaster's own and reaped children's time plus that of every live child (backends, WAL
// writer, checkpointer). It reads /proc, so it answers only for a cluster on this machine
// (as make bench starts one); ok is false otherwise. The differences of two readings around a
// round are the database's CPU per row, which the machine's other load moves far less than
// the rates.
func databaseCPU(ctx context.Context, pool *pgxpool.Pool) (time.Duration, bool) {
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, false
	}
	st, ok := procStat(backend)
	if !ok {
		return 0, false
	}
	postmaster := st.ppid
	pm, ok := procStat(postmaster)
	if !ok {
		return 0, false
	}
	total := pm.self + pm.children
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, ok := procStat(pid); ok && s.ppid == postmaster {
			total += s.self
		}
	}
	return total, true
}

type procTimes struct {
	ppid           int
	self, children time.Duration
}

// procStat reads a process's parent and CPU times from /proc/<pid>/stat.
func procStat(pid int) (procTimes, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procTimes{}, false
	}
	// The command name is in parentheses and may hold spaces: fields count from after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return procTimes{}, false
	}
	num := func(i int) time.Duration {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(v) * time.Second / clockTicks
	}
	ppid, _ := strconv.Atoi(f[1])
	// After the name: state, ppid, …, utime (11), stime (12), cutime (13), cstime (14).
	return procTimes{ppid: ppid, self: num(11) + num(12), children: num(13) + num(14)}, true
}

// selfCPU is the CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package pgembedded

// The running formation: its nodes' states, waiting for one, failing one over, stopping it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// NodeState is what the monitor knows of a node.
type NodeState struct {
	Name     string
	Port     int
	Reported string // the state the node's keeper last reported
	Goal     string // the state the monitor assigned
}

func stateOf(states []NodeState, reported string) *NodeState {
	for i := range states {
		if states[i].Reported == reported && states[i].Goal == reported {
			return &states[i]
		}
	}
	return nil
}

// States asks the monitor for every node's state.
func (f *Formation) States(ctx context.Context) ([]NodeState, error) {
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@127.0.0.1:%d/pg_auto_failover?sslmode=disable", superuser, f.Monitor.Port))
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT nodename, nodeport, reportedstate::text, goalstate::text FROM pgautofailover.node ORDER BY nodeid`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (NodeState, error) {
		var s NodeState
		err := r.Scan(&s.Name, &s.Port, &s.Reported, &s.Goal)
		return s, err
	})
}

// WaitFor polls the monitor until ok holds or ctx ends.
func (f *Formation) WaitFor(ctx context.Context, ok func([]NodeState) bool) error {
	var last []NodeState
	var lastErr error
	for {
		s, err := f.States(ctx)
		if err == nil && ok(s) {
			return nil
		}
		if err == nil {
			last = s
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last states %v, last error %v)", ctx.Err(), last, lastErr)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Primary is the node the monitor has as primary (assigned and reported).
func (f *Formation) Primary(ctx context.Context) (FormationNode, error) {
	s, err := f.States(ctx)
	if err != nil {
		return FormationNode{}, err
	}
	for _, st := range s {
		if (st.Reported == "primary" || st.Reported == "wait_primary") && st.Reported == st.Goal {
			for _, n := range f.Nodes {
				if n.Name == st.Name {
					return n, nil
				}
			}
		}
	}
	return FormationNode{}, fmt.Errorf("formation: no primary (states %v)", s)
}

// Kill ends node n the hard way, as a lost host: SIGKILL to its keeper's process group (the
// keeper and the postmaster) and to every server process the postmaster started, at once, so
// nothing is shut down cleanly and no backend outlives the postmaster to answer.
func (f *Formation) Kill(n FormationNode) error {
	postmaster := 0
	if data, err := os.ReadFile(filepath.Join(n.PGData, "postmaster.pid")); err == nil {
		postmaster, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
	}
	children := childrenOf(postmaster)
	var errs []error
	if n.Keeper > 0 {
		if err := syscall.Kill(-n.Keeper, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill keeper group %d: %w", n.Keeper, err))
		}
	}
	for _, pid := range append([]int{postmaster}, children...) {
		if pid > 0 {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	if pid <= 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "PID (comm) STATE PPID ..."; comm may hold spaces and parentheses.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == pid {
				kids = append(kids, child)
			}
		}
	}
	sort.Ints(kids)
	return kids
}

// Stop stops every node, then the monitor (pg_autoctl stop, then SIGKILL to what is left
// when ctx ends first). A node killed earlier is skipped.
func (f *Formation) Stop(ctx context.Context) error {
	var errs []error
	nodes := append(append([]FormationNode{}, f.Nodes...), f.Monitor)
	for _, n := range nodes {
		if n.Keeper <= 0 || !groupAlive(n.Keeper) {
			continue
		}
		f.logf("stopping %s", n.Name)
		cmd := f.command(context.WithoutCancel(ctx), "stop", "--pgdata", n.PGData, "--fast")
		if out, err := cmd.CombinedOutput(); err != nil {
			f.logf("pg_autoctl stop %s: %v %s", n.Name, err, strings.TrimSpace(string(out)))
		}
		for groupAlive(n.Keeper) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		if groupAlive(n.Keeper) {
			errs = append(errs, f.Kill(n))
		}
	}
	return errors.Join(errs...)
}

// groupAlive reports whether a process of the group still runs, zombies aside. A killed
// keeper's processes are re-parented to the nearest child subreaper, which may be a supervisor
// that reaps only when it ends (cmd/pgcluster run, under make test): their zombies keep the
// group in the kernel's eyes (kill(-pgid, 0) succeeds), so the group is read from /proc.
func groupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil { // no /proc: ask the kernel, zombies and all
		err := syscall.Kill(-pgid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "PID (comm) STATE PPID PGRP ..."; comm may hold spaces and parentheses.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if pgrp, err := strconv.Atoi(fields[2]); err == nil && pgrp == pgid {
			return true
		}
	}
	return false
}

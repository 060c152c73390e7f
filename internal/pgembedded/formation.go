package pgembedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A Formation is a local high-availability PostgreSQL formation run by pg_auto_failover
// (Debian's postgresql-15-auto-failover and pg-auto-failover-cli): a monitor, a primary and a
// synchronous standby, all on 127.0.0.1, for development and for the failover spec
// (docs/operations/database-failover.md). The service knows nothing of pg_auto_failover: it
// only gets the multi-host URL (URL), which a Patroni cluster or a managed service would give
// the same way.
//
// The formation trusts every local connection (pg_autoctl --auth trust): it holds throwaway
// data on a developer's or CI machine, never anything that needs a password.
type Formation struct {
	Dir     string          `json:"dir"`
	BinDir  string          `json:"binDir"`
	Monitor FormationNode   `json:"monitor"`
	Nodes   []FormationNode `json:"nodes"`

	run *runner
	log func(string)
}

// FormationNode is one pg_autoctl service of a formation: the monitor or a PostgreSQL node.
type FormationNode struct {
	Name   string `json:"name"`
	Port   int    `json:"port"`
	PGData string `json:"pgdata"`
	// Keeper is the process group of the node's `pg_autoctl run` (the keeper, and the
	// postmaster it starts); Kill ends it.
	Keeper int `json:"keeper"`
}

// FormationOptions configure StartFormation.
type FormationOptions struct {
	// Dir holds everything: formation.json, each node's data directory and log, and the
	// pg_autoctl configuration, state and pid files.
	Dir string
	// BinDir holds the PostgreSQL server programs; empty means FindBinaries("").
	BinDir string
	// DefaultTimings keeps pg_auto_failover's own monitor timings (a failover of about 52 s)
	// instead of FailoverTimings.
	DefaultTimings bool
	// Log, when set, receives progress messages.
	Log func(msg string)
}

// FailoverTimings are the monitor settings a formation starts with: a primary that stops
// answering is replaced in about 10 to 15 s instead of pg_auto_failover's default of about
// 52 s (20 s before the node is unhealthy, health checks every 5 s retried twice, and 30 s
// during which the promoted standby stays read-only waiting for the old primary to confirm its
// demotion). They trade a quicker failover for a higher chance of failing over a primary that
// was only slow; docs/operations/database-failover.md explains the choice.
var FailoverTimings = map[string]string{
	"pgautofailover.health_check_period":               "1000",
	"pgautofailover.health_check_timeout":              "2000",
	"pgautofailover.health_check_max_retries":          "2",
	"pgautofailover.health_check_retry_delay":          "1000",
	"pgautofailover.node_considered_unhealthy_timeout": "5000",
	"pgautofailover.primary_demote_timeout":            "5000",
	"pgautofailover.startup_grace_period":              "5000",
}

// formationNodeSettings are the nodes' server settings. Durability against a machine crash is
// not the formation's purpose (fsync off, as the test cluster), but every commit still waits
// for the synchronous standby: that is the promise a failover must keep.
var formationNodeSettings = map[string]string{
	"fsync":            "off",
	"full_page_writes": "off",
	"max_connections":  "300",
}

// ErrNoFormationBinaries reports that pg_auto_failover is not installed.
var ErrNoFormationBinaries = errors.New("pg_auto_failover is not installed")

const (
	formationFile     = "formation.json"
	formationDatabase = DatabaseName
	autoctl           = "pg_autoctl"
	formationUp       = 90 * time.Second // creating three nodes takes ~20 s here
)

// FindFormationBinaries returns pg_autoctl's path and the PostgreSQL bin dir whose server has
// the pgautofailover extension, or an error wrapping ErrNoFormationBinaries that says what to
// install.
func FindFormationBinaries(binDir string) (autoctlPath, bin string, err error) {
	bin, err = FindBinaries(binDir)
	if err != nil {
		return "", "", err
	}
	missing := func(what string) error {
		return fmt.Errorf("%w (%s); install Debian's postgresql-%d-auto-failover and pg-auto-failover-cli "+
			"packages (`apt-get install postgresql-15-auto-failover pg-auto-failover-cli`)", ErrNoFormationBinaries, what, majorOf(bin))
	}
	autoctlPath, err = exec.LookPath(autoctl)
	if err != nil {
		return "", "", missing("no pg_autoctl on PATH")
	}
	share, err := exec.Command(filepath.Join(bin, "pg_config"), "--sharedir").Output()
	if err != nil {
		// pg_config is in the server package's bin dir; without it, look next to it.
		share = []byte(filepath.Join(filepath.Dir(bin), "..", "..", "..", "share", "postgresql", strconv.Itoa(majorOf(bin))))
	}
	control := filepath.Join(strings.TrimSpace(string(share)), "extension", "pgautofailover.control")
	if !isRegular(control) {
		return "", "", missing("no " + control)
	}
	return autoctlPath, bin, nil
}

func majorOf(bin string) int {
	n, err := serverMajorVersion(bin)
	if err != nil {
		return MinMajorVersion
	}
	return n
}

func isRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// StartFormation creates and starts a formation in opts.Dir, which must not hold one yet, and
// returns once the primary is primary and the standby secondary (synchronous).
func StartFormation(ctx context.Context, opts FormationOptions) (_ *Formation, err error) {
	if opts.Dir == "" {
		return nil, errors.New("formation: Dir is required")
	}
	_, bin, err := FindFormationBinaries(opts.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if isRegular(filepath.Join(dir, formationFile)) {
		return nil, fmt.Errorf("formation: %s already holds a formation; stop it with `pgcluster down -dir %s` "+
			"and remove the directory to start afresh", dir, dir)
	}
	f := &Formation{Dir: dir, BinDir: bin, log: opts.Log}
	if f.run, err = newRunner(bin, dir); err != nil {
		return nil, err
	}
	for _, sub := range []string{"", "run", "config", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	if err := f.run.makeTraversable(dir); err != nil {
		return nil, err
	}
	if err := f.run.chownTree(dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			_ = f.Stop(stopCtx)
		}
	}()

	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	f.Monitor = FormationNode{Name: "monitor", Port: ports[0], PGData: filepath.Join(dir, "monitor")}
	f.logf("creating the pg_auto_failover monitor on 127.0.0.1:%d", f.Monitor.Port)
	if err := f.autoctl(ctx, "create", "monitor", "--pgdata", f.Monitor.PGData,
		"--pgport", strconv.Itoa(f.Monitor.Port), "--hostname", "127.0.0.1", "--listen", "127.0.0.1",
		"--auth", "trust", "--no-ssl", "--pgctl", filepath.Join(bin, "pg_ctl")); err != nil {
		return nil, err
	}
	monitorSettings := map[string]string{"listen_addresses": "127.0.0.1"}
	if !opts.DefaultTimings {
		for k, v := range FailoverTimings {
			monitorSettings[k] = v
		}
	}
	if err := appendSettings(f.Monitor.PGData, monitorSettings); err != nil {
		return nil, err
	}
	if err := f.runKeeper(&f.Monitor); err != nil {
		return nil, err
	}
	if err := f.save(); err != nil {
		return nil, err
	}
	for i := 1; i <= 2; i++ {
		n := FormationNode{Name: fmt.Sprintf("node%d", i), Port: ports[i], PGData: filepath.Join(dir, fmt.Sprintf("node%d", i))}
		f.logf("creating %s on 127.0.0.1:%d", n.Name, n.Port)
		if err := f.autoctl(ctx, "create", "postgres", "--pgdata", n.PGData,
			"--pgport", strconv.Itoa(n.Port), "--hostname", "127.0.0.1", "--listen", "127.0.0.1",
			"--name", n.Name, "--dbname", formationDatabase, "--monitor", f.monitorURL(),
			"--auth", "trust", "--no-ssl", "--pgctl", filepath.Join(bin, "pg_ctl")); err != nil {
			return nil, err
		}
		if i == 1 {
			// The standby's base backup copies these.
			if err := appendSettings(n.PGData, formationNodeSettings); err != nil {
				return nil, err
			}
		}
		if err := f.runKeeper(&n); err != nil {
			return nil, err
		}
		f.Nodes = append(f.Nodes, n)
		if err := f.save(); err != nil {
			return nil, err
		}
		if i == 1 {
			// The standby's creation takes a base backup of a running primary.
			waitCtx, cancel := context.WithTimeout(ctx, formationUp)
			err := f.WaitFor(waitCtx, func(s []NodeState) bool { return stateOf(s, "single") != nil })
			cancel()
			if err != nil {
				return nil, fmt.Errorf("formation: %s did not start: %w", n.Name, err)
			}
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, formationUp)
	defer cancel()
	if err := f.WaitFor(waitCtx, func(s []NodeState) bool {
		return len(s) == 2 && stateOf(s, "primary") != nil && stateOf(s, "secondary") != nil
	}); err != nil {
		return nil, fmt.Errorf("formation: the primary and its standby did not come up: %w", err)
	}
	f.logf("formation up: %s", f.URL())
	return f, nil
}

// AttachFormation reads the formation started in dir.
func AttachFormation(dir string) (*Formation, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, formationFile))
	if err != nil {
		return nil, err
	}
	f := &Formation{}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("formation: read %s: %w", formationFile, err)
	}
	if f.run, err = newRunner(f.BinDir, dir); err != nil {
		return nil, err
	}
	return f, nil
}

// IsFormation reports whether dir holds a formation (rather than a single cluster).
func IsFormation(dir string) bool { return isRegular(filepath.Join(dir, formationFile)) }

// URL is the multi-host DATABASE_URL of the formation: every node, and
// target_session_attrs=read-write so that a connection only ever lands on the primary.
func (f *Formation) URL() string {
	hosts := make([]string, len(f.Nodes))
	for i, n := range f.Nodes {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", n.Port)
	}
	return fmt.Sprintf("postgres://%s@%s/%s?target_session_attrs=read-write&sslmode=disable",
		superuser, strings.Join(hosts, ","), formationDatabase)
}

// NodeURL is the URL of one node alone.
func (f *Formation) NodeURL(n FormationNode) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, n.Port, formationDatabase)
}

func (f *Formation) monitorURL() string {
	return fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", f.Monitor.Port)
}

// command builds a pg_autoctl command run as the server user, with the formation's own
// configuration, state and pid directories.
func (f *Formation) command(ctx context.Context, args ...string) *exec.Cmd {
	path, err := exec.LookPath(autoctl)
	if err != nil {
		path = autoctl
	}
	var cmd *exec.Cmd
	if f.run.asRoot() {
		cmd = exec.CommandContext(ctx, f.run.runuser, append([]string{"-u", serverUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = f.Dir
	cmd.Env = append(os.Environ(),
		"PATH="+f.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+f.Dir,
		"XDG_CONFIG_HOME="+filepath.Join(f.Dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(f.Dir, "data"),
		"XDG_RUNTIME_DIR="+filepath.Join(f.Dir, "run"),
		"PG_CONFIG="+filepath.Join(f.BinDir, "pg_config"),
	)
	return cmd
}

func (f *Formation) autoctl(ctx context.Context, args ...string) error {
	cmd := f.command(ctx, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("formation: pg_autoctl %s: %w\n%s", strings.Join(args[:2], " "), err, tail(string(out), 30))
	}
	return nil
}

// runKeeper starts `pg_autoctl run` for n in a session of its own (so it outlives
// `pgcluster ha` and its process group can be killed as one), logging to DIR/NAME.log.
func (f *Formation) runKeeper(n *FormationNode) error {
	logFile, err := os.OpenFile(filepath.Join(f.Dir, n.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := f.command(context.Background(), "run", "--pgdata", n.PGData)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("formation: start %s: %w", n.Name, err)
	}
	n.Keeper = cmd.Process.Pid
	// Reaped when it ends, so a killed keeper leaves no zombie behind in a long-running test.
	go func() { _ = cmd.Wait() }()
	return nil
}

func (f *Formation) save() error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(f.Dir, formationFile), data, 0o600)
}

func (f *Formation) logf(format string, args ...any) {
	if f.log != nil {
		f.log(fmt.Sprintf(format, args...))
	}
}

// appendSettings adds settings to a node's postgresql.conf (later lines win), owned by the
// server user like the rest of the data directory.
func appendSettings(pgdata string, settings map[string]string) error {
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("\n# hephaestus formation (internal/pgembedded/formation.go)\n")
	for _, k := range names {
		fmt.Fprintf(&b, "%s = '%s'\n", k, settings[k])
	}
	file, err := os.OpenFile(filepath.Join(pgdata, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := file.WriteString(b.String()); err != nil {
		_ = file.Close()
		return err
	}
	return file.Close()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// SetLog sets where an attached formation reports progress.
func (f *Formation) SetLog(log func(string)) { f.log = log }

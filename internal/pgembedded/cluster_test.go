package pgembedded_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/internal/pgembedded"
)

// specTimeout bounds one spec: initdb plus a start take a few seconds.
const specTimeout = 2 * time.Minute

// binDir honours the binaries chosen by cmd/pgcluster, if any, so the suite
// tests the same installation as the rest of the test run.
func binDir() string { return os.Getenv("HEPHAESTUS_TEST_PG_BIN") }

// newDataDir returns a not-yet-existing DataDir inside a fresh temp dir that
// is removed after the current node (spec or BeforeAll container).
func newDataDir() string {
	parent, err := os.MkdirTemp("", "embedded-test-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, parent)
	return filepath.Join(parent, "data")
}

// stopOnCleanup makes sure a cluster started by a spec never outlives it.
func stopOnCleanup(c *pgembedded.Cluster) {
	DeferCleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), specTimeout)
		defer cancel()
		Expect(c.Stop(ctx)).To(Succeed())
	})
}

func queryString(ctx context.Context, url, sql string, args ...any) string {
	GinkgoHelper()
	conn, err := pgx.Connect(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close(ctx)
	var s string
	Expect(conn.QueryRow(ctx, sql, args...).Scan(&s)).To(Succeed())
	return s
}

func exec1(ctx context.Context, url, sql string) {
	GinkgoHelper()
	conn, err := pgx.Connect(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	Expect(err).NotTo(HaveOccurred())
}

// postmasterSocketDir reads the socket directory the running server
// recorded in postmaster.pid (5th line).
func postmasterSocketDir(dataDir string) string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(dataDir, "pgdata", "postmaster.pid"))
	Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(string(data), "\n")
	Expect(len(lines)).To(BeNumerically(">", 4))
	return strings.TrimSpace(lines[4])
}

var _ = Describe("FindBinaries", func() {
	It("fails with ErrNoBinaries and tells the user what to install when the explicit dir has no PostgreSQL", func() {
		_, err := pgembedded.FindBinaries(GinkgoT().TempDir())
		Expect(err).To(MatchError(pgembedded.ErrNoBinaries))
		Expect(err.Error()).To(ContainSubstring("apt-get install postgresql"))
		Expect(err.Error()).To(ContainSubstring("DATABASE_URL"))
		Expect(err.Error()).NotTo(ContainSubstring("\n"), "the message is meant to be one paragraph")
	})

	It("fails with ErrNoBinaries when the explicit dir does not exist", func() {
		_, err := pgembedded.FindBinaries("/nonexistent/postgresql/bin")
		Expect(err).To(MatchError(pgembedded.ErrNoBinaries))
	})

	It("does not fall back to discovery when an explicit dir is unusable", func() {
		// Discovery would succeed on this machine; an explicit setting
		// that is wrong must still be reported, not silently replaced.
		_, err := pgembedded.FindBinaries("")
		Expect(err).NotTo(HaveOccurred())
		_, err = pgembedded.FindBinaries(GinkgoT().TempDir())
		Expect(err).To(MatchError(pgembedded.ErrNoBinaries))
	})

	It("discovers an installed PostgreSQL 15+ server when no dir is given", func() {
		dir, err := pgembedded.FindBinaries("")
		Expect(err).NotTo(HaveOccurred())
		Expect(filepath.Join(dir, "initdb")).To(BeAnExistingFile())
		Expect(filepath.Join(dir, "pg_ctl")).To(BeAnExistingFile())
	})
})

var _ = Describe("Cluster", Ordered, func() {
	var (
		dataDir string
		cluster *pgembedded.Cluster
		opts    pgembedded.Options
	)

	BeforeAll(func() {
		dataDir = newDataDir()
		opts = pgembedded.Options{
			DataDir:  dataDir,
			BinDir:   binDir(),
			Settings: map[string]string{"max_connections": "42"},
			Log:      func(msg string) { GinkgoWriter.Println(msg) },
		}
		// Whatever happens in the specs, leave no server running.
		DeferCleanup(func() {
			if cluster != nil {
				ctx, cancel := context.WithTimeout(context.Background(), specTimeout)
				defer cancel()
				_ = cluster.Stop(ctx)
			}
		})
	})

	It("initializes a cluster on first start and serves the hephaestus database", func(ctx SpecContext) {
		var err error
		cluster, err = pgembedded.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())

		Expect(cluster.Port()).To(BeNumerically(">", 0))
		pw, err := os.ReadFile(filepath.Join(dataDir, pgembedded.PasswordFile))
		Expect(err).NotTo(HaveOccurred())
		password := strings.TrimSpace(string(pw))
		Expect(password).To(HaveLen(48))
		Expect(cluster.URL()).To(Equal(fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/hephaestus?sslmode=disable", password, cluster.Port())))
		Expect(cluster.AdminURL()).To(Equal(fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", password, cluster.Port())))
		Expect(filepath.Join(dataDir, "pgdata", "PG_VERSION")).To(BeAnExistingFile())
		Expect(filepath.Join(dataDir, "postgres.log")).To(BeAnExistingFile())

		Expect(queryString(ctx, cluster.URL(), "SELECT current_database()")).To(Equal("hephaestus"))
		Expect(queryString(ctx, cluster.URL(), "SELECT current_setting('server_version_num')")).To(
			WithTransform(func(s string) int { n, _ := strconv.Atoi(s); return n }, BeNumerically(">=", 150000)))
		exec1(ctx, cluster.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('survives restarts')")
	}, NodeTimeout(specTimeout))

	It("accepts only its owner: every connection needs the generated password, kept in a 0600 file, and the socket dir is 0700", func(ctx SpecContext) {
		pwPath := filepath.Join(dataDir, pgembedded.PasswordFile)
		fi, err := os.Stat(pwPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		Expect(int(fi.Sys().(*syscall.Stat_t).Uid)).To(Equal(os.Geteuid()), "owned by the process that started the cluster")
		socketDir := postmasterSocketDir(dataDir)
		si, err := os.Stat(socketDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(si.Mode().Perm()).To(Equal(os.FileMode(0o700)))

		// Any local process reaches 127.0.0.1 and, as root, the socket: without the password,
		// or with another one, it is refused.
		noPassword := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", cluster.Port())
		wrong := fmt.Sprintf("postgres://postgres:guess@127.0.0.1:%d/postgres?sslmode=disable", cluster.Port())
		overSocket := fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", socketDir, cluster.Port())
		for _, url := range []string{noPassword, wrong, overSocket} {
			conn, err := pgx.Connect(ctx, url)
			if err == nil {
				_ = conn.Close(ctx)
			}
			Expect(err).To(MatchError(Or(ContainSubstring("password authentication failed"), ContainSubstring("password"))), url)
		}

		if os.Geteuid() != 0 {
			return
		}
		// As root, prove it as another local user: nobody can neither read the password nor log in.
		psql, err := exec.LookPath("psql")
		if err != nil {
			psql = filepath.Join(binDir(), "psql")
		}
		out, err := exec.CommandContext(ctx, "runuser", "-u", "nobody", "--", "cat", pwPath).CombinedOutput()
		Expect(err).To(HaveOccurred(), "nobody read the password file: %s", out)
		out, err = exec.CommandContext(ctx, "runuser", "-u", "nobody", "--", psql, "-w", "-h", "127.0.0.1",
			"-p", strconv.Itoa(cluster.Port()), "-U", "postgres", "-d", "postgres", "-c", "SELECT 1").CombinedOutput()
		Expect(err).To(HaveOccurred(), "nobody connected over TCP: %s", out)
		Expect(string(out)).To(ContainSubstring("password"))
		out, err = exec.CommandContext(ctx, "runuser", "-u", "nobody", "--", psql, "-w", "-h", socketDir,
			"-p", strconv.Itoa(cluster.Port()), "-U", "postgres", "-d", "postgres", "-c", "SELECT 1").CombinedOutput()
		Expect(err).To(HaveOccurred(), "nobody connected over the socket: %s", out)
	}, NodeTimeout(specTimeout))

	It("applies the non-durable test settings and the extra settings", func(ctx SpecContext) {
		Expect(queryString(ctx, cluster.AdminURL(), "SHOW fsync")).To(Equal("off"))
		Expect(queryString(ctx, cluster.AdminURL(), "SHOW synchronous_commit")).To(Equal("off"))
		Expect(queryString(ctx, cluster.AdminURL(), "SHOW full_page_writes")).To(Equal("off"))
		Expect(queryString(ctx, cluster.AdminURL(), "SHOW max_connections")).To(Equal("42"))
		Expect(queryString(ctx, cluster.AdminURL(), "SHOW listen_addresses")).To(Equal("127.0.0.1"))
	}, NodeTimeout(specTimeout))

	It("hands the cluster to the postgres OS user when running as root", func() {
		if os.Geteuid() != 0 {
			Skip("only meaningful as root")
		}
		u, err := user.Lookup("postgres")
		Expect(err).NotTo(HaveOccurred())
		fi, err := os.Stat(filepath.Join(dataDir, "pgdata"))
		Expect(err).NotTo(HaveOccurred())
		Expect(strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid))).To(Equal(u.Uid))
	})

	It("refuses to start a second server on the same data but can attach to the running one", func(ctx SpecContext) {
		_, err := pgembedded.Start(ctx, opts)
		Expect(err).To(MatchError(pgembedded.ErrAlreadyRunning))

		attached, err := pgembedded.Attach(opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(attached.Port()).To(Equal(cluster.Port()))
		Expect(attached.URL()).To(Equal(cluster.URL()))
	}, NodeTimeout(specTimeout))

	It("stops, and stopping again is a no-op", func(ctx SpecContext) {
		Expect(cluster.Stop(ctx)).To(Succeed())
		Expect(cluster.Stop(ctx)).To(Succeed())
		Expect(filepath.Join(dataDir, "pgdata", "postmaster.pid")).NotTo(BeAnExistingFile())

		_, err := pgx.Connect(ctx, cluster.AdminURL())
		Expect(err).To(HaveOccurred(), "the server should be down")

		_, err = pgembedded.Attach(opts)
		Expect(err).To(MatchError(pgembedded.ErrNotRunning))
	}, NodeTimeout(specTimeout))

	It("reuses the existing data on the next start", func(ctx SpecContext) {
		var err error
		cluster, err = pgembedded.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(queryString(ctx, cluster.URL(), "SELECT v FROM kept")).To(Equal("survives restarts"))
		Expect(cluster.Stop(ctx)).To(Succeed())
	}, NodeTimeout(specTimeout))

	It("starts despite a stale postmaster.pid left by a crashed server", func(ctx SpecContext) {
		// A PID that certainly belongs to no running process: one we just reaped.
		dead := exec.Command("true")
		Expect(dead.Run()).To(Succeed())
		stale := fmt.Sprintf("%d\n%s\n1700000000\n%d\n%s\n127.0.0.1\n 0 0\nready   \n",
			dead.Process.Pid, filepath.Join(dataDir, "pgdata"), cluster.Port(), filepath.Join(dataDir, "run"))
		Expect(os.WriteFile(filepath.Join(dataDir, "pgdata", "postmaster.pid"), []byte(stale), 0o600)).To(Succeed())

		var err error
		cluster, err = pgembedded.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(queryString(ctx, cluster.URL(), "SELECT v FROM kept")).To(Equal("survives restarts"))
		Expect(cluster.Stop(ctx)).To(Succeed())
	}, NodeTimeout(specTimeout))

	It("includes the end of the server log when the server cannot start", func(ctx SpecContext) {
		bad := opts
		bad.Settings = map[string]string{"no_such_setting": "1"}
		_, err := pgembedded.Start(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`unrecognized configuration parameter "no_such_setting"`))
		Expect(err.Error()).To(ContainSubstring("postgres.log"))
		Expect(filepath.Join(dataDir, "pgdata", "postmaster.pid")).NotTo(BeAnExistingFile())
	}, NodeTimeout(specTimeout))
})

var _ = Describe("a cluster whose DataDir is too long for a unix socket path", func() {
	It("puts its sockets in a short temp dir, removes it on Stop, and keeps durable defaults", func(ctx SpecContext) {
		dataDir := newDataDir()
		dataDir = filepath.Join(dataDir, strings.Repeat("d", 60), strings.Repeat("e", 60))
		Expect(len(dataDir)).To(BeNumerically(">", 107))

		c, err := pgembedded.Start(ctx, pgembedded.Options{DataDir: dataDir, BinDir: binDir(), Durable: true})
		Expect(err).NotTo(HaveOccurred())
		stopOnCleanup(c)

		socketDir := postmasterSocketDir(dataDir)
		Expect(socketDir).NotTo(HavePrefix(dataDir))
		Expect(len(socketDir)).To(BeNumerically("<", 90))
		Expect(socketDir).To(BeADirectory())

		Expect(queryString(ctx, c.URL(), "SELECT current_database()")).To(Equal("hephaestus"))
		Expect(queryString(ctx, c.AdminURL(), "SHOW fsync")).To(Equal("on"))
		Expect(queryString(ctx, c.AdminURL(), "SHOW synchronous_commit")).To(Equal("on"))

		Expect(c.Stop(ctx)).To(Succeed())
		Expect(socketDir).NotTo(BeAnExistingFile())
	}, NodeTimeout(specTimeout))
})

var _ = Describe("A cluster of an older version that trusted local connections", func() {
	It("requires the generated password from its next start on", func(ctx SpecContext) {
		if binDir() == "" {
			Skip("HEPHAESTUS_TEST_PG_BIN is not set")
		}
		dataDir := newDataDir()
		opts := pgembedded.Options{DataDir: dataDir, BinDir: binDir(), Log: func(msg string) { GinkgoWriter.Println(msg) }}
		c, err := pgembedded.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Stop(ctx)).To(Succeed())
		// What an older version left: trust in pg_hba.conf and no password file.
		hba := filepath.Join(dataDir, "pgdata", "pg_hba.conf")
		Expect(os.WriteFile(hba, []byte("local all all trust\nhost all all 127.0.0.1/32 trust\n"), 0o600)).To(Succeed())
		Expect(os.Remove(filepath.Join(dataDir, pgembedded.PasswordFile))).To(Succeed())

		c, err = pgembedded.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		stopOnCleanup(c)
		Expect(queryString(ctx, c.URL(), "SELECT current_database()")).To(Equal("hephaestus"))
		_, err = pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port()))
		Expect(err).To(MatchError(ContainSubstring("password")))
	}, NodeTimeout(specTimeout))
})

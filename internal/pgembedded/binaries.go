package pgembedded

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MinMajorVersion is the oldest PostgreSQL major version the project supports.
// The schema and queries rely on PostgreSQL 15 features, so an older server is
// rejected up front instead of failing later with an obscure SQL error.
const MinMajorVersion = 15

// ErrNoBinaries reports that no usable PostgreSQL server installation was
// found. Callers test for it with errors.Is; the wrapping error carries the
// user-facing explanation.
var ErrNoBinaries = errors.New("no usable PostgreSQL server binaries found")

// debianBinGlob is where Debian and Ubuntu install one directory per major
// version (postgresql-15, postgresql-16, ...). None of them is on PATH.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// requiredPrograms are the server programs the cluster manager executes.
// psql and the other client tools are not needed.
var requiredPrograms = []string{"initdb", "pg_ctl", "postgres"}

// FindBinaries returns the directory holding the PostgreSQL server programs.
//
// Lookup order:
//  1. explicit, when non-empty (the caller's configuration wins and is never
//     second-guessed: if it is unusable that is an error, not a fallback);
//  2. `pg_config --bindir`, but only if that directory contains initdb: on
//     Debian pg_config comes with libpq-dev and answers even when no server
//     package is installed;
//  3. the newest /usr/lib/postgresql/*/bin that contains initdb, by numeric
//     version (so 16 beats 15 and 10 beats 9.6).
//
// The chosen server must be PostgreSQL MinMajorVersion or newer. On failure
// the error wraps ErrNoBinaries and tells the user how to fix it.
func FindBinaries(explicit string) (string, error) {
	if explicit != "" {
		dir, err := filepath.Abs(explicit)
		if err != nil {
			return "", noBinaries(fmt.Sprintf("the configured directory %q is not usable: %v", explicit, err))
		}
		if err := checkBinDir(dir); err != nil {
			return "", noBinaries(fmt.Sprintf("the configured directory %q is not usable: %v", explicit, err))
		}
		return dir, nil
	}

	// Reasons why candidates were rejected, so the final error explains
	// what was looked at rather than just "not found".
	var rejected []string

	if dir, ok := pgConfigBinDir(); ok {
		if err := checkBinDir(dir); err == nil {
			return dir, nil
		} else {
			rejected = append(rejected, fmt.Sprintf("%s: %v", dir, err))
		}
	}

	for _, dir := range debianBinDirs() {
		if err := checkBinDir(dir); err == nil {
			return dir, nil
		} else {
			rejected = append(rejected, fmt.Sprintf("%s: %v", dir, err))
		}
	}

	detail := "looked for pg_config on PATH and in " + debianBinGlob + " and found no server installation"
	if len(rejected) > 0 {
		detail = "rejected " + strings.Join(rejected, "; ")
	}
	return "", noBinaries(detail)
}

// noBinaries builds the single-paragraph, actionable error wrapping
// ErrNoBinaries.
func noBinaries(detail string) error {
	//lint:ignore ST1005 a person reads this paragraph as the whole message, so it is written as sentences
	return fmt.Errorf("%w (%s). Hephaestus needs a local PostgreSQL %d or newer server "+
		"for its embedded default database and for its tests: install it "+
		"(on Debian or Ubuntu: `apt-get install postgresql`), or set DATABASE_URL "+
		"to use an existing PostgreSQL server instead.", ErrNoBinaries, detail, MinMajorVersion)
}

// pgConfigBinDir asks pg_config (if on PATH) where the binaries live and
// reports whether that directory has initdb in it.
func pgConfigBinDir() (string, bool) {
	pgConfig, err := exec.LookPath("pg_config")
	if err != nil {
		return "", false
	}
	out, err := exec.Command(pgConfig, "--bindir").Output()
	if err != nil {
		return "", false
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" || !isExecutable(filepath.Join(dir, "initdb")) {
		return "", false
	}
	return dir, true
}

// debianBinDirs lists /usr/lib/postgresql/*/bin directories that contain
// initdb, newest version first.
func debianBinDirs() []string {
	matches, _ := filepath.Glob(debianBinGlob)
	type candidate struct {
		dir     string
		version []int
	}
	var cands []candidate
	for _, dir := range matches {
		if !isExecutable(filepath.Join(dir, "initdb")) {
			continue
		}
		cands = append(cands, candidate{dir: dir, version: parseDirVersion(filepath.Base(filepath.Dir(dir)))})
	}
	// A plain string sort would put "9.6" after "15"; compare numerically.
	sort.SliceStable(cands, func(i, j int) bool {
		return compareVersions(cands[i].version, cands[j].version) > 0
	})
	dirs := make([]string, len(cands))
	for i, c := range cands {
		dirs[i] = c.dir
	}
	return dirs
}

// parseDirVersion turns "15" or "9.6" into []int{15} or []int{9, 6}.
// Non-numeric parts count as 0 so odd directory names sort last.
func parseDirVersion(s string) []int {
	parts := strings.Split(s, ".")
	v := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			n = 0
		}
		v[i] = n
	}
	return v
}

func compareVersions(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// checkBinDir verifies that dir has every program we run and that the
// server is recent enough.
func checkBinDir(dir string) error {
	for _, prog := range requiredPrograms {
		if !isExecutable(filepath.Join(dir, prog)) {
			return fmt.Errorf("no executable %s", prog)
		}
	}
	major, err := serverMajorVersion(dir)
	if err != nil {
		return err
	}
	if major < MinMajorVersion {
		return fmt.Errorf("PostgreSQL %d is too old, %d or newer is required", major, MinMajorVersion)
	}
	return nil
}

// versionRE matches `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`
// and pre-releases such as `postgres (PostgreSQL) 17beta1`.
var versionRE = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+)`)

// serverMajorVersion runs `postgres --version`. It is safe to run as root:
// postgres only refuses root when it would actually start a server.
func serverMajorVersion(dir string) (int, error) {
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("`postgres --version` failed: %v", err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("cannot parse `postgres --version` output %q", strings.TrimSpace(string(out)))
	}
	return strconv.Atoi(string(m[1]))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

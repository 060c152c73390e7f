// Package ghcorpus brings GitHub's documented example webhook payloads into a cache folder of
// the checkout and tells the specs and the bench where they are.
//
// The payloads are those of the published @octokit/webhooks-examples package at a pinned
// version, checked against a pinned checksum before anything is read from it. npm's own client
// fetches the package (it is the one registry client every development and CI machine has);
// the extraction is ours: api.github.com/index.json holds each event's examples, and
// manifest.txt names the file each example is written to (<event>/<action>….payload.json, the
// layout of the octokit/webhooks repository), so specs and the mix name payloads by file.
package ghcorpus

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	// Package and Version name the npm package the corpus comes from.
	Package = "@octokit/webhooks-examples"
	Version = "7.6.1"
	// Integrity is the package tarball's Subresource Integrity string (sha512, base64) as the
	// registry published it for Version; a tarball with another digest is refused.
	Integrity = "sha512-De6U3XB6O3DtCa7bKgCMzTHdeopqqZ6SNivMYJnK65ierKL1AnNIA0tkRYCRS7lwGT792d+Ps1WbfHlso6MynQ=="

	// EnvDir overrides where the corpus is read (a folder of <event>/<file>.json).
	EnvDir = "HEPHAESTUS_GITHUB_CORPUS"

	// stamp is the file, inside the corpus folder, that says which version is there; it is
	// written last, so a folder without it is incomplete.
	stamp = ".version"
	// indexPath is the examples' file inside the package tarball.
	indexPath = "package/api.github.com/index.json"
)

//go:embed manifest.txt
var manifest string

// Dir is where the corpus is read: $HEPHAESTUS_GITHUB_CORPUS, else .cache/corpus/github at the
// module root found from the working directory (the specs run in their package folders).
func Dir() string {
	if dir := os.Getenv(EnvDir); dir != "" {
		return dir
	}
	root, err := moduleRoot()
	if err != nil {
		return filepath.Join(".cache", "corpus", "github")
	}
	return filepath.Join(root, ".cache", "corpus", "github")
}

// Require is the corpus folder, or an error that says how to get it: `make corpus` (which
// `make test`, `make bench` and `make soak` run first) or $HEPHAESTUS_GITHUB_CORPUS.
func Require() (string, error) {
	dir := Dir()
	if os.Getenv(EnvDir) != "" {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return "", fmt.Errorf("the GitHub corpus is not at %s (%s)", dir, EnvDir)
		}
		return dir, nil
	}
	if v, err := os.ReadFile(filepath.Join(dir, stamp)); err != nil || strings.TrimSpace(string(v)) != Version {
		return "", fmt.Errorf("the GitHub corpus (%s@%s) is not at %s: run `make corpus`, or set %s to a folder of GitHub's example payloads",
			Package, Version, dir, EnvDir)
	}
	return dir, nil
}

// Ensure makes dir hold the corpus of Version: nothing to do when its stamp says so, else the
// package is packed by npm into a temporary folder, its digest checked against Integrity, and
// every manifest entry written. log receives one line of what was done.
func Ensure(ctx context.Context, dir string, log io.Writer) error {
	if v, err := os.ReadFile(filepath.Join(dir, stamp)); err == nil && strings.TrimSpace(string(v)) == Version {
		return nil
	}
	tmp, err := os.MkdirTemp("", "ghcorpus-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	cmd := exec.CommandContext(ctx, "npm", "pack", "--silent", "--pack-destination", tmp, Package+"@"+Version)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("npm pack %s@%s (npm comes with Node.js: apt-get install npm): %w", Package, Version, err)
	}
	name := strings.TrimSpace(lastLine(string(out)))
	tarball, err := os.ReadFile(filepath.Join(tmp, filepath.Base(name)))
	if err != nil {
		return fmt.Errorf("read the packed %s: %w", Package, err)
	}
	n, err := Extract(tarball, dir)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(log, "ghcorpus: %s@%s (%s) → %d payloads in %s\n", Package, Version, Integrity[:19]+"…", n, dir)
	return nil
}

// Extract checks tarball against Integrity and writes the manifest's payloads into dir,
// replacing what was there; it answers how many files it wrote.
func Extract(tarball []byte, dir string) (int, error) {
	sum := sha512.Sum512(tarball)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != Integrity {
		return 0, fmt.Errorf("%s@%s: the tarball's digest %s is not the pinned %s", Package, Version, got, Integrity)
	}
	index, err := readIndex(tarball)
	if err != nil {
		return 0, err
	}
	var events []struct {
		Name     string            `json:"name"`
		Examples []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(index, &events); err != nil {
		return 0, fmt.Errorf("%s: %s: %w", Package, indexPath, err)
	}
	examples := map[string][]json.RawMessage{}
	for _, e := range events {
		examples[e.Name] = e.Examples
	}
	entries, err := parseManifest(manifest)
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	for _, e := range entries {
		list := examples[e.event]
		if e.index >= len(list) {
			return 0, fmt.Errorf("%s@%s has no example %d of %s (manifest %s)", Package, Version, e.index, e.event, e.file)
		}
		path := filepath.Join(dir, e.event, e.file)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(path, append(bytes.Clone(list[e.index]), '\n'), 0o644); err != nil {
			return 0, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stamp), []byte(Version+"\n"), 0o644); err != nil {
		return 0, err
	}
	return len(entries), nil
}

// readIndex is the examples file of the gzipped package tarball.
func readIndex(tarball []byte) ([]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(tarball))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Package, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s@%s has no %s", Package, Version, indexPath)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Package, err)
		}
		if h.Name == indexPath {
			return io.ReadAll(tr)
		}
	}
}

type entry struct {
	event, file string
	index       int
}

// parseManifest reads "<event>/<file> <index>" lines; # starts a comment line.
func parseManifest(text string) ([]entry, error) {
	var out []entry
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		path, idx, ok := strings.Cut(l, " ")
		event, file, ok2 := strings.Cut(path, "/")
		n, err := strconv.Atoi(idx)
		if !ok || !ok2 || err != nil || n < 0 || strings.ContainsAny(file, `/\`) || strings.Contains(event, "..") || strings.HasPrefix(file, ".") {
			return nil, fmt.Errorf("manifest line %d: %q is not \"<event>/<file> <index>\"", line, l)
		}
		out = append(out, entry{event: event, file: file, index: n})
	}
	return out, sc.Err()
}

// moduleRoot is the nearest folder at or above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

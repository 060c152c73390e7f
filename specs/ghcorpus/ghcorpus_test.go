package ghcorpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestATarballWithAnotherDigestIsRefusedAndNothingIsWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "github")
	_, err := Extract([]byte("not the package"), dir)
	if err == nil || !strings.Contains(err.Error(), "is not the pinned") {
		t.Fatalf("got %v, want a digest refusal", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the refused tarball left %s behind", dir)
	}
}

func TestTheManifestNamesOneExampleAFileInsideItsEventFolder(t *testing.T) {
	entries, err := parseManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 200 {
		t.Fatalf("the manifest names %d payloads, want the whole corpus", len(entries))
	}
	seen := map[string]bool{}
	for _, e := range entries {
		key := e.event + "/" + e.file
		if seen[key] {
			t.Errorf("%s is named twice", key)
		}
		seen[key] = true
	}
	for _, want := range []string{"push/payload.json", "issues/opened.payload.json", "check_suite/requested.payload.json"} {
		if !seen[want] {
			t.Errorf("the manifest lacks %s, which the specs and the mix read", want)
		}
	}
}

func TestAManifestLineThatCouldLeaveItsFolderIsRefused(t *testing.T) {
	for _, line := range []string{"push/../x 0", "../push/x 0", "push/x", "push/x -1", "push/a/b 0", "push/.version 0"} {
		if _, err := parseManifest(line + "\n"); err == nil {
			t.Errorf("%q was accepted", line)
		}
	}
}

func TestRequireNamesMakeCorpusWhenTheCacheIsEmpty(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(EnvDir, "")
	_, err := Require()
	if err == nil || !strings.Contains(err.Error(), "make corpus") {
		t.Fatalf("got %v, want an error naming make corpus", err)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/specs/ghcorpus"
)

// corpusForTest is the corpus the mix reads (`make test` fetches it first): a failure under CI
// without it, a skip elsewhere.
func corpusForTest(t *testing.T) string {
	dir, err := ghcorpus.Require()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return dir
}

func TestTheMixIsTheSameForTheSameSeedAndDiffersForAnother(t *testing.T) {
	dir := corpusForTest(t)
	a, err := buildMix(dir, 37)
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildMix(dir, 37)
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildMix(dir, 38)
	if err != nil {
		t.Fatal(err)
	}
	same, other := true, false
	for i := range a {
		same = same && a[i].kind == b[i].kind && bytes.Equal(a[i].before, b[i].before) && bytes.Equal(a[i].after, b[i].after)
		other = other || !bytes.Equal(a[i].before, c[i].before)
	}
	if !same {
		t.Error("two mixes of seed 37 differ")
	}
	if !other {
		t.Error("the mixes of seeds 37 and 38 are the same")
	}
}

func TestEveryDeliveryOfTheMixIsJSONOfItsProviderWithItsKey(t *testing.T) {
	mix, err := buildMix(corpusForTest(t), 37)
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]int{}
	for i, d := range mix {
		body := append(append(bytes.Clone(d.before), "key-1"...), d.after...)
		if !d.keyInBody {
			body = d.before
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("delivery %d (%s) is not JSON: %v", i, d.kind, err)
		}
		if d.keyInBody && !bytes.Contains(body, []byte(`"key-1"`)) {
			t.Fatalf("delivery %d (%s) does not carry its key", i, d.kind)
		}
		if d.provider == "GITHUB" {
			inst, _ := doc["installation"].(map[string]any)
			if inst["id"] != float64(installationID) {
				t.Fatalf("delivery %d (%s) is not for the bench's installation: %v", i, d.kind, inst)
			}
		}
		providers[d.provider]++
	}
	for _, p := range []string{"GITHUB", "GITLAB", "SLACK", "OUTLINE"} {
		if providers[p] == 0 {
			t.Errorf("the mix has no %s delivery", p)
		}
	}
}

func TestAMissingCorpusStopsTheMixNamingTheOverride(t *testing.T) {
	_, err := buildMix(filepath.Join(t.TempDir(), "nowhere"), 37)
	if err == nil || !strings.Contains(err.Error(), "HEPHAESTUS_GITHUB_CORPUS") {
		t.Fatalf("got %v, want an error naming HEPHAESTUS_GITHUB_CORPUS", err)
	}
}

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

// GitHub's label and milestone ids belong to one repository: the mix, which rewrites the
// corpus's repository, gives each repository its own, so no delivery moves a label or a
// milestone to another repository.
func TestEveryLabelAndMilestoneOfTheMixBelongsToOneRepository(t *testing.T) {
	mix, err := buildMix(corpusForTest(t), 37)
	if err != nil {
		t.Fatal(err)
	}
	owner := map[float64]float64{}
	seen := 0
	own := func(i int, kind string, id, repo any) {
		if owner[id.(float64)] == 0 {
			owner[id.(float64)] = repo.(float64)
		}
		if owner[id.(float64)] != repo.(float64) {
			t.Fatalf("delivery %d (%s): label or milestone %v of repository %v is repository %v's", i, kind, id, repo, owner[id.(float64)])
		}
		seen++
	}
	for i, d := range mix {
		if d.provider != "GITHUB" {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal(d.before, &doc); err != nil {
			t.Fatal(err)
		}
		repo := doc["repository"].(map[string]any)["id"]
		for _, key := range []string{"issue", "pull_request"} {
			m, _ := doc[key].(map[string]any)
			labels, _ := m["labels"].([]any)
			for _, l := range labels {
				own(i, d.kind, l.(map[string]any)["id"], repo)
			}
			if ms, ok := m["milestone"].(map[string]any); ok {
				own(i, d.kind, ms["id"], repo)
			}
		}
		if l, ok := doc["label"].(map[string]any); ok {
			own(i, d.kind, l["id"], repo)
		}
	}
	if seen == 0 {
		t.Fatal("the mix names no label or milestone")
	}
}

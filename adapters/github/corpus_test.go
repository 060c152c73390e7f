package github_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// corpusDir finds GitHub's documented example payloads beside the checkout (as in CI) or where
// the environment says. The corpus is read in place and never copied into the repository.
func corpusDir() string {
	if dir := os.Getenv("HEPHAESTUS_GITHUB_CORPUS"); dir != "" {
		return dir
	}
	if dir := os.Getenv("HEPHAESTUS_CORPUS_DIR"); dir != "" {
		return filepath.Join(dir, "github")
	}
	return filepath.Join("..", "..", "..", "shared", "corpus", "github")
}

var _ = Describe("Parsing GitHub's documented example payloads", func() {
	It("gives every payload an envelope with subject and resources, a control route, a named drop or an immediate answer", func() {
		dir := corpusDir()
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			Skip(fmt.Sprintf("corpus not found at %s (set HEPHAESTUS_GITHUB_CORPUS)", dir))
		}
		// No AppID: the corpus's installations belong to several example Apps.
		hook, err := github.NewWebhook(github.Config{WebhookSecret: []byte(appSecret)})
		Expect(err).NotTo(HaveOccurred())

		var files []string
		Expect(filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			// Every example payload, including the few not named *.payload.json.
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
				files = append(files, path)
			}
			return err
		})).To(Succeed())
		Expect(files).NotTo(BeEmpty())

		var problems []string
		counts := map[string]int{}
		for i, path := range files {
			event := filepath.Base(filepath.Dir(path))
			body, payload := withInstallation(path)
			deliveryID := fmt.Sprintf("corpus-%d", i)
			req := delivery(event, deliveryID, string(body))
			req.Headers.Set("X-Hub-Signature-256", sign(appSecret, body))
			if err := hook.Verify(req, nil); err != nil {
				problems = append(problems, fmt.Sprintf("%s: verify: %v", path, err))
				continue
			}
			env, err := hook.Parse(req, nil)
			if problem := judge(event, payload, deliveryID, env, err); problem != "" {
				problems = append(problems, path+": "+problem)
				continue
			}
			switch {
			case env.Immediate != nil:
				counts["immediate"]++
			case env.Control:
				counts["control"]++
			case env.DropReason != "":
				counts["dropped"]++
			default:
				counts["routed"]++
			}
		}
		Expect(problems).To(BeEmpty())
		Expect(counts).To(HaveKeyWithValue("immediate", BeNumerically(">", 0)))
		Expect(counts).To(HaveKeyWithValue("control", BeNumerically(">", 0)))
		Expect(counts).To(HaveKeyWithValue("dropped", BeNumerically(">", 0)))
		Expect(counts).To(HaveKeyWithValue("routed", BeNumerically(">", 200)))
		GinkgoWriter.Printf("corpus: %d payloads %v\n", len(files), counts)
	})
})

// withInstallation reads a payload and adds "installation":{"id":1} where it has none, as an
// App delivery of a repository webhook example would carry.
func withInstallation(path string) ([]byte, map[string]any) {
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var payload map[string]any
	Expect(dec.Decode(&payload)).To(Succeed(), path)
	if _, ok := payload["installation"]; !ok {
		payload["installation"] = map[string]any{"id": json.Number("1")}
	}
	body, err := json.Marshal(payload)
	Expect(err).NotTo(HaveOccurred())
	return body, payload
}

// judge says what is wrong with the outcome for one example payload, or "".
func judge(event string, payload map[string]any, deliveryID string, env contract.Envelope, err error) string {
	if err != nil {
		return fmt.Sprintf("unexplained error: %v", err)
	}
	id := func(key string) string {
		if m, ok := payload[key].(map[string]any); ok {
			return fmt.Sprint(m["id"])
		}
		return ""
	}
	switch {
	case event == "ping":
		if env.Immediate == nil {
			return "ping without an immediate answer"
		}
	case github.IsControlEvent(event):
		if !env.Control || env.Subject.String() != "github:installation:"+id("installation") || env.Route.SourceKey != id("installation") {
			return fmt.Sprintf("control event parsed as %+v", env)
		}
	case env.DropReason != "":
		if env.DropReason != github.DropNoRepositoryOrOrg || id("repository") != "" || id("organization") != "" {
			return "dropped with " + env.DropReason
		}
	default:
		want := "github:repository:" + id("repository")
		if id("repository") == "" {
			want = "github:organization:" + id("organization")
		}
		if env.Subject.String() != want || len(env.Route.Resources) == 0 || env.DeliveryKey != deliveryID ||
			env.Route.SourceKey != id("installation") || env.Route.RecipientsAnyConnection != github.ReaderVisible(event) {
			return fmt.Sprintf("work event parsed as %+v, want subject %s", env, want)
		}
	}
	return ""
}

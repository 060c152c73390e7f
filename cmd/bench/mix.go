package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/specs/ghcorpus"
)

// The mix: signed deliveries of all four providers in the proportions below, built from real
// payload shapes. GitHub's are the documented example payloads of the pinned corpus
// (specs/ghcorpus, fetched into .cache by make; never copied into the repository), rewritten to the
// benchmark's installation and repositories; GitLab's, Slack's and Outline's are the hook
// shapes the specs and cmd/demo send. Every delivery goes to a connection that subscribes to
// its resource, so each is stored once and mirrored by the real handler. The mix is
// deterministic: the same seed gives the same deliveries in the same order.

// slackSigningSecret signs the mix's Slack deliveries (the server's signing secret).
var slackSigningSecret = []byte("bench-slack-signing-secret")

// The mix's non-GitHub resources: one GitLab connection (group mixGitLabGroup) subscribed to
// mixProjects projects, one Slack connection (team mixSlackTeam) subscribed to mixChannels
// channels, one Outline connection subscribed to mixCollections collections.
const (
	mixGitLabGroup   = 4343
	mixGitLabProject = 700000
	mixProjects      = 20
	mixSlackTeam     = "TBENCHMIX1"
	mixSlackApp      = "ABENCHMIX1"
	mixSlackBot      = "UBENCHBOT1"
	mixChannels      = 10
	mixCollections   = 5
	mixTemplates     = 2048 // distinct deliveries a run cycles through
	// mixObjects bounds the issues, pull requests, merge requests and documents the mix touches
	// per repository or project: a team's traffic is mostly updates of live objects.
	mixObjects = 50
)

// The secrets of the mix's GitLab (a plain token) and Outline connections.
const (
	mixGitLabSecret  = "glwt-bench-mix-gitlab-token"
	mixOutlineSecret = "ol_whs_bench-mix-outline-secret"
)

// mixWeights are the shares of the mix by kind of delivery (out of their sum).
var mixWeights = []struct {
	kind   string
	weight int
}{
	{"github/push", 14}, {"github/pull_request", 12}, {"github/check_suite", 5}, {"github/check_run", 6},
	{"github/issue_comment", 10}, {"github/issues", 9}, {"github/pull_request_review", 4},
	{"github/pull_request_review_comment", 4}, {"github/status", 4},
	{"gitlab/push", 4}, {"gitlab/merge_request", 3}, {"gitlab/issue", 2}, {"gitlab/pipeline", 3},
	{"slack/message", 14}, {"outline/documents.update", 6},
}

// corpusFiles are the corpus payloads the GitHub share is built from, per event.
var corpusFiles = map[string][]string{
	"push":                        {"with-new-branch.payload.json", "with-no-username-committer.payload.json"},
	"pull_request":                {"opened.payload.json", "synchronize.payload.json", "labeled.payload.json", "closed.payload.json", "review_requested.payload.json"},
	"check_suite":                 {"completed.payload.json", "requested.payload.json"},
	"check_run":                   {"completed.payload.json", "created.payload.json"},
	"issue_comment":               {"created.payload.json", "edited.payload.json"},
	"issues":                      {"opened.payload.json", "edited.payload.json", "labeled.payload.json", "reopened.payload.json", "assigned.payload.json"},
	"pull_request_review":         {"submitted.payload.json"},
	"pull_request_review_comment": {"created.payload.json"},
	"status":                      {"payload.json"},
}

// mixDelivery is one delivery of the mix. The key of a send is spliced between before and
// after when keyInBody (Slack's event_id, Outline's envelope id), else sent in the provider's
// delivery header.
type mixDelivery struct {
	kind      string // e.g. github/push
	provider  string // GITHUB, GITLAB, SLACK, OUTLINE
	event     string // the event header's value (GitHub, GitLab)
	path      string // filled in with the connection ids
	before    []byte
	after     []byte
	keyInBody bool
}

// mixCorpusDir is where the GitHub corpus is read: -corpus, else specs/ghcorpus's folder
// ($HEPHAESTUS_GITHUB_CORPUS, or the pinned package `make bench` fetches into .cache/corpus).
func mixCorpusDir(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return ghcorpus.Dir()
}

// loadCorpus reads the corpus payloads the mix uses, and fails naming the directory and the
// override when one is missing.
func loadCorpus(dir string) (map[string][]map[string]any, error) {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("the GitHub corpus is not at %s: the mix reads GitHub's example payloads "+
			"(run `make corpus`, or set -corpus or %s to their directory)", dir, ghcorpus.EnvDir)
	}
	out := map[string][]map[string]any{}
	for event, files := range corpusFiles {
		for _, f := range files {
			path := filepath.Join(dir, event, f)
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("the GitHub corpus at %s lacks %s/%s (set -corpus or HEPHAESTUS_GITHUB_CORPUS): %w", dir, event, f, err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				return nil, fmt.Errorf("corpus %s: %w", path, err)
			}
			out[event] = append(out[event], doc)
		}
	}
	return out, nil
}

// mixGenerator builds the deliveries of the mix from a seeded source.
type mixGenerator struct {
	rng    *rand.Rand
	corpus map[string][]map[string]any
	n      int // deliveries built so far
}

// buildMix returns mixTemplates deliveries drawn by mixWeights from seed.
func buildMix(corpusDir string, seed uint64) ([]mixDelivery, error) {
	corpus, err := loadCorpus(corpusDir)
	if err != nil {
		return nil, err
	}
	g := &mixGenerator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), corpus: corpus}
	total := 0
	for _, w := range mixWeights {
		total += w.weight
	}
	out := make([]mixDelivery, 0, mixTemplates)
	for range mixTemplates {
		pick := g.rng.IntN(total)
		kind := ""
		for _, w := range mixWeights {
			if pick < w.weight {
				kind = w.kind
				break
			}
			pick -= w.weight
		}
		d, err := g.delivery(kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (g *mixGenerator) delivery(kind string) (mixDelivery, error) {
	g.n++
	provider, event, _ := strings.Cut(kind, "/")
	switch provider {
	case "github":
		body, err := g.github(event)
		return mixDelivery{kind: kind, provider: "GITHUB", event: event, path: "/webhooks/github", before: body}, err
	case "gitlab":
		body, header := g.gitlab(event)
		return mixDelivery{kind: kind, provider: "GITLAB", event: header, before: body}, nil
	case "slack":
		before, after := g.slackMessage()
		return mixDelivery{kind: kind, provider: "SLACK", path: "/webhooks/slack", before: before, after: after, keyInBody: true}, nil
	case "outline":
		before, after := g.outlineDocument()
		return mixDelivery{kind: kind, provider: "OUTLINE", before: before, after: after, keyInBody: true}, nil
	}
	return mixDelivery{}, fmt.Errorf("unknown kind %q", kind)
}

func (g *mixGenerator) sha() string {
	var b [20]byte
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return hex.EncodeToString(b[:])
}

// clone deep-copies a decoded JSON document (objects, arrays and their scalar values), so
// a delivery can rewrite it without touching the corpus.
func clone(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = cloneValue(v)
	}
	return out
}

// cloneValue deep-copies one decoded JSON value; a scalar is a copy already.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return clone(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

func obj(doc map[string]any, key string) map[string]any {
	m, _ := doc[key].(map[string]any)
	return m
}

// github rewrites a corpus payload of event to the benchmark's installation, one of its
// pipelineRepos repositories, that repository's labels and milestone and a bounded set of
// objects in it.
func (g *mixGenerator) github(event string) ([]byte, error) {
	docs := g.corpus[event]
	doc := clone(docs[g.rng.IntN(len(docs))])
	repo := g.rng.IntN(pipelineRepos)
	object := int64(g.rng.IntN(mixObjects) + 1)
	if r := obj(doc, "repository"); r != nil {
		r["id"] = repositoryID + repo
		r["node_id"] = fmt.Sprintf("R_bench%d", repo)
		r["name"] = fmt.Sprintf("hello-%d", repo)
		r["full_name"] = fmt.Sprintf("octo/hello-%d", repo)
		r["owner"] = map[string]any{"login": "octo", "id": organizationID, "type": "Organization"}
	} else {
		return nil, errors.New("corpus payload without a repository")
	}
	doc["installation"] = map[string]any{"id": installationID, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mg=="}
	if o := obj(doc, "organization"); o != nil {
		o["login"], o["id"] = "octo", organizationID
	}
	ids := func(m map[string]any, base int64) {
		if m == nil {
			return
		}
		m["id"] = base + int64(repo)*1000 + object
		if _, ok := m["number"]; ok {
			m["number"] = object
		}
	}
	for _, key := range []string{"issue", "pull_request"} {
		ownedByRepository(obj(doc, key), repo)
	}
	if l := obj(doc, "label"); l != nil {
		l["id"] = repositoryOwnedID(l["id"], repo)
	}
	switch event {
	case "push":
		g.githubPush(doc)
	case "pull_request":
		ids(obj(doc, "pull_request"), 3_000_000_000)
		doc["number"] = object
	case "issues":
		ids(obj(doc, "issue"), 2_000_000_000)
	case "issue_comment":
		ids(obj(doc, "issue"), 2_000_000_000)
		ids(obj(doc, "comment"), 4_000_000_000+int64(g.n)*100_000)
	case "pull_request_review":
		ids(obj(doc, "pull_request"), 3_000_000_000)
		ids(obj(doc, "review"), 5_000_000_000+int64(g.n)*100_000)
	case "pull_request_review_comment":
		ids(obj(doc, "pull_request"), 3_000_000_000)
		ids(obj(doc, "comment"), 6_000_000_000+int64(g.n)*100_000)
	case "check_suite":
		cs := obj(doc, "check_suite")
		ids(cs, 7_000_000_000+int64(g.n)*100_000)
		if cs != nil {
			cs["head_sha"] = g.sha()
		}
	case "check_run":
		ids(obj(doc, "check_run"), 8_000_000_000+int64(g.n)*100_000)
	case "status":
		doc["id"] = 9_000_000_000 + int64(g.n)
		doc["sha"] = g.sha()
	}
	return json.Marshal(doc)
}

// ownedByRepository gives the labels and the milestone of an issue or pull request ids of repo:
// GitHub's label and milestone ids belong to one repository, and the corpus names the same ones
// in every payload, so that rewritten to other repositories they would move from repository to
// repository with every delivery (a write and a change each time).
func ownedByRepository(m map[string]any, repo int) {
	if m == nil {
		return
	}
	labels, _ := m["labels"].([]any)
	for _, l := range labels {
		if l, ok := l.(map[string]any); ok {
			l["id"] = repositoryOwnedID(l["id"], repo)
		}
	}
	if ms := obj(m, "milestone"); ms != nil {
		ms["id"] = repositoryOwnedID(ms["id"], repo)
	}
}

// repositoryOwnedID is the id a corpus label or milestone has in repo.
func repositoryOwnedID(id any, repo int) any {
	f, ok := id.(float64)
	if !ok {
		return id
	}
	return 10_000_000_000 + int64(repo)*1_000_000 + int64(f)%1_000_000
}

// githubPush makes a push of 1 to 20 commits (GitHub lists up to 20 in the payload) to an
// existing branch, each commit shaped as the corpus's.
func (g *mixGenerator) githubPush(doc map[string]any) {
	commits, _ := doc["commits"].([]any)
	var proto map[string]any
	if len(commits) > 0 {
		proto, _ = commits[0].(map[string]any)
	}
	if proto == nil {
		proto = map[string]any{"message": "change", "timestamp": "2019-05-15T15:20:30-05:00",
			"author":    map[string]any{"name": "Codertocat", "email": "[REDACTED]", "username": "Codertocat"},
			"committer": map[string]any{"name": "Codertocat", "email": "[REDACTED]", "username": "Codertocat"},
			"added":     []any{}, "removed": []any{}, "modified": []any{"README.md"}, "distinct": true}
	}
	n := 1 + g.rng.IntN(20)
	before := g.sha()
	list := make([]any, n)
	for i := range list {
		c := clone(proto)
		sha := g.sha()
		c["id"], c["tree_id"] = sha, g.sha()
		c["message"] = fmt.Sprintf("Change %d of push %d\n\nThe body of the commit message.", i+1, g.n)
		c["url"] = "https://github.com/octo/hello/commit/" + sha
		list[i] = c
	}
	last := list[n-1].(map[string]any)
	doc["commits"], doc["head_commit"] = list, last
	doc["before"], doc["after"] = before, last["id"]
	doc["created"], doc["deleted"], doc["forced"] = false, false, false
	doc["ref"], doc["base_ref"] = "refs/heads/main", nil
}

// GitLab hook shapes as specs/gitlab sends them.

func (g *mixGenerator) gitlab(event string) ([]byte, string) {
	project := mixGitLabProject + g.rng.IntN(mixProjects)
	object := g.rng.IntN(mixObjects) + 1
	p := map[string]any{"id": project, "name": fmt.Sprintf("api-%d", project), "namespace_id": mixGitLabGroup,
		"path_with_namespace": fmt.Sprintf("acme/api-%d", project), "web_url": fmt.Sprintf("https://gitlab.com/acme/api-%d", project),
		"default_branch": "main", "visibility_level": 0}
	user := map[string]any{"id": 7000 + object, "name": "Ana López", "username": "ana.lopez", "avatar_url": nil, "email": "[REDACTED]"}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(g.n) * time.Second).Format(time.RFC3339)
	switch event {
	case "push":
		n := 1 + g.rng.IntN(20)
		commits := make([]any, n)
		after := ""
		for i := range commits {
			after = g.sha()
			commits[i] = map[string]any{"id": after, "message": fmt.Sprintf("change %d\n\nbody", i), "title": fmt.Sprintf("change %d", i),
				"timestamp": at, "url": fmt.Sprintf("https://gitlab.com/acme/api-%d/-/commit/%s", project, after),
				"author": map[string]any{"name": "Ana López", "email": "[REDACTED]"}}
		}
		return mustJSON(map[string]any{"object_kind": "push", "event_name": "push", "before": g.sha(), "after": after,
			"ref": "refs/heads/main", "user_id": 7000 + object, "user_name": "Ana López", "user_username": "ana.lopez",
			"project_id": project, "project": p, "commits": commits, "total_commits_count": n}), "Push Hook"
	case "merge_request":
		return mustJSON(map[string]any{"object_kind": "merge_request", "event_type": "merge_request", "user": user, "project": p,
			"object_attributes": map[string]any{"id": project*1000 + object, "iid": object, "target_project_id": project,
				"source_project_id": project, "title": fmt.Sprintf("Change %d", object), "description": "Fixes the crash",
				"state": "opened", "source_branch": fmt.Sprintf("fix-%d", object), "target_branch": "main",
				"merge_status": "can_be_merged", "detailed_merge_status": "mergeable", "author_id": 7000 + object,
				"url": fmt.Sprintf("https://gitlab.com/acme/api-%d/-/merge_requests/%d", project, object), "action": "update",
				"last_commit": map[string]any{"id": g.sha()}, "created_at": at, "updated_at": at}}), "Merge Request Hook"
	case "issue":
		return mustJSON(map[string]any{"object_kind": "issue", "event_type": "issue", "user": user, "project": p,
			"object_attributes": map[string]any{"id": project*1000 + object, "iid": object, "project_id": project,
				"title": fmt.Sprintf("Issue %d", object), "description": "It crashes on start", "state": "opened",
				"author_id": 7000 + object, "url": fmt.Sprintf("https://gitlab.com/acme/api-%d/-/issues/%d", project, object),
				"action": "update", "created_at": at, "updated_at": at}}), "Issue Hook"
	default: // pipeline
		return mustJSON(map[string]any{"object_kind": "pipeline", "project": p, "user": user,
			"object_attributes": map[string]any{"id": 9_000_000 + g.n, "ref": "main", "sha": g.sha(), "status": "success",
				"source": "push", "created_at": "2026-11-30 12:00:00 UTC", "finished_at": "2026-11-30 12:07:00 UTC"}}), "Pipeline Hook"
	}
}

// Slack and Outline shapes as cmd/demo sends them; the delivery key goes where the
// placeholder is.

const keyPlaceholder = "\x00key\x00"

func splitAtKey(b []byte) ([]byte, []byte) {
	before, after, _ := bytes.Cut(b, []byte(keyPlaceholder))
	return before, after
}

func (g *mixGenerator) slackMessage() ([]byte, []byte) {
	channel := fmt.Sprintf("CBENCH%04d", g.rng.IntN(mixChannels))
	ts := fmt.Sprintf("%d.%06d", 1764504000+g.n, g.rng.IntN(1_000_000))
	text := fmt.Sprintf("Deploy %d of hello finished, the badge is green again :tada:", g.n)
	return splitAtKey(mustJSON(slackCallback(keyPlaceholder, map[string]any{
		"type": "message", "channel": channel, "channel_type": "channel", "user": fmt.Sprintf("UBENCH%04d", g.rng.IntN(40)),
		"text": text, "ts": ts, "event_ts": ts, "team": mixSlackTeam, "client_msg_id": fmt.Sprintf("msg-%d", g.n),
		"blocks": []any{map[string]any{"type": "rich_text", "block_id": "b1", "elements": []any{
			map[string]any{"type": "rich_text_section", "elements": []any{map[string]any{"type": "text", "text": text}}},
		}}},
	})))
}

func slackCallback(eventID string, event map[string]any) map[string]any {
	return map[string]any{
		"token": "XXYYZZbench", "team_id": mixSlackTeam, "context_team_id": mixSlackTeam,
		"api_app_id": mixSlackApp, "event": event, "type": "event_callback", "event_id": eventID,
		"event_time": 1764504000, "is_ext_shared_channel": false,
		"authorizations": []any{map[string]any{
			"enterprise_id": nil, "team_id": mixSlackTeam, "user_id": mixSlackBot, "is_bot": true,
			"is_enterprise_install": false,
		}},
	}
}

// slackBotJoined is the app's bot joining a channel: the handler grants the channel consent,
// after which its messages are stored.
func slackBotJoined(channel int) []byte {
	return mustJSON(slackCallback(keyPlaceholder, map[string]any{
		"type": "member_joined_channel", "user": mixSlackBot, "channel": fmt.Sprintf("CBENCH%04d", channel),
		"channel_type": "C", "team": mixSlackTeam, "inviter": "UBENCH0001", "event_ts": "1764503000.000100",
	}))
}

func mixCollectionID(i int) string { return fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i) }

func (g *mixGenerator) outlineDocument() ([]byte, []byte) {
	collection := g.rng.IntN(mixCollections)
	doc := collection*1000 + g.rng.IntN(mixObjects)
	docID := fmt.Sprintf("d0c00000-0000-4000-8000-%012d", doc)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(g.n) * time.Second).Format("2006-01-02T15:04:05.000Z")
	actorID := fmt.Sprintf("a0000000-0000-4000-8000-%012d", g.rng.IntN(20))
	actor := map[string]any{"id": actorID, "name": "Ana López", "avatarUrl": nil, "color": "#FF5C80",
		"role": "member", "isSuspended": false, "createdAt": "2025-10-01T00:00:00Z"}
	return splitAtKey(mustJSON(map[string]any{
		"id": keyPlaceholder, "actorId": actorID, "webhookSubscriptionId": "5b6a2e55-3b1f-4a4c-9d1e-2f8c0e7a9b10", "createdAt": at,
		"event": "documents.update",
		"payload": map[string]any{
			"id": docID,
			"model": map[string]any{
				"id": docID, "url": fmt.Sprintf("/doc/release-checklist-%d", doc), "urlId": fmt.Sprintf("Kq3sdE%04d", doc),
				"title": fmt.Sprintf("Release checklist %d", doc), "emoji": nil,
				"text":         fmt.Sprintf("1. Tag release %d\n2. Publish the notes\n3. Announce it in #releases\n", g.n),
				"collectionId": mixCollectionID(collection), "parentDocumentId": nil, "revision": g.n,
				"createdAt": "2026-11-01T00:00:00Z", "updatedAt": at, "publishedAt": "2026-11-01T00:00:00Z",
				"archivedAt": nil, "deletedAt": nil, "createdBy": actor, "updatedBy": actor, "fullWidth": false,
				"template": false, "tasks": map[string]any{"completed": 0, "total": 3},
			},
		},
	}))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mix payload: %v", err))
	}
	// json.Marshal escapes the placeholder's NUL bytes; put them back so it can be found.
	return bytes.ReplaceAll(b, []byte(`\u0000key\u0000`), []byte(keyPlaceholder))
}

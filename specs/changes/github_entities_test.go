package changes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// corpusPayload reads one of GitHub's documented example payloads (support.GitHubCorpus),
// numbers kept exact.
func corpusPayload(file string) (raw []byte, p obj) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(support.GitHubCorpus(), file))
	Expect(err).NotTo(HaveOccurred())
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	Expect(dec.Decode(&p)).To(Succeed())
	return raw, p
}

// at is the value at path in a decoded payload.
func at(p obj, path ...string) any {
	var v any = p
	for _, k := range path {
		m, ok := v.(obj)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// num is the integer at path, as the view's JSON shows it.
func num(p obj, path ...string) json.Number {
	GinkgoHelper()
	n, ok := at(p, path...).(json.Number)
	Expect(ok).To(BeTrue(), "no number at %v", path)
	return n
}

// expected is the one change a corpus payload must publish: its type and subject, and members
// of its data with the values the payload gave.
type expected struct {
	typ, subject string
	data         obj
}

var _ = Describe("GitHub handlers publishing the other mirrored entities", func() {
	h := withHandlers(nil, githubPublishing)

	ofType := func(cs []change.Stored, t string) []change.Stored {
		out := []change.Stored{}
		for _, c := range cs {
			if c.Type == t {
				out = append(out, c)
			}
		}
		return out
	}

	DescribeTable("a delivery publishes its entity's change once; a redelivery and a same-state event publish nothing",
		func(ctx SpecContext, event, file string, want func(p obj) expected) {
			raw, p := corpusPayload(filepath.Join(event, file))
			w := want(p)

			d := support.LeasedEvent(ctx, writerPool, h.ws, github.Provider, event, "github:spec", string(raw))
			Expect(d.Handle(ctx, h.reg)).To(Succeed())
			first := h.changes(ctx)
			mine := ofType(first, w.typ)
			Expect(mine).To(HaveLen(1), "one %s among %d changes", w.typ, len(first))
			Expect(mine[0].Subject).To(Equal(w.subject))
			var data obj
			dec := json.NewDecoder(bytes.NewReader(mine[0].Data))
			dec.UseNumber()
			Expect(dec.Decode(&data)).To(Succeed())
			for k, v := range w.data {
				Expect(data).To(HaveKeyWithValue(k, v), "data member %s of %s", k, mine[0].Data)
			}

			By("the same delivery handled again (a retry or a replay): nothing new")
			d.NextLease(ctx)
			Expect(d.Handle(ctx, h.reg)).To(Succeed())
			Expect(h.changes(ctx)).To(HaveLen(len(first)))

			By("another delivery of the same state: nothing new")
			again := support.LeasedEvent(ctx, writerPool, h.ws, github.Provider, event, "github:spec", string(raw))
			Expect(again.Handle(ctx, h.reg)).To(Succeed())
			Expect(h.changes(ctx)).To(HaveLen(len(first)))
		},
		Entry("an issue comment created", "issue_comment", "created.payload.json", func(p obj) expected {
			return expected{"github.issue_comment.upserted", "github:issue_comment:" + num(p, "comment", "id").String(),
				obj{"id": num(p, "comment", "id"), "body": at(p, "comment", "body"), "author": at(p, "comment", "user", "login"),
					"issueId": num(p, "issue", "id")}}
		}),
		Entry("an issue comment deleted", "issue_comment", "deleted.payload.json", func(p obj) expected {
			return expected{"github.issue_comment.deleted", "github:issue_comment:" + num(p, "comment", "id").String(),
				obj{"id": num(p, "comment", "id")}}
		}),
		Entry("a label created", "label", "created.payload.json", func(p obj) expected {
			return expected{"github.label.upserted", "github:label:" + num(p, "label", "id").String(),
				obj{"id": num(p, "label", "id"), "name": at(p, "label", "name"), "color": at(p, "label", "color"),
					"repositoryId": num(p, "repository", "id")}}
		}),
		Entry("a label deleted", "label", "deleted.payload.json", func(p obj) expected {
			return expected{"github.label.deleted", "github:label:" + num(p, "label", "id").String(), obj{"id": num(p, "label", "id")}}
		}),
		Entry("a milestone created", "milestone", "created.payload.json", func(p obj) expected {
			return expected{"github.milestone.upserted", "github:milestone:" + num(p, "milestone", "id").String(),
				obj{"id": num(p, "milestone", "id"), "title": at(p, "milestone", "title"), "state": at(p, "milestone", "state"),
					"number": num(p, "milestone", "number")}}
		}),
		Entry("a milestone deleted", "milestone", "deleted.payload.json", func(p obj) expected {
			return expected{"github.milestone.deleted", "github:milestone:" + num(p, "milestone", "id").String(),
				obj{"id": num(p, "milestone", "id")}}
		}),
		Entry("a pull request review submitted", "pull_request_review", "submitted.payload.json", func(p obj) expected {
			return expected{"github.review.upserted", "github:review:" + num(p, "review", "id").String(),
				obj{"id": num(p, "review", "id"), "state": at(p, "review", "state"), "author": at(p, "review", "user", "login"),
					"pullRequestId": num(p, "pull_request", "id")}}
		}),
		Entry("a review comment created", "pull_request_review_comment", "created.payload.json", func(p obj) expected {
			return expected{"github.review_comment.upserted", "github:review_comment:" + num(p, "comment", "id").String(),
				obj{"id": num(p, "comment", "id"), "body": at(p, "comment", "body"), "path": at(p, "comment", "path"),
					"author": at(p, "comment", "user", "login")}}
		}),
		Entry("a review thread resolved", "pull_request_review_thread", "resolved.payload.json", func(p obj) expected {
			return expected{"github.review_thread.upserted", "github:review_thread:" + at(p, "thread", "node_id").(string),
				obj{"nodeId": at(p, "thread", "node_id"), "resolved": true}}
		}),
		Entry("a commit status", "status", "payload.json", func(p obj) expected {
			return expected{"github.commit_status.upserted", "github:commit_status:" + num(p, "id").String(),
				obj{"id": num(p, "id"), "sha": at(p, "sha"), "state": at(p, "state"), "context": at(p, "context")}}
		}),
		Entry("a check suite completed", "check_suite", "completed.payload.json", func(p obj) expected {
			return expected{"github.check_suite.upserted", "github:check_suite:" + num(p, "check_suite", "id").String(),
				obj{"id": num(p, "check_suite", "id"), "status": at(p, "check_suite", "status"),
					"headSha": at(p, "check_suite", "head_sha")}}
		}),
		Entry("an organization member added", "organization", "member_added.payload.json", func(p obj) expected {
			return expected{"github.member.upserted", "github:organization:" + num(p, "organization", "id").String(),
				obj{"organizationId": num(p, "organization", "id"), "userId": num(p, "membership", "user", "id"),
					"login": at(p, "membership", "user", "login"), "role": at(p, "membership", "role")}}
		}),
		Entry("a repository collaborator added", "member", "added.payload.json", func(p obj) expected {
			return expected{"github.collaborator.upserted", "github:repository:" + num(p, "repository", "id").String(),
				obj{"repositoryId": num(p, "repository", "id"), "userId": num(p, "member", "id"), "login": at(p, "member", "login")}}
		}),
		Entry("a team created", "team", "created.payload.json", func(p obj) expected {
			return expected{"github.team.upserted", "github:team:" + num(p, "team", "id").String(),
				obj{"id": num(p, "team", "id"), "name": at(p, "team", "name"), "slug": at(p, "team", "slug")}}
		}),
		Entry("a team deleted", "team", "deleted.payload.json", func(p obj) expected {
			return expected{"github.team.deleted", "github:team:" + num(p, "team", "id").String(), obj{"id": num(p, "team", "id")}}
		}),
		Entry("a team member added", "membership", "added.payload.json", func(p obj) expected {
			return expected{"github.team_member.upserted", "github:team:" + num(p, "team", "id").String(),
				obj{"teamId": num(p, "team", "id"), "userId": num(p, "member", "id"), "login": at(p, "member", "login")}}
		}),
		Entry("a team member removed", "membership", "removed.payload.json", func(p obj) expected {
			return expected{"github.team_member.deleted", "github:team:" + num(p, "team", "id").String(),
				obj{"teamId": num(p, "team", "id"), "userId": num(p, "member", "id"), "login": at(p, "member", "login")}}
		}),
		Entry("a repository renamed", "repository", "renamed.payload.json", func(p obj) expected {
			return expected{"github.repository.upserted", "github:repository:" + num(p, "repository", "id").String(),
				obj{"id": num(p, "repository", "id"), "fullName": at(p, "repository", "full_name"), "name": at(p, "repository", "name")}}
		}),
		Entry("an organization renamed", "organization", "renamed.payload.json", func(p obj) expected {
			return expected{"github.organization.upserted", "github:organization:" + num(p, "organization", "id").String(),
				obj{"id": num(p, "organization", "id"), "login": at(p, "organization", "login")}}
		}),
		Entry("a team added to a repository", "team", "added_to_repository.payload.json", func(p obj) expected {
			team, repo := num(p, "team", "id").String(), num(p, "repository", "id").String()
			return expected{"github.team_repository.upserted", "github:team_repository:" + team + ":" + repo,
				obj{"teamId": num(p, "team", "id"), "repositoryId": num(p, "repository", "id")}}
		}),
	)

	It("publishes a sub-issue link and a dependency under the issue they belong to, their removal, and nothing for the same link again", func(ctx SpecContext) {
		parent, child := ghIssue("Epic", "2024-02-02T00:00:00Z"), ghIssue("Part", "2024-02-02T00:00:00Z")
		child["id"], child["number"] = 3002, 2
		deliver := func(event string, payload obj) {
			GinkgoHelper()
			d := support.LeasedEvent(ctx, writerPool, h.ws, github.Provider, event, "github:spec", ghBody(payload))
			Expect(d.Handle(ctx, h.reg)).To(Succeed())
		}
		links := func() []string {
			out := []string{}
			for _, c := range h.changes(ctx) {
				if c.Type != "github.label.upserted" && c.Type != "github.repository.upserted" && c.Type != "github.issue.upserted" {
					out = append(out, c.Type+" "+c.Subject+" "+string(entity(c.Data)))
				}
			}
			return out
		}
		sub := func(action string) obj {
			return obj{"action": action, "parent_issue": parent, "sub_issue": child, "sub_issue_repo": ghRepo, "repository": ghRepo}
		}
		dep := func(action string) obj {
			return obj{"action": action, "blocked_issue": parent, "blocking_issue": child, "blocking_issue_repo": ghRepo, "repository": ghRepo}
		}
		deliver("sub_issues", sub("sub_issue_added"))
		deliver("sub_issues", sub("sub_issue_added"))
		deliver("sub_issues", sub("sub_issue_removed"))
		deliver("issue_dependencies", dep("blocked_by_added"))
		deliver("issue_dependencies", dep("blocked_by_added"))
		Expect(links()).To(Equal([]string{
			`github.sub_issue.upserted github:issue:3001 {"removed": false, "subIssueId": 3002, "parentIssueId": 3001}`,
			`github.sub_issue.deleted github:issue:3001 {"removed": true, "subIssueId": 3002, "parentIssueId": 3001}`,
			`github.issue_dependency.upserted github:issue:3001 {"removed": false, "blockedIssueId": 3001, "blockingIssueId": 3002}`,
		}))
	})

	It("publishes each check run GitHub reports for a suite once per state: queued, then completed; a redelivery and the same state again nothing", func(ctx SpecContext) {
		raw, p := corpusPayload(filepath.Join("check_suite", "requested.payload.json"))
		suite, err := num(p, "check_suite", "id").Int64()
		Expect(err).NotTo(HaveOccurred())
		started := time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC)
		runs := &suiteRuns{suite: suite, runs: []githubmodel.CheckRun{{ID: 6001, HeadSHA: at(p, "check_suite", "head_sha").(string),
			Name: "build", Status: "queued", StartedAt: &started}}}
		_, withReader := githubWriter(writerPool, h.feed, runs)
		deliver := func() support.Delivery {
			GinkgoHelper()
			d := support.LeasedEvent(ctx, writerPool, h.ws, github.Provider, "check_suite", "github:spec", string(raw))
			Expect(d.Handle(ctx, withReader)).To(Succeed())
			return d
		}
		checkRuns := func() []change.Stored { return ofType(h.changes(ctx), "github.check_run.upserted") }

		d := deliver()
		Expect(checkRuns()).To(HaveLen(1))
		Expect(checkRuns()[0].Subject).To(Equal("github:check_run:6001"))
		Expect(entity(checkRuns()[0].Data)).To(MatchJSON(`{"id":6001,"repositoryId":` + num(p, "repository", "id").String() +
			`,"checkSuiteId":null,"headSha":"` + runs.runs[0].HeadSHA + `","name":"build","status":"queued","conclusion":null,` +
			`"startedAt":"2024-07-01T10:00:00Z","completedAt":null}`))
		d.NextLease(ctx)
		Expect(d.Handle(ctx, withReader)).To(Succeed())
		deliver() // GitHub reports the same run again
		Expect(checkRuns()).To(HaveLen(1))

		completed, success := started.Add(time.Minute), "success"
		runs.runs[0].Status, runs.runs[0].Conclusion, runs.runs[0].CompletedAt = "completed", &success, &completed
		deliver()
		all := checkRuns()
		Expect(all).To(HaveLen(2))
		Expect(all[1].Subject).To(Equal("github:check_run:6001"))
		Expect(string(all[1].Data)).To(And(ContainSubstring(`"status": "completed"`), ContainSubstring(`"conclusion": "success"`)))
	})
})

var _ = Describe("A pull request's check state in the change feed", func() {
	It("publishes the pull request again each time the check state its view shows changes: none, pending, success", func(ctx SpecContext) {
		ws := support.Workspace(ctx, writerPool, "acme")
		feed, err := changefeed.New(writerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		raw, p := corpusPayload(filepath.Join("check_suite", "requested.payload.json"))
		suite, err := num(p, "check_suite", "id").Int64()
		Expect(err).NotTo(HaveOccurred())
		head := at(p, "check_suite", "head_sha").(string)
		started := time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC)
		runs := &suiteRuns{suite: suite, runs: []githubmodel.CheckRun{{ID: 6002, HeadSHA: head, Name: "build", Status: "queued", StartedAt: &started}}}
		_, reg := githubWriter(writerPool, feed, runs)
		deliver := func(event, payload string) {
			GinkgoHelper()
			d := support.LeasedEvent(ctx, writerPool, ws, github.Provider, event, "github:spec", payload)
			Expect(d.Handle(ctx, reg)).To(Succeed())
		}
		deliver("pull_request", ghBody(obj{"action": "opened", "number": 6, "repository": at(p, "repository"), "pull_request": obj{
			"id": 9002, "number": 6, "title": "Checked", "state": "open", "user": ghUser(7, "octocat"),
			"head": obj{"ref": "feature", "sha": head}, "base": obj{"ref": "main", "sha": sha(1)},
			"labels": []any{}, "assignees": []any{}, "requested_reviewers": []any{},
			"created_at": "2024-07-01T09:00:00Z", "updated_at": "2024-07-01T09:00:00Z", "merged": false,
		}}))
		deliver("check_suite", string(raw))
		completed, success := started.Add(time.Minute), "success"
		runs.runs[0].Status, runs.runs[0].Conclusion, runs.runs[0].CompletedAt = "completed", &success, &completed
		deliver("check_suite", string(raw))
		deliver("check_suite", string(raw)) // the same state again

		cs, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		checks := []string{}
		for _, c := range cs {
			if c.Type == "github.pull_request.upserted" {
				Expect(c.Subject).To(Equal("github:pull_request:9002"))
				var v struct{ Checks *string }
				Expect(json.Unmarshal(c.Data, &v)).To(Succeed())
				checks = append(checks, orNull(v.Checks))
			}
		}
		Expect(checks).To(Equal([]string{"null", "none", "pending", "success"}))
	})
})

func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// suiteRuns answers a suite's check runs as GitHub would; nothing else.
type suiteRuns struct {
	suite int64
	runs  []githubmodel.CheckRun
}

func (*suiteRuns) CompareCommits(context.Context, githubmodel.Access, string, string, string) ([]githubmodel.Commit, error) {
	return nil, nil
}

func (*suiteRuns) CheckRunsForRef(context.Context, githubmodel.Access, string, string) ([]githubmodel.CheckRun, error) {
	return nil, nil
}

func (r *suiteRuns) CheckRunsForSuite(_ context.Context, _ githubmodel.Access, _ string, suite int64) ([]githubmodel.CheckRun, error) {
	if suite != r.suite {
		return nil, nil
	}
	return append([]githubmodel.CheckRun(nil), r.runs...), nil
}

package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

type obj = map[string]any

func ghUser(id int64, login string) obj {
	return obj{"id": id, "login": login, "type": "User", "avatar_url": "https://avatars.example/" + login}
}

var ghRepo = obj{
	"id": 4242, "name": "app", "full_name": "acme/app", "private": false, "visibility": "public",
	"owner": ghUser(77, "acme"), "default_branch": "main", "html_url": "https://github.com/acme/app",
	"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-02T00:00:00Z", "pushed_at": "2024-01-03T00:00:00Z",
}

func ghIssue(title, updatedAt string) obj {
	return obj{
		"id": 3001, "number": 1, "title": title, "state": "open", "body": "body of " + title,
		"user": ghUser(7, "octocat"), "labels": []any{obj{"id": 501, "name": "bug", "color": "d73a4a", "default": true}},
		"assignees": []any{}, "comments": 0, "created_at": "2024-02-01T00:00:00Z", "updated_at": updatedAt,
		"html_url": "https://github.com/acme/app/issues/1",
	}
}

func ghBody(v obj) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

func sha(n int) string { return fmt.Sprintf("%040x", n) }

// githubHandlers wires the GitHub handlers with the real inbox and mirror store on the writing
// servers' pool, as the service does; the store publishes to feed (nil: it publishes nothing).
func githubHandlers(feed *changefeed.Store) (*githubmirror.Store, *consumer.Registry) {
	GinkgoHelper()
	return githubWriter(writerPool, feed, nil)
}

// githubWriter is the GitHub part of one writing server on pool, as the service composes it:
// the real inbox and mirror store, and the handlers in a registry of their own. The store
// publishes through the version-checked feed (nil: it publishes nothing); reader stands in for
// GitHub's API (nil: none).
func githubWriter(pool *pgxpool.Pool, feed *changefeed.Store, reader githubmodel.ProviderReader) (*githubmirror.Store, *consumer.Registry) {
	GinkgoHelper()
	store, err := githubmirror.New(pool)
	Expect(err).NotTo(HaveOccurred())
	if feed != nil {
		Expect(store.PublishChanges(versionChecked(feed), githubread.Views{})).To(Succeed())
	}
	box, err := deliveryinbox.New(pool)
	Expect(err).NotTo(HaveOccurred())
	reg := consumer.NewRegistry()
	Expect(githubhandlers.Register(reg, githubhandlers.Deps{Inbox: box, Store: store, Reader: reader, Log: support.Logger{}})).To(Succeed())
	return store, reg
}

var _ = Describe("GitHub handlers publishing to the change feed", func() {
	var (
		ws    int64
		store *githubmirror.Store
		feed  *changefeed.Store
		reg   *consumer.Registry
	)

	BeforeEach(func(ctx SpecContext) {
		ws = support.Workspace(ctx, writerPool, "acme")
		var err error
		feed, err = changefeed.New(writerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		store, reg = githubHandlers(feed)
	})

	deliver := func(ctx context.Context, event string, payload obj) support.Delivery {
		GinkgoHelper()
		d := support.LeasedEvent(ctx, writerPool, ws, github.Provider, event, "github:spec", ghBody(payload))
		Expect(d.Handle(ctx, reg)).To(Succeed())
		return d
	}
	all := func(ctx context.Context) []change.Stored {
		GinkgoHelper()
		page, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		return page
	}
	types := func(cs []change.Stored) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Type+" "+c.Subject)
		}
		return out
	}

	When("an issue is opened", func() {
		It("publishes github.issue.upserted with the issue as the read API shows it, after its new label", func(ctx SpecContext) {
			deliver(ctx, "issues", obj{"action": "opened", "issue": ghIssue("Crash", "2024-02-02T00:00:00Z"), "repository": ghRepo})
			cs := all(ctx)
			Expect(types(cs)).To(Equal([]string{"github.label.upserted github:label:501", "github.repository.upserted github:repository:4242", "github.issue.upserted github:issue:3001"}))
			Expect(entity(cs[0].Data)).To(MatchJSON(`{"id":501,"repositoryId":4242,"name":"bug","color":"d73a4a","description":null,"default":true}`))
			Expect(string(cs[1].Data)).To(ContainSubstring(`"fullName": "acme/app"`))
			cs = cs[2:]

			rows, _, err := store.Issues(ctx, ws, 4242, ports.PageRequest{Page: 0, Size: 10})
			Expect(err).NotTo(HaveOccurred())
			Expect(rows).To(HaveLen(1))
			shown, err := json.Marshal(githubread.Views{}.Issue(rows[0]))
			Expect(err).NotTo(HaveOccurred())
			Expect(entity(cs[0].Data)).To(MatchJSON(shown))
			Expect(string(cs[0].Data)).To(ContainSubstring(`"title": "Crash"`))
		})
	})

	When("the same delivery runs again after its steps committed (a retry or a replay)", func() {
		It("publishes nothing new", func(ctx SpecContext) {
			d := deliver(ctx, "issues", obj{"action": "opened", "issue": ghIssue("Crash", "2024-02-02T00:00:00Z"), "repository": ghRepo})
			Expect(all(ctx)).To(HaveLen(3)) // the label, the repository and the issue
			d.NextLease(ctx)
			Expect(d.Handle(ctx, reg)).To(Succeed())
			Expect(all(ctx)).To(HaveLen(3))
		})
	})

	When("another delivery carries the issue exactly as mirrored", func() {
		It("publishes nothing new", func(ctx SpecContext) {
			deliver(ctx, "issues", obj{"action": "opened", "issue": ghIssue("Crash", "2024-02-02T00:00:00Z"), "repository": ghRepo})
			deliver(ctx, "issues", obj{"action": "opened", "issue": ghIssue("Crash", "2024-02-02T00:00:00Z"), "repository": ghRepo})
			Expect(types(all(ctx))).To(Equal([]string{"github.label.upserted github:label:501", "github.repository.upserted github:repository:4242", "github.issue.upserted github:issue:3001"}))
		})
	})

	When("an older edit arrives after a newer one", func() {
		It("publishes the newer one only: the version rule refused the older write", func(ctx SpecContext) {
			deliver(ctx, "issues", obj{"action": "edited", "issue": ghIssue("Newer", "2024-02-03T00:00:00Z"), "repository": ghRepo})
			deliver(ctx, "issues", obj{"action": "edited", "issue": ghIssue("Older", "2024-02-02T00:00:00Z"), "repository": ghRepo})
			cs := all(ctx)
			Expect(types(cs)).To(Equal([]string{"github.label.upserted github:label:501", "github.repository.upserted github:repository:4242", "github.issue.upserted github:issue:3001"}))
			Expect(string(cs[2].Data)).To(ContainSubstring(`"title": "Newer"`))
		})
	})

	When("an issue is edited and then deleted", func() {
		It("publishes each change in order, the deletion as github.issue.deleted", func(ctx SpecContext) {
			deliver(ctx, "issues", obj{"action": "opened", "issue": ghIssue("Crash", "2024-02-02T00:00:00Z"), "repository": ghRepo})
			deliver(ctx, "issues", obj{"action": "edited", "issue": ghIssue("Crash on start", "2024-02-03T00:00:00Z"), "repository": ghRepo})
			deliver(ctx, "issues", obj{"action": "deleted", "issue": ghIssue("Crash on start", "2024-02-04T00:00:00Z"), "repository": ghRepo})
			cs := all(ctx)
			Expect(types(cs)).To(Equal([]string{
				"github.label.upserted github:label:501", "github.repository.upserted github:repository:4242",
				"github.issue.upserted github:issue:3001", "github.issue.upserted github:issue:3001",
				"github.issue.deleted github:issue:3001",
			}))
			Expect(string(cs[3].Data)).To(ContainSubstring(`"title": "Crash on start"`))
			Expect(entity(cs[4].Data)).To(MatchJSON(`{"id":3001}`))
		})
	})

	When("a pull request is opened and a push brings commits", func() {
		It("publishes github.pull_request.upserted, again when its check state is first computed, and one github.commit.upserted per new commit", func(ctx SpecContext) {
			deliver(ctx, "pull_request", obj{"action": "opened", "number": 5, "repository": ghRepo, "pull_request": obj{
				"id": 9001, "number": 5, "title": "Change things", "state": "open", "user": ghUser(7, "octocat"),
				"head": obj{"ref": "feature", "sha": sha(3)}, "base": obj{"ref": "main", "sha": sha(1)},
				"labels": []any{}, "assignees": []any{}, "requested_reviewers": []any{},
				"created_at": "2024-03-01T00:00:00Z", "updated_at": "2024-03-01T10:00:00Z", "merged": false,
			}})
			commit := func(s, msg string) obj {
				return obj{"id": s, "message": msg, "timestamp": "2024-04-01T12:00:00Z", "url": "https://github.com/c/" + s,
					"author":    obj{"name": "Mona", "email": "mona@example.com", "username": "mona"},
					"committer": obj{"name": "Mona", "email": "mona@example.com", "username": "mona"}}
			}
			push := obj{"ref": "refs/heads/feature", "before": sha(1), "after": sha(3), "repository": ghRepo,
				"commits": []any{commit(sha(2), "first"), commit(sha(3), "second")}}
			deliver(ctx, "push", push)
			deliver(ctx, "push", push) // the same commits again: nothing new

			cs := all(ctx)
			Expect(types(cs)).To(Equal([]string{
				"github.repository.upserted github:repository:4242",
				"github.pull_request.upserted github:pull_request:9001",
				"github.pull_request.upserted github:pull_request:9001", // its check state, refreshed in its own step
				"github.ref.upserted github:ref:4242:refs/heads/feature",
				"github.commit.upserted github:commit:4242:" + sha(2),
				"github.commit.upserted github:commit:4242:" + sha(3),
			}))
			Expect(string(cs[1].Data)).To(And(ContainSubstring(`"headSha": "`+sha(3)+`"`), ContainSubstring(`"checks": null`)))
			Expect(string(cs[2].Data)).To(ContainSubstring(`"checks": "none"`))
			Expect(entity(cs[3].Data)).To(MatchJSON(`{"repositoryId":4242,"ref":"refs/heads/feature","sha":"` + sha(3) + `"}`))
			Expect(strings.Contains(string(cs[4].Data), "mona@example.com")).To(BeFalse(), "the read API shows no e-mail")
		})
	})

	When("a push's commits are written together", func() {
		It("publishes one github.commit.upserted per commit, in the push's order, each with its own commit", func(ctx SpecContext) {
			commit := func(s, msg string) obj {
				return obj{"id": s, "message": msg, "timestamp": "2024-04-01T12:00:00Z", "url": "https://github.com/c/" + s,
					"author":    obj{"name": "Mona", "email": "mona@example.com", "username": "mona"},
					"committer": obj{"name": "Mona", "email": "mona@example.com", "username": "mona"}}
			}
			// Not in SHA order: the feed follows the push.
			deliver(ctx, "push", obj{"ref": "refs/heads/main", "before": sha(1), "after": sha(5), "repository": ghRepo,
				"commits": []any{commit(sha(9), "first"), commit(sha(4), "second"), commit(sha(5), "third")}})

			cs := all(ctx)
			Expect(types(cs)).To(Equal([]string{
				"github.repository.upserted github:repository:4242",
				"github.ref.upserted github:ref:4242:refs/heads/main",
				"github.commit.upserted github:commit:4242:" + sha(9),
				"github.commit.upserted github:commit:4242:" + sha(4),
				"github.commit.upserted github:commit:4242:" + sha(5),
			}))
			for i, msg := range []string{"first", "second", "third"} {
				Expect(string(cs[2+i].Data)).To(ContainSubstring(`"message": "`+msg+`"`), "change %d", 2+i)
			}
		})
	})
})

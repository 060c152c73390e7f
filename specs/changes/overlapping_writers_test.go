package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
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

// The feed hands out changes in transaction-id order, and a transaction that took its id
// first can commit last: two writers on two servers (each with its own pool) writing the same
// issue in overlapping transactions make the feed hand out the newer issue before the older
// one. Each change's version lets a consumer end with the mirror's state anyway.
var _ = Describe("Overlapping writers of one entity", func() {
	var (
		ws            int64
		otherPool     *pgxpool.Pool
		regA          *consumer.Registry
		store, storeB *githubmirror.Store
	)

	// server is one writer: its own pool, inbox, mirror store, feed and handlers.
	server := func(pool *pgxpool.Pool) (*consumer.Registry, *githubmirror.Store) {
		GinkgoHelper()
		feed, err := changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
		s, reg := githubWriter(pool, feed, nil)
		return reg, s
	}

	BeforeEach(func(ctx SpecContext) {
		ws = support.Workspace(ctx, writerPool, "acme")
		otherPool = support.Pool(ctx, db, 4)
		regA, store = server(writerPool)
		_, storeB = server(otherPool)
	})

	label := func(id int64, name, color string) obj {
		return obj{"id": id, "name": name, "color": color, "default": false}
	}
	edited := func(title, updatedAt string, labels ...obj) string {
		issue := ghIssue(title, updatedAt)
		ls := []any{}
		for _, l := range labels {
			ls = append(ls, l)
		}
		issue["labels"] = ls
		return ghBody(obj{"action": "edited", "issue": issue, "repository": ghRepo})
	}

	It("hands out the newer issue before the older one, and a consumer keeping the newest version of each entity ends with the mirror's issue", func(ctx SpecContext) {
		setup := support.LeasedEvent(ctx, writerPool, ws, github.Provider, "issues", "github:spec",
			edited("Original", "2024-02-02T00:00:00Z", label(501, "bug", "d73a4a")))
		Expect(setup.Handle(ctx, regA)).To(Succeed())

		By("writer B, a sync page on the other server's pool, takes its transaction id at issue 3000 and pauses")
		created := time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)
		issue := func(id int64, number int, title string, updated time.Time) githubmodel.Issue {
			return githubmodel.Issue{ID: id, RepositoryID: 4242, Number: number, Title: title, State: "open",
				LabelIDs: []int64{501}, HTMLURL: fmt.Sprintf("https://github.com/acme/app/issues/%d", number), CreatedAt: &created,
				Version: githubmodel.Version{UpdatedAt: updated}}
		}
		boxB, err := deliveryinbox.New(otherPool)
		Expect(err).NotTo(HaveOccurred())
		paused, resume := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- boxB.Write(context.Background(), func(ctx context.Context, tx ports.Tx) error {
				if err := storeB.UpsertIssue(ctx, tx, ws, issue(3000, 2, "Another", time.Date(2024, 2, 4, 0, 0, 0, 0, time.UTC))); err != nil {
					return err
				}
				close(paused)
				<-resume
				return storeB.UpsertIssue(ctx, tx, ws, issue(3001, 1, "Newer", time.Date(2024, 2, 4, 0, 0, 0, 0, time.UTC)))
			})
		}()
		Eventually(paused).WithTimeout(time.Minute).Should(BeClosed())

		By("writer A, the issue handler on the first pool, takes a later transaction id for an older issue and commits first")
		older := support.LeasedEvent(ctx, writerPool, ws, github.Provider, "issues", "github:spec",
			edited("Older", "2024-02-03T00:00:00Z", label(501, "bug", "d73a4a")))
		Expect(older.Handle(ctx, regA)).To(Succeed())

		By("writer B writes the newest issue and commits last")
		close(resume)
		Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))

		By("a consumer follows the feed from its start, a few changes at a time")
		reader, err := changefeed.New(readerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		var (
			followed []change.Stored
			cursor   change.Cursor
		)
		for {
			page, err := reader.Changes(ctx, ws, cursor, 2)
			Expect(err).NotTo(HaveOccurred())
			if len(page) == 0 {
				break
			}
			followed = append(followed, page...)
			cursor = page[len(page)-1].Cursor
		}
		titles := []string{}
		for _, c := range followed {
			if c.Type == "github.issue.upserted" && c.Subject == "github:issue:3001" {
				var d map[string]any
				Expect(json.Unmarshal(c.Data, &d)).To(Succeed())
				titles = append(titles, d["title"].(string))
			}
		}
		Expect(titles).To(Equal([]string{"Original", "Newer", "Older"}),
			"the feed's order is transaction-id order: B's newer issue comes before A's older one")

		rows, _, err := store.Issues(ctx, ws, 4242, ports.PageRequest{Page: 0, Size: 10})
		Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(rows, func(r githubmirror.IssueRow) bool { return r.ID == 3001 })
		Expect(i).To(BeNumerically(">=", 0))
		Expect(rows[i].Title).To(Equal("Newer"), "the mirror kept the newest issue")
		mirrored, err := json.Marshal(githubread.Views{}.Issue(rows[i]))
		Expect(err).NotTo(HaveOccurred())

		// keepNewest applies changes in the given order, keeping per type and subject the data
		// with the greatest version.
		keepNewest := func(cs []change.Stored) map[string]map[string]any {
			kept := map[string]map[string]any{}
			for _, c := range cs {
				var d map[string]any
				Expect(json.Unmarshal(c.Data, &d)).To(Succeed())
				key := c.Type + " " + c.Subject
				if old, ok := kept[key]; !ok || d["version"].(string) >= old["version"].(string) {
					kept[key] = d
				}
			}
			return kept
		}
		reversed := slices.Clone(followed)
		slices.Reverse(reversed)
		for _, order := range [][]change.Stored{followed, reversed} {
			kept := keepNewest(order)
			issue := kept["github.issue.upserted github:issue:3001"]
			shown := maps.Clone(issue)
			delete(shown, "version")
			raw, err := json.Marshal(shown)
			Expect(err).NotTo(HaveOccurred())
			Expect(raw).To(MatchJSON(mirrored), "the consumer's issue is the mirror's")
			var stored string
			Expect(writerPool.QueryRow(ctx, `SELECT to_char(source_updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
				|| '/' || lpad(source_event_id::text, 19, '0') FROM github_issue WHERE workspace_id = $1 AND id = 3001`, ws).
				Scan(&stored)).To(Succeed())
			Expect(issue["version"]).To(Equal(stored))
		}
	})
})

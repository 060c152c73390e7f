package changes_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The GitLab, Slack and Outline mirror stores publish as the GitHub one does: one change per
// write that changed the row, nothing for a repeated or refused write.
var _ = Describe("Mirror stores publishing to the change feed", func() {
	var (
		ws   int64
		box  *deliveryinbox.Inbox
		feed *changefeed.Store
	)

	BeforeEach(func(ctx SpecContext) {
		ws = support.Workspace(ctx, writerPool, "acme")
		box, feed = writer()
	})

	write := func(ctx context.Context, fn func(ctx context.Context, tx ports.Tx) error) {
		GinkgoHelper()
		Expect(box.Write(ctx, fn)).To(Succeed())
	}
	published := func(ctx context.Context) []string {
		GinkgoHelper()
		page, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		out := []string{}
		for _, c := range page {
			out = append(out, c.Type+" "+c.Subject+" "+string(entity(c.Data)))
		}
		return out
	}

	It("publishes a GitLab merge request write once, and not a repeated or older one", func(ctx SpecContext) {
		store, err := gitlabmirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(versionChecked(feed), gitlabread.Views{})).To(Succeed())
		mr := func(title string, updated time.Time, event int64) gitlabmodel.MergeRequest {
			return gitlabmodel.MergeRequest{ID: 77, ProjectID: 5, IID: 3, Title: title, State: "opened", SourceBranch: "f",
				TargetBranch: "main", HeadSHA: "abc", MergeStatus: "can_be_merged", WebURL: "https://gitlab.example/mr/3",
				Version: gitlabmodel.Version{UpdatedAt: updated, EventID: event}}
		}
		t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
		upsert := func(m gitlabmodel.MergeRequest) {
			write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.UpsertMergeRequest(ctx, tx, ws, m) })
		}
		upsert(mr("First", t0, 1))
		upsert(mr("First", t0, 2))                   // the same state from another event
		upsert(mr("Older", t0.Add(-time.Hour), 3))   // refused by the version rule
		upsert(mr("Second", t0.Add(time.Minute), 4)) // a change
		got := published(ctx)
		Expect(got).To(HaveLen(2))
		Expect(got[0]).To(And(HavePrefix("gitlab.merge_request.upserted gitlab:merge_request:77 "), ContainSubstring(`"title": "First"`)))
		Expect(got[1]).To(ContainSubstring(`"title": "Second"`))
	})

	It("publishes a GitLab merge request again when its readiness changes, and not for the same readiness", func(ctx SpecContext) {
		store, err := gitlabmirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(versionChecked(feed), gitlabread.Views{})).To(Succeed())
		t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
		write(ctx, func(ctx context.Context, tx ports.Tx) error {
			return store.UpsertMergeRequest(ctx, tx, ws, gitlabmodel.MergeRequest{ID: 78, ProjectID: 5, IID: 4, Title: "Ready?",
				State: "opened", Version: gitlabmodel.Version{UpdatedAt: t0, EventID: 1}})
		})
		left := 1
		ready := func(ok bool, reason string, event int64) {
			write(ctx, func(ctx context.Context, tx ports.Tx) error {
				return store.SetReadiness(ctx, tx, ws, gitlabmodel.Readiness{MergeRequestID: 78, Ready: ok, Reason: reason,
					ApprovalsLeft: &left, Version: gitlabmodel.Version{UpdatedAt: t0.Add(time.Duration(event) * time.Minute), EventID: event}})
			})
		}
		ready(false, "approvals", 2)
		ready(false, "approvals", 3) // the same readiness, decided again
		left = 0
		ready(true, "", 4)
		got := published(ctx)
		Expect(got).To(HaveLen(3))
		Expect(got[1]).To(And(HavePrefix("gitlab.merge_request.upserted gitlab:merge_request:78 "),
			ContainSubstring(`"ready": false`), ContainSubstring(`"readinessReason": "approvals"`)))
		Expect(got[2]).To(And(ContainSubstring(`"ready": true`), ContainSubstring(`"approvalsLeft": 0`)))
	})

	It("publishes a Slack message posted, edited and deleted once each", func(ctx SpecContext) {
		store, err := slackmirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(versionChecked(feed), slackread.Views{})).To(Succeed())
		msg := slackmodel.Message{TeamID: "T1", ChannelID: "C1", TS: "1700000000.000100", UserID: "U1", Text: "hello", EventID: 1}
		edit := slackmodel.MessageEdit{ChannelID: "C1", TS: msg.TS, Text: "hello, world", EditedTS: "1700000005.000000", EventID: 2}
		for range 2 { // the second round is a retry of each write: nothing new
			write(ctx, func(ctx context.Context, tx ports.Tx) error {
				_, err := store.InsertMessage(ctx, tx, ws, msg)
				return err
			})
			write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.EditMessageText(ctx, tx, ws, edit) })
			write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.EditMessageTimestamp(ctx, tx, ws, edit) })
		}
		for range 2 {
			write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.DeleteMessage(ctx, tx, ws, "C1", msg.TS, 3) })
		}
		got := published(ctx)
		Expect(got).To(HaveLen(3))
		Expect(got[0]).To(And(HavePrefix("slack.message.posted slack:message:C1:1700000000.000100 "), ContainSubstring(`"text": "hello"`)))
		Expect(got[1]).To(And(HavePrefix("slack.message.edited "), ContainSubstring(`"text": "hello, world"`),
			ContainSubstring(`"editedTs": "1700000005.000000"`)))
		Expect(got[2]).To(HavePrefix("slack.message.deleted slack:message:C1:1700000000.000100 "))
	})

	It("publishes the tombstone of a Slack message deleted before it was mirrored as nothing, and no later post of it", func(ctx SpecContext) {
		store, err := slackmirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(versionChecked(feed), slackread.Views{})).To(Succeed())
		never := slackmodel.MessageDelete{TeamID: "T1", ChannelID: "C1", TS: "1700000000.000200", EventID: 1}
		live := slackmodel.Message{TeamID: "T1", ChannelID: "C1", TS: "1700000000.000300", UserID: "U1", Text: "hi", EventID: 2}
		write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.TombstoneMessage(ctx, tx, ws, never) })
		write(ctx, func(ctx context.Context, tx ports.Tx) error {
			// An older page lists the deleted message: the tombstone stays, nothing is posted.
			_, err := store.InsertMessage(ctx, tx, ws, slackmodel.Message{TeamID: "T1", ChannelID: "C1", TS: never.TS,
				UserID: "U1", Text: "back again"})
			return err
		})
		write(ctx, func(ctx context.Context, tx ports.Tx) error {
			_, err := store.InsertMessage(ctx, tx, ws, live)
			return err
		})
		for range 2 { // a retry deletes nothing new
			write(ctx, func(ctx context.Context, tx ports.Tx) error {
				return store.TombstoneMessage(ctx, tx, ws, slackmodel.MessageDelete{TeamID: "T1", ChannelID: "C1", TS: live.TS, EventID: 3})
			})
		}
		got := published(ctx)
		Expect(got).To(HaveLen(2))
		Expect(got[0]).To(HavePrefix("slack.message.posted slack:message:C1:1700000000.000300 "))
		Expect(got[1]).To(HavePrefix("slack.message.deleted slack:message:C1:1700000000.000300 "))
	})

	It("publishes an Outline document update once, and its deletion", func(ctx SpecContext) {
		store, err := outlinemirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(versionChecked(feed), outlineread.Views{})).To(Succeed())
		t0 := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
		doc := func(title string, rev int64, deleted bool, event int64) outlinemodel.Document {
			return outlinemodel.Document{ID: "doc-1", CollectionID: "col-1", Title: title, Text: "text", URLID: "u1", Deleted: deleted,
				Version: outlinemodel.Version{UpdatedAt: t0.Add(time.Duration(rev) * time.Minute), Revision: rev, EventID: event}}
		}
		for _, d := range []outlinemodel.Document{doc("Plan", 1, false, 1), doc("Plan", 1, false, 2), doc("Plan v2", 2, false, 3), doc("Plan v2", 3, true, 4)} {
			write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.UpsertDocument(ctx, tx, ws, d) })
		}
		got := published(ctx)
		Expect(got).To(HaveLen(3))
		Expect(got[0]).To(And(HavePrefix("outline.document.updated outline:document:doc-1 "), ContainSubstring(`"title": "Plan"`)))
		Expect(got[1]).To(ContainSubstring(`"title": "Plan v2"`))
		Expect(got[2]).To(HavePrefix("outline.document.deleted outline:document:doc-1 "))
	})
})

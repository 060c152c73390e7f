package gitlabmirror

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Publishing to the change feed, as the GitHub mirror does (see githubmirror/changes.go): the
// merge request upsert reports whether the version rule let it write and whether it wrote
// anything but a new event id; only then is gitlab.merge_request.upserted published, in the
// write's transaction, with the merge request as the read API shows it.

// MergeRequestUpserted is the change type of a merge request write.
var MergeRequestUpserted = change.MustType("gitlab.merge_request.upserted")

// Views shapes mirrored rows as the read API shows them (gitlabread.Views).
type Views interface {
	MergeRequest(gitlabhandlers.MergeRequestView) any
	EntityViews
}

type feed struct {
	pub     ports.ChangePublisher
	remover ports.ChangeRemover
	views   Views
}

// PublishChanges makes the store publish its merge request changes through pub, shaped by
// views. Call it once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	if pub == nil || views == nil {
		return errors.New("gitlab mirror: a publisher and the read API's views are required")
	}
	remover, ok := pub.(ports.ChangeRemover)
	if !ok {
		return errors.New("gitlab mirror: the publisher must also remove torn-down changes (ports.ChangeRemover)")
	}
	s.feed = feed{pub: pub, remover: remover, views: views}
	return nil
}

var upsertMergeRequestReportingChange = `
WITH prior AS (SELECT * FROM gitlab_merge_request WHERE workspace_id = $1 AND id = $2)` + upsertMergeRequest + `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE to_jsonb(p) - 'source_event_id' = to_jsonb(t) - 'source_event_id'), ` + mergeRequestVersion

const (
	// readMergeRequestView is the read API's list row for one merge request.
	readMergeRequestView = `
SELECT id, project_id, iid, title, state, draft, source_branch, target_branch, head_sha, merge_status,
       author_id, web_url, created_at, merged_at, closed_at, source_updated_at, ready, readiness_reason,
       approvals_left
FROM gitlab_merge_request
WHERE workspace_id = $1 AND id = $2`
)

func (s *Store) upsertMergeRequestPublishing(ctx context.Context, tx ports.Tx, ws int64, args []any, id int64) error {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	var (
		changed bool
		version string
	)
	err = ptx.QueryRow(ctx, upsertMergeRequestReportingChange, args...).Scan(&changed, &version)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !changed) {
		return nil // refused by the version rule, or nothing but the event id changed
	}
	if err != nil {
		return sqlkit.Interpret("upsert gitlab merge request", err)
	}
	data, err := s.mergeRequestView(ctx, ptx, ws, id)
	if err != nil {
		return err
	}
	c, err := change.NewVersioned(MergeRequestUpserted, "gitlab:merge_request:"+strconv.FormatInt(id, 10), version, data)
	if err != nil {
		return err
	}
	return s.feed.pub.Publish(ctx, tx, ws, c)
}

// mergeRequestView reads the merge request in ptx and shapes it as the read API shows it.
func (s *Store) mergeRequestView(ctx context.Context, ptx pgx.Tx, ws, id int64) (any, error) {
	var (
		m       gitlabhandlers.MergeRequestView
		updated pgtype.Timestamptz
	)
	err := ptx.QueryRow(ctx, readMergeRequestView, ws, id).Scan(&m.ID, &m.ProjectID, &m.IID, &m.Title, &m.State, &m.Draft,
		&m.SourceBranch, &m.TargetBranch, &m.HeadSHA, &m.MergeStatus, &m.AuthorID, &m.WebURL, &m.CreatedAt, &m.MergedAt,
		&m.ClosedAt, &updated, &m.Ready, &m.ReadinessReason, &m.ApprovalsLeft)
	if err != nil {
		return nil, sqlkit.Interpret("read gitlab merge request", err)
	}
	m.Version.UpdatedAt = finite(updated)
	return s.feed.views.MergeRequest(m), nil
}

// publishTeardown removes the data of the torn-down changes sel selects and publishes
// connection.torn_down with what went, in the teardown's transaction.
func (s *Store) publishTeardown(ctx context.Context, tx ports.Tx, ws, conn int64, sel ports.ChangeSelection,
	resources []change.TornDownResource, everything bool) error {
	if s.feed.pub == nil {
		return nil
	}
	return ports.PublishTeardown(ctx, tx, s.feed.pub, s.feed.remover, ws, sel, change.TornDown{
		ConnectionID: conn, Provider: gitlab.Provider.String(), Resources: resources, Everything: everything})
}

package gitlabmirror

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
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
	MergeRequest(gitlabmodel.MergeRequestView) any
	EntityViews
}

// PublishChanges makes the store publish its changes through pub, shaped by views. Call it
// once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	return s.feed.Set("gitlab", pub, views)
}

var upsertMergeRequestReporting = mirrorkit.ReportingAs(
	`SELECT * FROM gitlab_merge_request WHERE workspace_id = $1 AND id = $2`, upsertMergeRequest,
	mirrorkit.Returning(mergeRequestVersion))

const (
	// readMergeRequestView is the read API's list row for one merge request.
	readMergeRequestView = `
SELECT id, project_id, iid, title, state, draft, source_branch, target_branch, head_sha, merge_status,
       author_id, web_url, created_at, merged_at, closed_at, source_updated_at, ready, readiness_reason,
       approvals_left
FROM gitlab_merge_request
WHERE workspace_id = $1 AND id = $2`
)

func (s *Store) mergeRequestWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab merge request", Plain: upsertMergeRequest, SQL: upsertMergeRequestReporting,
		Args: args, Subject: subject("merge_request", id), Upserted: MergeRequestUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) { return s.mergeRequestView(ctx, ptx, ws, id) }}
}

// mergeRequestView reads the merge request in ptx and shapes it as the read API shows it.
func (s *Store) mergeRequestView(ctx context.Context, ptx pgx.Tx, ws, id int64) (any, error) {
	var (
		m       gitlabmodel.MergeRequestView
		updated pgtype.Timestamptz
	)
	err := ptx.QueryRow(ctx, readMergeRequestView, ws, id).Scan(&m.ID, &m.ProjectID, &m.IID, &m.Title, &m.State, &m.Draft,
		&m.SourceBranch, &m.TargetBranch, &m.HeadSHA, &m.MergeStatus, &m.AuthorID, &m.WebURL, &m.CreatedAt, &m.MergedAt,
		&m.ClosedAt, &updated, &m.Ready, &m.ReadinessReason, &m.ApprovalsLeft)
	if err != nil {
		return nil, sqlkit.Interpret("read gitlab merge request", err)
	}
	m.Version.UpdatedAt = finite(updated)
	return s.feed.Views().MergeRequest(m), nil
}

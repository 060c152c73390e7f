// Package gitlabmirror is the PostgreSQL store of the GitLab mirror (migration 00006). It writes
// through the transaction of the DeliveryInbox step that claims the write (sqlkit.PgxTx),
// so every write commits with its step row or not at all, and it answers the read API's queries
// on its own pool. Every statement binds the workspace.
package gitlabmirror

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ gitlabmodel.Store = (*Store)(nil)

// Store is the GitLab mirror store.
type Store struct {
	// PersonData is the personal-data map erasure runs (persondata.go).
	mirrorkit.PersonData
	pool *pgxpool.Pool
	feed mirrorkit.Feed[Views] // the change feed's publisher (entitychanges.go); zero: no publishing
}

// New makes the store; pool serves the reads (writes use the inbox's transactions).
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("gitlab mirror store needs a database pool")
	}
	return &Store{PersonData: mirrorkit.NewPersonData(gitlab.Provider, gitlabPersonData, personArgs), pool: pool}, nil
}

// at is a version's provider timestamp as stored (sqlkit.At).
func at(v gitlabmodel.Version) pgtype.Timestamptz { return sqlkit.At(v.UpdatedAt) }

// exec runs one statement in the step's transaction.
func exec(ctx context.Context, tx ports.Tx, op, sql string, args ...any) error {
	_, err := mirrorkit.Exec(ctx, tx, op, sql, args...)
	return err
}

func (s *Store) UpsertGroup(ctx context.Context, tx ports.Tx, ws int64, g gitlabmodel.Group) error {
	return s.feed.Write(ctx, tx, ws, s.groupWrite(ws,
		[]any{ws, g.ID, g.ParentID, g.Name, g.Path, g.FullPath, g.Deleted, at(g.Version), g.Version.EventID}, g.ID))
}

func (s *Store) UpsertProject(ctx context.Context, tx ports.Tx, ws int64, p gitlabmodel.Project) error {
	return s.feed.Write(ctx, tx, ws, s.projectWrite(ws, "upsert gitlab project", upsertProject, upsertProjectReporting,
		[]any{ws, p.ID, p.NamespaceID, p.Name, p.PathWithNamespace, p.WebURL, p.DefaultBranch, p.Visibility,
			at(p.Version), p.Version.EventID}, p.ID))
}

func (s *Store) SetProjectMonitor(ctx context.Context, tx ports.Tx, ws int64, m gitlabmodel.ProjectMonitor) error {
	return s.feed.Write(ctx, tx, ws, s.projectWrite(ws, "set gitlab project monitor", setProjectMonitor, setProjectMonitorReport,
		[]any{ws, m.ProjectID, m.Name, m.PathWithNamespace, m.Monitored, m.Deleted, at(m.Version), m.Version.EventID}, m.ProjectID))
}

func (s *Store) UpsertMember(ctx context.Context, tx ports.Tx, ws int64, m gitlabmodel.Member) error {
	return s.feed.Write(ctx, tx, ws, s.memberWrite(ws, []any{ws, m.SourceType, m.SourceID, m.UserID, m.Username,
		m.AccessLevel, m.ExpiresAt, m.Deleted, at(m.Version), m.Version.EventID}, m))
}

func (s *Store) UpsertMilestone(ctx context.Context, tx ports.Tx, ws int64, m gitlabmodel.Milestone) error {
	return s.feed.Write(ctx, tx, ws, s.milestoneWrite(ws, []any{ws, m.ID, m.ProjectID, m.GroupID, m.IID, m.Title,
		m.Description, m.State, m.DueDate, m.Deleted, at(m.Version), m.Version.EventID}, m.ID))
}

func (s *Store) UpsertIssue(ctx context.Context, tx ports.Tx, ws int64, i gitlabmodel.Issue) error {
	labels := i.Labels
	if labels == nil {
		labels = []string{}
	}
	return s.feed.Write(ctx, tx, ws, s.issueWrite(ws, []any{ws, i.ID, i.ProjectID, i.IID, i.Title, i.Description,
		i.State, i.AuthorID, i.MilestoneID, labels, i.WebURL, i.CreatedAt, i.ClosedAt, i.Deleted, at(i.Version),
		i.Version.EventID}, i.ID))
}

func (s *Store) UpsertNote(ctx context.Context, tx ports.Tx, ws int64, n gitlabmodel.Note) error {
	return s.feed.Write(ctx, tx, ws, s.noteWrite(ws, []any{ws, n.ID, n.ProjectID, n.NoteableType, n.NoteableID,
		n.CommitSHA, n.AuthorID, n.Body, n.System, n.WebURL, n.CreatedAt, n.Deleted, at(n.Version), n.Version.EventID}, n.ID))
}

func (s *Store) UpsertMergeRequest(ctx context.Context, tx ports.Tx, ws int64, mr gitlabmodel.MergeRequest) error {
	args := []any{ws, mr.ID, mr.ProjectID, mr.IID, mr.Title, mr.Description, mr.State, mr.Draft, mr.SourceBranch,
		mr.TargetBranch, mr.HeadSHA, mr.MergeStatus, mr.AuthorID, mr.WebURL, mr.CreatedAt, mr.MergedAt,
		mr.ClosedAt, at(mr.Version), mr.Version.EventID}
	return s.feed.Write(ctx, tx, ws, s.mergeRequestWrite(ws, args, mr.ID))
}

func (s *Store) SetReadiness(ctx context.Context, tx ports.Tx, ws int64, r gitlabmodel.Readiness) error {
	return s.feed.Write(ctx, tx, ws, s.readinessWrite(ws, []any{ws, r.MergeRequestID, r.Ready, r.Reason, r.ApprovalsLeft,
		at(r.Version), r.Version.EventID}, r.MergeRequestID))
}

func (s *Store) UpsertPipeline(ctx context.Context, tx ports.Tx, ws int64, p gitlabmodel.Pipeline) error {
	return s.feed.Write(ctx, tx, ws, s.pipelineWrite(ws, []any{ws, p.ID, p.ProjectID, p.Ref, p.SHA, p.Status, p.Source,
		p.MergeRequestID, p.CreatedAt, p.FinishedAt, at(p.Version), p.Version.EventID}, p.ID))
}

func (s *Store) RecordPush(ctx context.Context, tx ports.Tx, ws int64, p gitlabmodel.Push) error {
	return exec(ctx, tx, "record gitlab push", recordPush,
		ws, p.ProjectID, p.Ref, p.AfterSHA, p.BeforeSHA, p.UserID, p.CommitCount, p.EventID)
}

func (s *Store) InsertCommit(ctx context.Context, tx ports.Tx, ws int64, c gitlabmodel.Commit) error {
	return s.InsertCommits(ctx, tx, ws, []gitlabmodel.Commit{c})
}

// InsertCommits stores commits in the order given: every insert travels in one round trip, then
// each new commit's change is published (mirrorkit.Feed.WriteIndependent).
func (s *Store) InsertCommits(ctx context.Context, tx ports.Tx, ws int64, cs []gitlabmodel.Commit) error {
	writes := make([]mirrorkit.Write, len(cs))
	for i, c := range cs {
		writes[i] = s.commitWrite(ws, []any{ws, c.ProjectID, c.SHA, c.Title, c.Message, c.AuthorName,
			c.AuthorEmail, c.AuthoredAt, c.URL, c.EventID}, c.ProjectID, c.SHA)
	}
	return s.feed.WriteIndependent(ctx, tx, ws, writes)
}

// ListProjects pages the workspace's projects by path and counts them.
// Errors: context errors, *inbox.TransientError, or a wrapped database error.
func (s *Store) ListProjects(ctx context.Context, ws int64, page ports.PageRequest) ([]gitlabmodel.ProjectView, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, countProjects, ws).Scan(&total); err != nil {
		return nil, 0, sqlkit.Interpret("count gitlab projects", err)
	}
	rows, err := s.pool.Query(ctx, listProjects, ws, page.Size, page.Offset())
	if err != nil {
		return nil, 0, sqlkit.Interpret("list gitlab projects", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gitlabmodel.ProjectView, error) {
		var p gitlabmodel.ProjectView
		err := r.Scan(&p.ID, &p.NamespaceID, &p.Name, &p.PathWithNamespace, &p.WebURL, &p.DefaultBranch,
			&p.Visibility, &p.Monitored)
		return p, err
	})
	if err != nil {
		return nil, 0, sqlkit.Interpret("list gitlab projects", err)
	}
	return out, total, nil
}

// ListMergeRequests pages the merge requests of one of the workspace's projects, newest iid
// first. Errors: ports.ErrNotFound when the workspace has no such project; as ListProjects.
func (s *Store) ListMergeRequests(ctx context.Context, ws, projectID int64, page ports.PageRequest) ([]gitlabmodel.MergeRequestView, int, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, projectExists, ws, projectID).Scan(&exists); err != nil {
		return nil, 0, sqlkit.Interpret("find gitlab project", err)
	}
	if !exists {
		return nil, 0, ports.ErrNotFound
	}
	var total int
	if err := s.pool.QueryRow(ctx, countMergeRequests, ws, projectID).Scan(&total); err != nil {
		return nil, 0, sqlkit.Interpret("count gitlab merge requests", err)
	}
	rows, err := s.pool.Query(ctx, listMergeRequests, ws, projectID, page.Size, page.Offset())
	if err != nil {
		return nil, 0, sqlkit.Interpret("list gitlab merge requests", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gitlabmodel.MergeRequestView, error) {
		var (
			m       gitlabmodel.MergeRequestView
			updated pgtype.Timestamptz
		)
		err := r.Scan(&m.ID, &m.ProjectID, &m.IID, &m.Title, &m.State, &m.Draft, &m.SourceBranch, &m.TargetBranch,
			&m.HeadSHA, &m.MergeStatus, &m.AuthorID, &m.WebURL, &m.CreatedAt, &m.MergedAt, &m.ClosedAt, &updated,
			&m.Ready, &m.ReadinessReason, &m.ApprovalsLeft)
		m.Version.UpdatedAt = finite(updated)
		return m, err
	})
	if err != nil {
		return nil, 0, sqlkit.Interpret("list gitlab merge requests", err)
	}
	return out, total, nil
}

// finite is the time of a stored version, zero for '-infinity' (no provider timestamp).
func finite(t pgtype.Timestamptz) time.Time {
	if !t.Valid || t.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return t.Time
}

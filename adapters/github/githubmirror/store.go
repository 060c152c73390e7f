// Package githubmirror is the PostgreSQL mirror store of the GitHub handlers: it writes the
// mirror tables of migrations/00005_github_mirror.sql through the transaction of the
// DeliveryInbox step that the handler runs (sqlkit.PgxTx), so every write commits with
// its step's claim and the inbox's commit-time fence, and reads the mirror for the handlers'
// context reconstruction and for the read API.
//
// Every upsert applies the version rule of the migration: a write applies only when its
// (provider updated_at, inbox event id) is not older than the stored row's. Multi-row writes
// lock their rows in key order, so two transactions that upsert the same users or labels in a
// different payload order cannot deadlock.
package githubmirror

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ githubmodel.Store = (*Store)(nil)

// Store is the GitHub mirror on a PostgreSQL pool shared with the other adapters. Writes go
// through the inbox's transaction; the pool serves reads only.
type Store struct {
	// PersonData is the personal-data map erasure runs (persondata.go).
	mirrorkit.PersonData
	pool *pgxpool.Pool
	feed mirrorkit.Feed[Views] // the change feed's publisher (changes.go); zero: no publishing
	// connections publishes connection.state_changed; zero: no publishing.
	connections mirrorkit.ConnectionStates
}

// New makes the store on pool.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("github mirror: nil pool")
	}
	return &Store{PersonData: mirrorkit.NewPersonData(github.Provider, githubPersonData, personArgs).AfterErase(putGhostUser), pool: pool}, nil
}

// txOf is the inbox transaction behind tx. Errors: sqlkit.ErrForeignTx.
func txOf(tx ports.Tx) (pgx.Tx, error) {
	return sqlkit.PgxTx(tx)
}

// exec runs one statement in the inbox's transaction.
func exec(ctx context.Context, tx ports.Tx, op, sql string, args ...any) error {
	_, err := mirrorkit.Exec(ctx, tx, op, sql, args...)
	return err
}

// sortedBy returns xs sorted by key (a copy: the caller's slice keeps its order).
func sortedBy[T any](xs []T, key func(T) string) []T {
	out := slices.Clone(xs)
	slices.SortStableFunc(out, func(a, b T) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return out
}

// idKey orders ids numerically as strings of equal width.
func idKey(id int64) string {
	s := strconv.FormatInt(id, 10)
	for len(s) < 20 {
		s = "0" + s
	}
	return s
}

// at is a version's provider timestamp as stored (sqlkit.At).
func at(v githubmodel.Version) pgtype.Timestamptz { return sqlkit.At(v.UpdatedAt) }

// ids is never NULL: the array columns are NOT NULL.
func ids(xs []int64) []int64 {
	if xs == nil {
		return []int64{}
	}
	return xs
}

// UpsertUsers implements githubmodel.UserWriter.
func (s *Store) UpsertUsers(ctx context.Context, tx ports.Tx, ws int64, users []githubmodel.User) error {
	users = sortedBy(users, func(u githubmodel.User) string { return idKey(u.ID) })
	args := func(u githubmodel.User) []any {
		return []any{ws, u.ID, u.Login, u.Type, u.AvatarURL, at(u.Version), u.Version.EventID}
	}
	if sqlkit.CanExecAtCommit(tx) {
		// A user row is shared by every delivery the person appears in, across scopes: written
		// in the round trip that commits, its lock lasts that round trip only. Users
		// publish no change, so nothing reads the upsert's result.
		for _, u := range users {
			sqlkit.ExecAtCommit(tx, "upsert github users", upsertUser, args(u)...)
		}
		return nil
	}
	return mirrorkit.Batch(ctx, tx, "upsert github users", users, func(u githubmodel.User) (string, []any) { return upsertUser, args(u) })
}

// UsersToWrite implements githubmodel.UserWriter.
func (s *Store) UsersToWrite(ctx context.Context, ws int64, users []githubmodel.User) ([]githubmodel.User, error) {
	return toWrite(ctx, s.pool, "read github users", usersToWrite, ws, users,
		func(u githubmodel.User) (int64, githubmodel.Version) { return u.ID, u.Version })
}

// LabelsToWrite implements githubmodel.LabelWriter.
func (s *Store) LabelsToWrite(ctx context.Context, ws int64, labels []githubmodel.Label) ([]githubmodel.Label, error) {
	return toWrite(ctx, s.pool, "read github labels", labelsToWrite, ws, labels,
		func(l githubmodel.Label) (int64, githubmodel.Version) { return l.ID, l.Version })
}

// toWrite keeps, in their order, the rows that sql (newerThanStored) finds newer than what the
// workspace's mirror holds. It reads committed rows on the pool, without a lock.
func toWrite[T any](ctx context.Context, pool *pgxpool.Pool, op, sql string, ws int64, rows []T,
	key func(T) (int64, githubmodel.Version),
) ([]T, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids, ats, events := make([]int64, len(rows)), make([]pgtype.Timestamptz, len(rows)), make([]int64, len(rows))
	for i, r := range rows {
		id, v := key(r)
		ids[i], ats[i], events[i] = id, at(v), v.EventID
	}
	found, err := pool.Query(ctx, sql, ws, ids, ats, events)
	if err != nil {
		return nil, sqlkit.Interpret(op, err)
	}
	newer, err := pgx.CollectRows(found, pgx.RowTo[int64])
	if err != nil {
		return nil, sqlkit.Interpret(op, err)
	}
	return slices.DeleteFunc(slices.Clone(rows), func(r T) bool {
		id, _ := key(r)
		return !slices.Contains(newer, id)
	}), nil
}

// UpsertLabels implements githubmodel.LabelWriter.
func (s *Store) UpsertLabels(ctx context.Context, tx ports.Tx, ws int64, labels []githubmodel.Label) error {
	labels = sortedBy(labels, func(l githubmodel.Label) string { return idKey(l.ID) })
	writes := make([]mirrorkit.Write, 0, len(labels))
	for _, l := range labels {
		writes = append(writes, s.labelWrite(ws, []any{ws, l.ID, l.RepositoryID, l.Name, l.Color, l.Description, l.Default,
			l.Deleted, at(l.Version), l.Version.EventID}, l.ID))
	}
	return s.feed.WriteAll(ctx, tx, ws, writes)
}

// UpsertOrganization implements githubmodel.RepositoryWriter.
func (s *Store) UpsertOrganization(ctx context.Context, tx ports.Tx, ws int64, o githubmodel.Organization) error {
	args := []any{ws, o.ID, o.Login, o.Description, o.Deleted, at(o.Version), o.Version.EventID}
	if s.feed.On() && sqlkit.CanExecAtCommit(tx) {
		written, err := s.organizationAtCommit(ctx, tx, args)
		if err != nil || written {
			return err
		}
	}
	return s.feed.Write(ctx, tx, ws, s.organizationWrite(ws, args, o.ID))
}

// organizationAtCommit writes the organization, a row every delivery of every repository of
// the organization writes, without holding its lock through the step. It reads the
// stored row without a lock: a row whose version is already equal or newer is left alone (the
// upsert would lose to the version rule: no lock, no row version); a row that already says
// what the event says gets the upsert, which then only moves the event id of its version, in
// the round trip that commits, after lockOrganizationUnchanged has checked under the row lock
// that this still holds (if not, the step aborts as contention and its retry reads again).
// written false: the caller writes the row the usual way (no row yet, or a content change,
// which publishes a change).
func (s *Store) organizationAtCommit(ctx context.Context, tx ports.Tx, args []any) (written bool, err error) {
	ptx, err := txOf(tx)
	if err != nil {
		return false, err
	}
	var stale, same bool
	err = ptx.QueryRow(ctx, readOrganizationAgainst, args...).Scan(&stale, &same)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, sqlkit.Interpret("read github organization", err)
	case stale:
		return true, nil
	case !same:
		return false, nil
	}
	const op = "upsert github organization"
	return sqlkit.ExecAtCommit(tx, op, lockOrganizationUnchanged, args...) &&
		sqlkit.ExecAtCommit(tx, op, upsertOrganization, args...), nil
}

// UpsertRepository implements githubmodel.RepositoryWriter.
func (s *Store) UpsertRepository(ctx context.Context, tx ports.Tx, ws int64, r githubmodel.Repository) error {
	return s.feed.Write(ctx, tx, ws, s.repositoryWrite(ws,
		[]any{ws, r.ID, r.OwnerID, r.OwnerLogin, r.Name, r.FullName, r.Private, r.Visibility, r.DefaultBranch,
			r.Archived, r.Fork, r.Description, r.HTMLURL, r.CreatedAt, r.PushedAt, r.Deleted, at(r.Version), r.Version.EventID}, r.ID))
}

// SetOrganizationMember implements githubmodel.RepositoryWriter.
func (s *Store) SetOrganizationMember(ctx context.Context, tx ports.Tx, ws int64, m githubmodel.OrganizationMember) error {
	return s.feed.Write(ctx, tx, ws, s.memberWrite(ws,
		[]any{ws, m.OrganizationID, m.UserID, m.Role, m.State, m.Deleted, at(m.Version), m.Version.EventID},
		m.OrganizationID, m.UserID))
}

// SetCollaborator implements githubmodel.RepositoryWriter.
func (s *Store) SetCollaborator(ctx context.Context, tx ports.Tx, ws int64, c githubmodel.Collaborator) error {
	return s.feed.Write(ctx, tx, ws, s.collaboratorWrite(ws,
		[]any{ws, c.RepositoryID, c.UserID, c.Permission, c.Deleted, at(c.Version), c.Version.EventID},
		c.RepositoryID, c.UserID))
}

// Monitors implements githubmodel.RepositoryWriter.
func (s *Store) Monitors(ctx context.Context, tx ports.Tx, ws, repositoryID, ownerID int64) (bool, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return false, err
	}
	owner := ""
	if ownerID > 0 {
		owner = strconv.FormatInt(ownerID, 10)
	}
	var ok bool
	err = ptx.QueryRow(ctx, monitors, ws, strconv.FormatInt(repositoryID, 10), owner).Scan(&ok)
	return ok, sqlkit.Interpret("read github subscriptions", err)
}

// UpsertTeam implements githubmodel.TeamWriter.
func (s *Store) UpsertTeam(ctx context.Context, tx ports.Tx, ws int64, t githubmodel.Team) error {
	return s.feed.Write(ctx, tx, ws, s.teamWrite(ws,
		[]any{ws, t.ID, t.OrganizationID, t.Name, t.Slug, t.Description, t.Privacy, t.Permission, t.ParentID,
			t.Deleted, at(t.Version), t.Version.EventID}, t.ID))
}

// SetTeamMember implements githubmodel.TeamWriter.
func (s *Store) SetTeamMember(ctx context.Context, tx ports.Tx, ws int64, m githubmodel.TeamMember) error {
	return s.feed.Write(ctx, tx, ws, s.teamMemberWrite(ws,
		[]any{ws, m.TeamID, m.UserID, m.Deleted, at(m.Version), m.Version.EventID}, m.TeamID, m.UserID))
}

// SetTeamRepository implements githubmodel.TeamWriter.
func (s *Store) SetTeamRepository(ctx context.Context, tx ports.Tx, ws int64, r githubmodel.TeamRepository) error {
	return s.feed.Write(ctx, tx, ws, s.teamRepositoryWrite(ws,
		[]any{ws, r.TeamID, r.RepositoryID, r.Permission, r.Deleted, at(r.Version), r.Version.EventID},
		r.TeamID, r.RepositoryID))
}

// UpsertMilestone implements githubmodel.IssueWriter.
func (s *Store) UpsertMilestone(ctx context.Context, tx ports.Tx, ws int64, m githubmodel.Milestone) error {
	return s.feed.Write(ctx, tx, ws, s.milestoneWrite(ws,
		[]any{ws, m.ID, m.RepositoryID, m.Number, m.Title, m.Description, m.State, m.DueOn, m.ClosedAt, m.CreatedAt,
			m.Deleted, at(m.Version), m.Version.EventID}, m.ID))
}

// UpsertIssue implements githubmodel.IssueWriter.
func (s *Store) UpsertIssue(ctx context.Context, tx ports.Tx, ws int64, i githubmodel.Issue) error {
	args := []any{ws, i.ID, i.RepositoryID, i.Number, i.Title, i.Body, i.State, i.StateReason, i.Locked, i.AuthorID,
		i.MilestoneID, ids(i.LabelIDs), ids(i.AssigneeIDs), i.CommentCount, i.HTMLURL, i.CreatedAt, i.ClosedAt,
		i.Deleted, at(i.Version), i.Version.EventID}
	return s.feed.Write(ctx, tx, ws, s.issueWrite(ws, args, i.ID))
}

// UpsertIssueComment implements githubmodel.IssueWriter.
func (s *Store) UpsertIssueComment(ctx context.Context, tx ports.Tx, ws int64, c githubmodel.IssueComment) error {
	return s.feed.Write(ctx, tx, ws, s.issueCommentWrite(ws,
		[]any{ws, c.ID, c.RepositoryID, c.IssueID, c.AuthorID, c.Body, c.HTMLURL, c.CreatedAt, c.Deleted,
			at(c.Version), c.Version.EventID}, c.ID))
}

// SetSubIssue implements githubmodel.IssueWriter.
func (s *Store) SetSubIssue(ctx context.Context, tx ports.Tx, ws int64, l githubmodel.SubIssue) error {
	return s.feed.Write(ctx, tx, ws, s.subIssueWrite(ws,
		[]any{ws, l.ParentIssueID, l.SubIssueID, l.Deleted, at(l.Version), l.Version.EventID}, l.ParentIssueID, l.SubIssueID))
}

// SetIssueDependency implements githubmodel.IssueWriter.
func (s *Store) SetIssueDependency(ctx context.Context, tx ports.Tx, ws int64, l githubmodel.IssueDependency) error {
	return s.feed.Write(ctx, tx, ws, s.issueDependencyWrite(ws,
		[]any{ws, l.BlockedIssueID, l.BlockingIssueID, l.Deleted, at(l.Version), l.Version.EventID},
		l.BlockedIssueID, l.BlockingIssueID))
}

// UpsertPullRequest implements githubmodel.PullRequestWriter.
func (s *Store) UpsertPullRequest(ctx context.Context, tx ports.Tx, ws int64, pr githubmodel.PullRequest) (githubmodel.PullRequestHead, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return githubmodel.PullRequestHead{}, err
	}
	args := []any{ws, pr.ID, pr.RepositoryID, pr.Number, pr.Title, pr.Body, pr.State, pr.Draft, pr.Locked, pr.Merged,
		pr.AuthorID, pr.HeadRef, pr.HeadSHA, pr.BaseRef, pr.BaseSHA, pr.MilestoneID, ids(pr.LabelIDs),
		ids(pr.AssigneeIDs), ids(pr.RequestedReviewerIDs), pr.HTMLURL, pr.CreatedAt, pr.ClosedAt, pr.MergedAt,
		at(pr.Version), pr.Version.EventID}
	if s.feed.On() {
		err = s.upsertPullRequestPublishing(ctx, ptx, tx, ws, args, pr.ID)
	} else {
		_, err = ptx.Exec(ctx, upsertPullRequest, args...)
		err = sqlkit.Interpret("upsert github pull request", err)
	}
	if err != nil {
		return githubmodel.PullRequestHead{}, err
	}
	head, _, err := scanHead(ptx.QueryRow(ctx, pullRequestHead, ws, pr.ID))
	return head, err
}

func scanHead(row pgx.Row) (githubmodel.PullRequestHead, bool, error) {
	var h githubmodel.PullRequestHead
	err := row.Scan(&h.ID, &h.RepositoryID, &h.HeadSHA, &h.State)
	if errors.Is(err, pgx.ErrNoRows) {
		return githubmodel.PullRequestHead{}, false, nil
	}
	if err != nil {
		return githubmodel.PullRequestHead{}, false, sqlkit.Interpret("read github pull request", err)
	}
	return h, true, nil
}

// PullRequestHead implements githubmodel.PullRequestReader.
func (s *Store) PullRequestHead(ctx context.Context, ws, id int64) (githubmodel.PullRequestHead, bool, error) {
	return scanHead(s.pool.QueryRow(ctx, pullRequestHead, ws, id))
}

// PullRequestsWithHead implements githubmodel.PullRequestReader.
func (s *Store) PullRequestsWithHead(ctx context.Context, ws, repositoryID int64, sha string) ([]int64, error) {
	rows, _ := s.pool.Query(ctx, pullRequestsWithHead, ws, repositoryID, sha)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return out, sqlkit.Interpret("read github pull requests of a head", err)
}

// UpsertReview implements githubmodel.PullRequestWriter.
func (s *Store) UpsertReview(ctx context.Context, tx ports.Tx, ws int64, r githubmodel.Review) error {
	return s.feed.Write(ctx, tx, ws, s.reviewWrite(ws,
		[]any{ws, r.ID, r.RepositoryID, r.PullRequestID, r.AuthorID, r.State, r.Body, r.CommitID, r.SubmittedAt,
			at(r.Version), r.Version.EventID}, r.ID))
}

// UpsertReviewComments implements githubmodel.PullRequestWriter.
func (s *Store) UpsertReviewComments(ctx context.Context, tx ports.Tx, ws int64, cs []githubmodel.ReviewComment) error {
	cs = sortedBy(cs, func(c githubmodel.ReviewComment) string { return idKey(c.ID) })
	writes := make([]mirrorkit.Write, 0, len(cs))
	for _, c := range cs {
		writes = append(writes, s.reviewCommentWrite(ws, []any{ws, c.ID, c.RepositoryID, c.PullRequestID, c.ReviewID,
			c.InReplyToID, c.AuthorID, c.Path, c.Line, c.Body, c.CommitID, c.CreatedAt, c.Deleted, at(c.Version),
			c.Version.EventID}, c.ID))
	}
	return s.feed.WriteAll(ctx, tx, ws, writes)
}

// UpsertReviewThread implements githubmodel.PullRequestWriter.
func (s *Store) UpsertReviewThread(ctx context.Context, tx ports.Tx, ws int64, t githubmodel.ReviewThread) error {
	return s.feed.Write(ctx, tx, ws, s.reviewThreadWrite(ws,
		[]any{ws, t.NodeID, t.RepositoryID, t.PullRequestID, t.Resolved, t.Path, ids(t.CommentIDs), at(t.Version),
			t.Version.EventID}, t.NodeID))
}

// UpsertCommitStatus implements githubmodel.CheckWriter.
func (s *Store) UpsertCommitStatus(ctx context.Context, tx ports.Tx, ws int64, st githubmodel.CommitStatus) error {
	return s.feed.Write(ctx, tx, ws, s.commitStatusWrite(ws,
		[]any{ws, st.ID, st.RepositoryID, st.SHA, st.Context, st.State, st.Description, st.TargetURL, st.CreatedAt,
			at(st.Version), st.Version.EventID}, st.ID))
}

// UpsertCheckSuite implements githubmodel.CheckWriter.
func (s *Store) UpsertCheckSuite(ctx context.Context, tx ports.Tx, ws int64, cs githubmodel.CheckSuite) error {
	return s.feed.Write(ctx, tx, ws, s.checkSuiteWrite(ws,
		[]any{ws, cs.ID, cs.RepositoryID, cs.HeadSHA, cs.HeadBranch, cs.Status, cs.Conclusion, cs.AppSlug, cs.CreatedAt,
			at(cs.Version), cs.Version.EventID}, cs.ID))
}

// UpsertCheckRuns implements githubmodel.CheckWriter.
func (s *Store) UpsertCheckRuns(ctx context.Context, tx ports.Tx, ws int64, runs []githubmodel.CheckRun) error {
	runs = sortedBy(runs, func(r githubmodel.CheckRun) string { return idKey(r.ID) })
	writes := make([]mirrorkit.Write, 0, len(runs))
	for _, r := range runs {
		writes = append(writes, s.checkRunWrite(ws, []any{ws, r.ID, r.RepositoryID, r.CheckSuiteID, r.HeadSHA, r.Name,
			r.Status, r.Conclusion, r.StartedAt, r.CompletedAt, at(r.Version), r.Version.EventID}, r.ID))
	}
	return s.feed.WriteAll(ctx, tx, ws, writes)
}

// RefreshPullRequestChecks implements githubmodel.CheckWriter.
func (s *Store) RefreshPullRequestChecks(ctx context.Context, tx ports.Tx, ws, pullRequestID, eventID int64) error {
	if s.feed.On() {
		return s.refreshChecksPublishing(ctx, tx, ws, pullRequestID, eventID)
	}
	return exec(ctx, tx, "refresh github pull request checks", refreshPullRequestChecks, ws, pullRequestID, eventID)
}

// SetRef implements githubmodel.PushWriter.
func (s *Store) SetRef(ctx context.Context, tx ports.Tx, ws int64, r githubmodel.Ref) error {
	return s.feed.Write(ctx, tx, ws, s.refWrite(ws,
		[]any{ws, r.RepositoryID, r.Ref, r.SHA, r.Deleted, at(r.Version), r.Version.EventID}, r.RepositoryID, r.Ref))
}

// UpsertCommit implements githubmodel.PushWriter.
func (s *Store) UpsertCommit(ctx context.Context, tx ports.Tx, ws int64, c githubmodel.Commit) error {
	return s.UpsertCommits(ctx, tx, ws, []githubmodel.Commit{c})
}

// UpsertCommits implements githubmodel.PushWriter: every upsert travels in one round trip, then
// each changed commit's change is published (mirrorkit.Feed.WriteIndependent).
func (s *Store) UpsertCommits(ctx context.Context, tx ports.Tx, ws int64, cs []githubmodel.Commit) error {
	writes := make([]mirrorkit.Write, len(cs))
	for i, c := range cs {
		args := []any{ws, c.RepositoryID, c.SHA, c.Message, c.AuthorName, c.AuthorEmail, c.AuthorLogin, c.CommitterName,
			c.CommitterEmail, c.CommittedAt, c.HTMLURL, at(c.Version), c.Version.EventID}
		writes[i] = s.commitWrite(ws, args, c.RepositoryID, c.SHA)
	}
	return s.feed.WriteIndependent(ctx, tx, ws, writes)
}

// timeOf converts a nullable, possibly infinite timestamp for a read model.
func timeOf(t pgtype.Timestamptz) *time.Time {
	if !t.Valid || t.InfinityModifier != pgtype.Finite {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

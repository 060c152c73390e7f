package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Change versions (CONTRACT.md "Change feed", docs/operations/change-feed.md "Versions"). The
// version of a mirror row is the tuple its upsert compares; the spec rebuilds the expected
// text from the stored columns in Go, apart from the SQL that builds it.

// storedVersion names, per entity (a change type without its verb), the mirror table, how the
// change's data keys its row, and the version's parts after (source_updated_at,
// source_event_id).
type storedVersion struct {
	table string
	keys  map[string]string // column → data member
	text  []string          // key columns compared as text (the rest as bigint)
	extra []string          // further version parts: "time:col" or "num:col"
	// noTime: the row has no source_updated_at (its version is its event id)
	noTime bool
}

var versionedEntities = map[string]storedVersion{
	"github.issue":                   {table: "github_issue", keys: map[string]string{"id": "id"}},
	"github.pull_request":            {table: "github_pull_request", keys: map[string]string{"id": "id"}},
	"github.label":                   {table: "github_label", keys: map[string]string{"id": "id"}},
	"github.milestone":               {table: "github_milestone", keys: map[string]string{"id": "id"}},
	"github.issue_comment":           {table: "github_issue_comment", keys: map[string]string{"id": "id"}},
	"github.review":                  {table: "github_review", keys: map[string]string{"id": "id"}},
	"github.review_comment":          {table: "github_review_comment", keys: map[string]string{"id": "id"}},
	"github.review_thread":           {table: "github_review_thread", keys: map[string]string{"node_id": "nodeId"}, text: []string{"node_id"}},
	"github.commit_status":           {table: "github_commit_status", keys: map[string]string{"id": "id"}},
	"github.check_suite":             {table: "github_check_suite", keys: map[string]string{"id": "id"}},
	"github.check_run":               {table: "github_check_run", keys: map[string]string{"id": "id"}},
	"github.member":                  {table: "github_organization_member", keys: map[string]string{"organization_id": "organizationId", "user_id": "userId"}},
	"github.collaborator":            {table: "github_repository_collaborator", keys: map[string]string{"repository_id": "repositoryId", "user_id": "userId"}},
	"github.team":                    {table: "github_team", keys: map[string]string{"id": "id"}},
	"github.team_member":             {table: "github_team_member", keys: map[string]string{"team_id": "teamId", "user_id": "userId"}},
	"github.team_repository":         {table: "github_team_repository", keys: map[string]string{"team_id": "teamId", "repository_id": "repositoryId"}},
	"github.repository":              {table: "github_repository", keys: map[string]string{"id": "id"}},
	"github.organization":            {table: "github_organization", keys: map[string]string{"id": "id"}},
	"github.ref":                     {table: "github_ref", keys: map[string]string{"repository_id": "repositoryId", "ref": "ref"}, text: []string{"ref"}},
	"github.sub_issue":               {table: "github_sub_issue", keys: map[string]string{"parent_issue_id": "parentIssueId", "sub_issue_id": "subIssueId"}},
	"github.issue_dependency":        {table: "github_issue_dependency", keys: map[string]string{"blocked_issue_id": "blockedIssueId", "blocking_issue_id": "blockingIssueId"}},
	"github.installation_repository": {table: "github_installation_repository", keys: map[string]string{"installation_id": "installationId", "repository_id": "repositoryId"}},
	"gitlab.merge_request": {table: "gitlab_merge_request", keys: map[string]string{"id": "id"},
		extra: []string{"time:readiness_updated_at", "num:readiness_event_id"}},
	"gitlab.project": {table: "gitlab_project", keys: map[string]string{"id": "id"},
		extra: []string{"time:monitor_updated_at", "num:monitor_event_id"}},
	"gitlab.group":       {table: "gitlab_group", keys: map[string]string{"id": "id"}},
	"gitlab.member":      {table: "gitlab_member", keys: map[string]string{"source_type": "sourceType", "source_id": "sourceId", "user_id": "userId"}, text: []string{"source_type"}},
	"gitlab.milestone":   {table: "gitlab_milestone", keys: map[string]string{"id": "id"}},
	"gitlab.issue":       {table: "gitlab_issue", keys: map[string]string{"id": "id"}},
	"gitlab.note":        {table: "gitlab_note", keys: map[string]string{"id": "id"}},
	"gitlab.pipeline":    {table: "gitlab_pipeline", keys: map[string]string{"id": "id"}},
	"gitlab.commit":      {table: "gitlab_commit", keys: map[string]string{"project_id": "projectId", "sha": "sha"}, text: []string{"sha"}, noTime: true},
	"outline.collection": {table: "outline_collection", keys: map[string]string{"id": "id"}, text: []string{"id"}},
	// A document's rule compares (source_updated_at, revision, source_event_id).
	"outline.document": {table: "outline_document", keys: map[string]string{"id": "id"}, text: []string{"id"}},
}

// The fixed-width parts of a version text.
func versionTime(t pgtype.Timestamptz) string {
	if t.InfinityModifier == pgtype.NegativeInfinity {
		return "0000-00-00T00:00:00.000000Z"
	}
	return t.Time.UTC().Format("2006-01-02T15:04:05.000000Z")
}

func versionNumber(n int64) string { return fmt.Sprintf("%019d", n) }

// slackStamp is a Slack timestamp in fixed width (seconds, microseconds).
func slackStamp(ts string) string {
	sec, frac, _ := strings.Cut(ts, ".")
	return strings.Repeat("0", 12-len(sec)) + sec + "." + frac + strings.Repeat("0", 6-len(frac))
}

// expectedVersion reads the stored row a change describes and builds its version text; ok
// false: no mirror row keys it (the row is gone, or the entity is not a mirror row).
func expectedVersion(ctx context.Context, q pgx.Tx, ws int64, typ, subject string, data map[string]any) (string, bool) {
	GinkgoHelper()
	entity := typ[:strings.LastIndex(typ, ".")]
	// Two entities are keyed by their subject: slack:message:<channel>:<ts>,
	// github:commit:<repository>:<sha>.
	key := strings.Split(subject, ":")
	if entity == "github.commit" {
		Expect(key).To(HaveLen(4))
		var (
			at pgtype.Timestamptz
			ev int64
		)
		Expect(q.QueryRow(ctx, `SELECT source_updated_at, source_event_id FROM github_commit
			WHERE workspace_id = $1 AND repository_id = $2::bigint AND sha = $3`, ws, key[2], key[3]).Scan(&at, &ev)).To(Succeed())
		return versionTime(at) + "/" + versionNumber(ev), true
	}
	if entity == "slack.message" {
		Expect(key).To(HaveLen(4))
		var (
			deleted bool
			ts      string
		)
		err := q.QueryRow(ctx, `SELECT deleted, coalesce(edited_ts, ts) FROM slack_message
			WHERE workspace_id = $1 AND channel_id = $2 AND ts = $3`, ws, key[2], key[3]).Scan(&deleted, &ts)
		if err == pgx.ErrNoRows {
			return "", false
		}
		Expect(err).NotTo(HaveOccurred())
		if deleted {
			return "1/" + slackStamp(ts), true
		}
		return "0/" + slackStamp(ts), true
	}
	sv, ok := versionedEntities[entity]
	if !ok {
		return "", false
	}
	cols := "source_event_id"
	if !sv.noTime {
		cols = "source_updated_at, source_event_id"
	}
	if entity == "outline.document" {
		cols = "source_updated_at, revision, source_event_id"
	}
	for _, e := range sv.extra {
		cols += ", " + strings.SplitN(e, ":", 2)[1]
	}
	where, args := "workspace_id = $1", []any{ws}
	for col, member := range sv.keys {
		v, present := data[member]
		if !present {
			return "", false // a deletion keyed otherwise
		}
		args = append(args, fmt.Sprint(v))
		cast := "::bigint"
		for _, t := range sv.text {
			if t == col {
				cast = ""
			}
		}
		if f, isNum := v.(float64); isNum {
			args[len(args)-1] = fmt.Sprintf("%d", int64(f))
		}
		where += fmt.Sprintf(" AND %s = $%d%s", col, len(args), cast)
	}
	rows, err := q.Query(ctx, "SELECT "+cols+" FROM "+sv.table+" WHERE "+where, args...)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	if !rows.Next() {
		Expect(rows.Err()).NotTo(HaveOccurred())
		return "", false
	}
	values, err := rows.Values()
	Expect(err).NotTo(HaveOccurred())
	parts := []string{}
	for _, v := range values {
		switch x := v.(type) {
		case time.Time:
			parts = append(parts, versionTime(pgtype.Timestamptz{Time: x, Valid: true}))
		case pgtype.InfinityModifier:
			Expect(x).To(Equal(pgtype.NegativeInfinity))
			parts = append(parts, versionTime(pgtype.Timestamptz{InfinityModifier: x, Valid: true}))
		case int64:
			parts = append(parts, versionNumber(x))
		default:
			Fail(fmt.Sprintf("a version part of %s is a %T", sv.table, v))
		}
	}
	return strings.Join(parts, "/"), true
}

// versionCheckedFeed is the feed as the stores publish to it, checking each change as it is
// published, in the write's own transaction: its data carries a version, and for a mirror row
// that version is the row's stored version after the write (not the incoming one).
type versionCheckedFeed struct {
	*changefeed.Store
}

// versionChecked wraps feed for the stores of this suite's specs (they drive the real handlers
// and stores of every provider with the providers' documented payloads).
func versionChecked(feed *changefeed.Store) versionCheckedFeed { return versionCheckedFeed{feed} }

// versionsChecked counts the checked changes per entity (the suite's coverage).
var versionsChecked sync.Map

func (f versionCheckedFeed) Publish(ctx context.Context, tx ports.Tx, ws int64, c change.Change) error {
	GinkgoHelper()
	var data map[string]any
	Expect(json.Unmarshal(c.Data(), &data)).To(Succeed())
	got, ok := data["version"].(string)
	if !ok && (strings.HasPrefix(c.Type().String(), "slack.channel.") || strings.HasPrefix(c.Type().String(), "connection.")) {
		return f.Store.Publish(ctx, tx, ws, c) // not a mirror version: the feed stamps its clock
	}
	Expect(ok).To(BeTrue(), "%s %s carries its entity's version", c.Type(), c.Data())
	ptx, err := sqlkit.PgxTx(tx)
	Expect(err).NotTo(HaveOccurred())
	if want, ok := expectedVersion(ctx, ptx, ws, c.Type().String(), c.Subject(), data); ok {
		Expect(got).To(Equal(want), "%s %s: the version is the stored row's after the write", c.Type(), c.Data())
		n, _ := versionsChecked.LoadOrStore(c.Type().String(), new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	return f.Store.Publish(ctx, tx, ws, c)
}

package ports

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// DeadLetter is one DEAD row as an operator inspects it: the delivery with its stored payload
// and headers (which never hold a routing credential: admission strips them).
type DeadLetter struct {
	Delivery inbox.Delivery
	Payload  json.RawMessage
	Headers  map[string]string
}

// ScopeBacklog is the number of QUEUED rows of one scope.
type ScopeBacklog struct {
	ScopeKey string
	Queued   int64
}

// InboxOverview is one workspace's inbox at a glance.
type InboxOverview struct {
	Counts          map[inbox.State]int64 // every state, 0 when it has no rows
	OldestQueuedAge time.Duration         // since the oldest QUEUED row was received; 0 when none
	BusiestScopes   []ScopeBacklog        // most QUEUED rows first
	// Estimated lists the states whose count is an estimate rather than exact: DONE, once the
	// workspace retains more DONE rows than the overview counts one by one.
	Estimated []inbox.State
}

// MinuteActivity is what a workspace's claimers finished in one minute: rows handled (DONE)
// and rows that failed for good (DEAD).
type MinuteActivity struct {
	Minute  time.Time
	Handled int64
	Failed  int64
}

// Activity is a workspace's last hour, per minute (minutes without a finished row left out).
// Capped is set when the hour held more finished rows than the reader counts one by one: the
// figures are then a lower bound.
type Activity struct {
	Minutes []MinuteActivity
	Capped  bool
}

// DeadLetterFilter narrows a dead-letter list; an empty field matches every row.
type DeadLetterFilter struct {
	Provider   string // the provider label, GITHUB, GITLAB, SLACK, OUTLINE
	EventType  string
	ErrorClass string
}

// DeadLetterReader reads the inbox for operators. Every method binds the workspace:
// workspaceID 0 means the installation rows (NULL workspace) and nothing else, any other id
// that workspace's rows only, so a row of another workspace is never found.
type DeadLetterReader interface {
	// ListDead pages the DEAD rows that match filter, newest first (end time, then id), and
	// counts them.
	ListDead(ctx context.Context, workspaceID int64, filter DeadLetterFilter, page PageRequest) (items []inbox.Delivery, total int, err error)
	// DeadLetter reads one DEAD row. Errors: ErrNotFound (no such DEAD row there).
	DeadLetter(ctx context.Context, workspaceID, id int64) (DeadLetter, error)
	// Activity counts the rows that ended (DONE or DEAD) in the hour before the database's now,
	// per minute, counting at most limit rows.
	Activity(ctx context.Context, workspaceID int64, limit int) (Activity, error)
	// Overview counts rows by state and finds the oldest QUEUED row and the busiest scopes
	// (at most busiest of them).
	Overview(ctx context.Context, workspaceID int64, busiest int) (InboxOverview, error)
}

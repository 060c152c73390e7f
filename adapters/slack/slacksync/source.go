// Package slacksync is Slack's sync source (ports.SyncSource, run by application/backfill): a
// channel subscription's backfill pages the channel's history (conversations.history, 100
// messages a page, following response_metadata.next_cursor) with the bot token of the
// workspace's connection of the team (the token the handlers' Web API calls use), and writes
// each page through the mirror store's message methods under the message handlers' rules
// (slackhandlers.HistoryPage): only a channel whose registry row has consent is mirrored, so a
// channel without consent is done at once with nothing read or written.
//
// Slack keeps its own uninstall erase (the "slack.connection.uninstall" step), so it has no
// teardown job. The cursor is "history:<Slack cursor>" ("history:" the first page), and
// "history:done" after the last page.
package slacksync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.SyncSource = (*Source)(nil)

// PageSize is the limit of one conversations.history call.
const PageSize = 100

// Reader is the Web API's side of a backfill (*webapi.Client). Errors: *inbox.ProviderError.
type Reader interface {
	ConversationsHistory(ctx context.Context, workspaceID int64, teamID, channelID, cursor string, limit int) (json.RawMessage, error)
}

// Store is the mirror store a page writes through, and the registry read that skips a channel
// without consent before anything is read from Slack.
type Store interface {
	slackhandlers.HistoryWriter
	Channel(ctx context.Context, ws int64, channelID string) (slackhandlers.Channel, bool, error)
}

// Source reads Slack channel history for sync jobs.
type Source struct {
	reader Reader
	store  Store
}

// New makes the source.
func New(reader Reader, store Store) (*Source, error) {
	if reader == nil || store == nil {
		return nil, errors.New("slack sync: a Web API reader and a mirror store are required")
	}
	return &Source{reader: reader, store: store}, nil
}

// Provider implements ports.SyncSource.
func (s *Source) Provider() provider.Provider { return slack.Provider }

const (
	prefix = "history:"
	done   = prefix + "done"
)

func refused(op, why string) error {
	return &inbox.ProviderError{Provider: "slack", Op: op, Kind: inbox.ProviderRefused, Err: errors.New(why)}
}

// NextPage implements ports.SyncSource.
func (s *Source) NextPage(ctx context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error) {
	if job.Kind == syncjob.Teardown {
		// Not started for Slack (its uninstall step erases the team's data); nothing to do.
		return ports.SyncPage{Done: true}, nil
	}
	if job.ResourceType != slack.ResourceChannel {
		return ports.SyncPage{}, refused("sync "+job.ResourceType, "only channels are backfilled")
	}
	if job.ResourceID == "" || job.SourceKey == "" {
		return ports.SyncPage{}, refused("sync channel", "a channel backfill needs the channel and the team")
	}
	slackCursor, err := parseCursor(cursor)
	if err != nil {
		return ports.SyncPage{}, err
	}
	// The handlers' rule: messages are stored only while the registry row has consent. Checked
	// here so nothing is read for a channel without it, and again under the row's shared lock
	// when the page is written.
	c, found, err := s.store.Channel(ctx, job.WorkspaceID, job.ResourceID)
	if err != nil {
		return ports.SyncPage{}, err
	}
	if !found || !c.Consent.StoresMessages() {
		return ports.SyncPage{Next: done, Done: true}, nil
	}
	body, err := s.reader.ConversationsHistory(ctx, job.WorkspaceID, job.SourceKey, job.ResourceID, slackCursor, PageSize)
	if err != nil {
		return ports.SyncPage{}, err
	}
	page, err := slackhandlers.DecodeHistory(job.SourceKey, job.ResourceID, body)
	if err != nil {
		// A provider answer without the documented shape: retried within the budget; the
		// detail is not carried (it could quote a message).
		return ports.SyncPage{}, &inbox.ProviderError{Provider: "slack", Op: "POST conversations.history",
			Kind: inbox.ProviderUnreadable, Status: 200, Err: errors.New("page does not have the documented shape")}
	}
	out := ports.SyncPage{Items: page.Items(), Write: func(ctx context.Context, tx ports.Tx) error {
		return page.Write(ctx, tx, s.store, job.WorkspaceID)
	}}
	if page.Next == "" {
		out.Next, out.Done = done, true
	} else {
		out.Next = prefix + page.Next
	}
	return out, nil
}

// parseCursor reads the job's cursor: "" and "history:" are the first page.
func parseCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	c, ok := strings.CutPrefix(cursor, prefix)
	if !ok || c == "done" {
		return "", fmt.Errorf("slack sync: cursor %q is not a history cursor", cursor)
	}
	return c, nil
}

// Package slacksync is Slack's sync source (contract.SyncSource, run by application/backfill): a
// channel subscription's backfill pages the channel's history (conversations.history, 100
// messages a page, following response_metadata.next_cursor) and, after each history page, the
// replies of every thread that page lists (conversations.replies of each parent, following its
// own cursor), with the bot token of the workspace's connection of the team (the token the
// handlers' Web API calls use), and writes each page through the mirror store's message methods
// under the message handlers' rules (slackhandlers.HistoryPage): only a channel whose registry
// row has consent is mirrored, so a channel without consent is done at once with nothing read
// or written.
//
// Slack keeps its own uninstall erase (the "slack.connection.uninstall" step), so it has no
// teardown job. The cursor is one of
//
//	history:<Slack cursor>   the next history page ("history:" or "" the first)
//	history:done             after the last page
//	replies:<parent ts>,…|<Slack cursor>|<history cursor>
//
// The replies form says where a history page's threads stand: the parents still to read (the
// first is being read, at its Slack cursor, "" its first page) and the history cursor the job
// goes on with after the last of them. Only one history page's parents are carried, so memory
// stays bounded by a page, and a job resumes inside a thread from its committed cursor.
package slacksync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.SyncSource = (*Source)(nil)

// PageSize is the limit of one conversations.history or conversations.replies call (Slack may
// answer fewer; the cursor goes on from what it answered).
const PageSize = 100

// Reader is the Web API's side of a backfill (*webapi.Client). Errors: *inbox.ProviderError.
type Reader interface {
	ConversationsHistory(ctx context.Context, workspaceID int64, teamID, channelID, cursor string, limit int) (json.RawMessage, error)
	ConversationsReplies(ctx context.Context, workspaceID int64, teamID, channelID, parentTS, cursor string, limit int) (json.RawMessage, error)
}

// Store is the mirror store a page writes through, and the registry read that skips a channel
// without consent before anything is read from Slack.
type Store interface {
	slackhandlers.HistoryWriter
	Channel(ctx context.Context, ws int64, channelID string) (slackmodel.Channel, bool, error)
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

// Provider implements contract.SyncSource.
func (s *Source) Provider() provider.Provider { return slack.Provider }

const (
	prefix        = "history:"
	done          = prefix + "done"
	repliesPrefix = "replies:"
)

func refused(op, why string) error {
	return &inbox.ProviderError{Provider: "slack", Op: op, Kind: inbox.ProviderRefused, Err: errors.New(why)}
}

// unreadable is a provider answer without the documented shape: retried within the budget; the
// detail is not carried (it could quote a message).
func unreadable(method string) error {
	return &inbox.ProviderError{Provider: "slack", Op: "POST " + method, Kind: inbox.ProviderUnreadable, Status: 200,
		Err: errors.New("page does not have the documented shape")}
}

// NextPage implements contract.SyncSource.
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
	pos, err := parseCursor(cursor)
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
	if len(pos.threads) > 0 {
		return s.repliesPage(ctx, job, pos)
	}
	body, err := s.reader.ConversationsHistory(ctx, job.WorkspaceID, job.SourceKey, job.ResourceID, pos.history, PageSize)
	if err != nil {
		return ports.SyncPage{}, err
	}
	page, err := slackhandlers.DecodeHistory(job.SourceKey, job.ResourceID, body)
	if err != nil {
		return ports.SyncPage{}, unreadable("conversations.history")
	}
	after := position{history: page.Next, historyDone: page.Next == ""}
	if len(page.Threads) > 0 {
		// The page's threads are read next, before the following history page.
		after = position{threads: page.Threads, history: after.history, historyDone: after.historyDone}
	}
	return s.pageOf(job, page, after), nil
}

// repliesPage reads the next replies page of the first thread pos lists.
func (s *Source) repliesPage(ctx context.Context, job ports.SyncJob, pos position) (ports.SyncPage, error) {
	parent := pos.threads[0]
	body, err := s.reader.ConversationsReplies(ctx, job.WorkspaceID, job.SourceKey, job.ResourceID, parent, pos.replies, PageSize)
	var apiErr *webapi.APIError
	if errors.As(err, &apiErr) && apiErr.Code == webapi.ThreadNotFound {
		// The parent was deleted since its history page was read: the thread has nothing left
		// to read, and the job goes on with the next one.
		return ports.SyncPage{Next: pos.nextThread().String(), Done: pos.nextThread().finished()}, nil
	}
	if err != nil {
		return ports.SyncPage{}, err
	}
	page, err := slackhandlers.DecodeReplies(job.SourceKey, job.ResourceID, parent, body)
	if err != nil {
		return ports.SyncPage{}, unreadable("conversations.replies")
	}
	after := pos.nextThread()
	if page.Next != "" {
		after = pos
		after.replies = page.Next
	}
	return s.pageOf(job, page, after), nil
}

// pageOf is the sync page that writes page and leaves the job at after.
func (s *Source) pageOf(job ports.SyncJob, page slackhandlers.HistoryPage, after position) ports.SyncPage {
	return ports.SyncPage{
		Items: page.Items(), Next: after.String(), Done: after.finished(),
		Lock: func(ctx context.Context, tx ports.Tx) error {
			return page.Lock(ctx, tx, s.store, job.WorkspaceID)
		},
		Write: func(ctx context.Context, tx ports.Tx) error {
			return page.Write(ctx, tx, s.store, job.WorkspaceID)
		},
	}
}

// position is where a channel's backfill stands: the history cursor (historyDone: no history
// page is left) and, while a history page's threads are read, the parents still to read and
// the first one's replies cursor.
type position struct {
	history     string
	historyDone bool
	threads     []string
	replies     string
}

// nextThread is the position after the first listed thread's last replies page.
func (p position) nextThread() position {
	return position{history: p.history, historyDone: p.historyDone, threads: p.threads[1:]}
}

// finished reports that nothing is left to read.
func (p position) finished() bool { return p.historyDone && len(p.threads) == 0 }

// historyCursor is the history part of the job cursor.
func (p position) historyCursor() string {
	if p.historyDone {
		return done
	}
	return prefix + p.history
}

// String is the job cursor of p.
func (p position) String() string {
	if len(p.threads) == 0 {
		return p.historyCursor()
	}
	return repliesPrefix + strings.Join(p.threads, ",") + "|" + p.replies + "|" + p.historyCursor()
}

// parseCursor reads the job's cursor: "" and "history:" are the first page; "history:done" is
// not a page to read.
func parseCursor(cursor string) (position, error) {
	rest, ok := strings.CutPrefix(cursor, repliesPrefix)
	if !ok {
		return parseHistory(cursor)
	}
	parts := strings.SplitN(rest, "|", 3)
	if len(parts) == 3 {
		threads := strings.Split(parts[0], ",")
		var (
			h   position
			err error
		)
		if parts[2] == done {
			h.historyDone = true
		} else {
			h, err = parseHistory(parts[2])
		}
		if err == nil && !slices.Contains(threads, "") {
			h.threads, h.replies = threads, parts[1]
			return h, nil
		}
	}
	return position{}, fmt.Errorf("slack sync: cursor %q is not a replies cursor", cursor)
}

// parseHistory reads a history cursor ("" the first page).
func parseHistory(cursor string) (position, error) {
	if cursor == "" {
		return position{}, nil
	}
	c, ok := strings.CutPrefix(cursor, prefix)
	if !ok || c == "done" {
		return position{}, fmt.Errorf("slack sync: cursor %q is not a history cursor", cursor)
	}
	return position{history: c}, nil
}

// Package slackread serves the Slack mirror to the members of a workspace:
//
//	GET /api/workspaces/{ws}/slack/channels
//	GET /api/workspaces/{ws}/slack/channels/{id}/messages
//
// Lists are paged like every list of the API; every query binds the workspace, so a channel of
// another workspace is 404. Only channel messages are served: mentor direct messages are not.
// Who may call it: every member of the workspace and the instance administrator (readkit).
package slackread

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store reads the Slack mirror; adapters/slack/slackmirror.Store is one.
type Store interface {
	// ListChannels errors: database failures.
	ListChannels(ctx context.Context, ws int64, page ports.PageRequest) ([]slackmodel.Channel, int, error)
	// ListMessages errors: ports.ErrNotFound for a channel the workspace does not have.
	ListMessages(ctx context.Context, ws int64, channelID string, page ports.PageRequest) ([]slackmodel.MessageView, int, error)
}

// Config is what the routes need.
type Config = readkit.Config[Store]

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	return readkit.Mount(r, "slackread", "/slack", cfg, func(g *readkit.Group) {
		readkit.List(g, "/channels", cfg.Store.ListChannels, toChannelJSON)
		// The messages of channel :id; a channel the workspace does not have is 404.
		readkit.ListOfKey(g, "/channels/:id/messages", cfg.Store.ListMessages, toMessageJSON)
	})
}

type channelJSON struct {
	ID      string `json:"id"`
	TeamID  string `json:"teamId"`
	Name    string `json:"name"`
	Consent string `json:"consent"`
}

func toChannelJSON(ch slackmodel.Channel) channelJSON {
	return channelJSON{ID: ch.ID, TeamID: ch.TeamID, Name: ch.Name, Consent: ch.Consent.String()}
}

type messageJSON struct {
	TS       string  `json:"ts"`
	ThreadTS *string `json:"threadTs"`
	UserID   *string `json:"userId" person:"id"`
	Text     string  `json:"text"`
	PostedAt *string `json:"postedAt"`
	EditedTS *string `json:"editedTs"`
}

func toMessageJSON(m slackmodel.MessageView) messageJSON {
	return messageJSON{
		TS: m.TS, ThreadTS: readkit.Optional(m.ThreadTS), UserID: readkit.Optional(m.UserID), Text: m.Text,
		PostedAt: readkit.Timestamp(m.PostedAt), EditedTS: readkit.Optional(m.EditedTS),
	}
}

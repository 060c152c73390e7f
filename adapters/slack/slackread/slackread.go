// Package slackread serves the Slack mirror to the members of a workspace:
//
//	GET /api/workspaces/{ws}/slack/channels
//	GET /api/workspaces/{ws}/slack/channels/{id}/messages
//
// Lists are paged like every list of the API; every query binds the workspace, so a channel of
// another workspace is 404. Only channel messages are served: mentor direct messages are not.
package slackread

import (
	"context"
	"errors"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
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

type api struct {
	store Store
	log   ports.Logger
}

// Config is what the routes need.
type Config struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Store   Store
	// Log receives the cause of 500 answers (nil: not logged).
	Log ports.Logger
}

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	if cfg.Auth == nil || cfg.Members == nil || cfg.Store == nil {
		return errors.New("slackread: an authenticator, a member directory and a store are required")
	}
	a := api{store: cfg.Store, log: cfg.Log}
	g := managementapi.MemberRoutes(r, cfg.Auth, cfg.Members, "/slack")
	g.GET("/channels", a.channels)
	g.GET("/channels/:id/messages", a.messages)
	return nil
}

func (a api) fail(c *gin.Context, err error) {
	httperr.WriteLogged(c, err, a.log, "slack mirror read failed")
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

func (a api) channels(c *gin.Context) {
	if err := managementapi.WriteList(c, managementapi.MemberWorkspaceOf(c).ID, a.store.ListChannels, toChannelJSON); err != nil {
		a.fail(c, err)
	}
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
		TS: m.TS, ThreadTS: optional(m.ThreadTS), UserID: optional(m.UserID), Text: m.Text,
		PostedAt: timestamp(m.PostedAt), EditedTS: optional(m.EditedTS),
	}
}

// messages lists the messages of channel :id; a channel the workspace does not have is 404.
func (a api) messages(c *gin.Context) {
	channel := c.Param("id")
	read := func(ctx context.Context, ws int64, page ports.PageRequest) ([]slackmodel.MessageView, int, error) {
		return a.store.ListMessages(ctx, ws, channel, page)
	}
	if err := managementapi.WriteList(c, managementapi.MemberWorkspaceOf(c).ID, read, toMessageJSON); err != nil {
		a.fail(c, err)
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

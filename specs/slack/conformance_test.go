package slack_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/providersuite"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// signingSecret is the app's signing secret in the conformance suite.
const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// conformanceRegistry holds the conformance suite's Slack handlers (an uninstall is a delivery).
var conformanceRegistry *consumer.Registry

// teamOf is the Slack team of workspace ws in the conformance suite: one live connection per
// team, so each workspace has its own.
func teamOf(ws int64) string { return fmt.Sprintf("T0WS%05d", ws) }

var _ = providersuite.Run(providersuite.Fixture{
	Name:    "Slack",
	Package: "slack",
	Harness: harness,
	Webhook: support.Must(slack.NewWebhook(slack.Config{SigningSecret: []byte(signingSecret)})),
	Reasons: slack.Module{},
	Request: func(body []byte, signed bool) ports.Request {
		now := time.Now()
		sig := providersuite.Sign([]byte(signingSecret), signed, []byte("v0:"+providersuite.Unix(now.Unix())+":"), body)
		return ports.Request{Body: body, ReceivedAt: now, Headers: providersuite.Headers(
			"X-Slack-Request-Timestamp", providersuite.Unix(now.Unix()), "X-Slack-Signature", "v0="+hex.EncodeToString(sig))}
	},
	Body:   []byte(channelMessage("1700000000.000100", slackPerson, "my own words")),
	Source: "https://slack.com",
	Connect: func(ctx context.Context, pool *pgxpool.Pool, ws int64) int64 {
		id := providersuite.Connection(ctx, pool, ws, "SLACK", "SLACK", "https://slack.com", teamOf(ws), `{"teamId":"`+teamOf(ws)+`"}`)
		registeredChannel(ctx, ws, teamOf(ws), channel, "general", "GRANTED")
		return id
	},
	Handlers: func(pool *pgxpool.Pool, inbox ports.DeliveryInbox, reg *consumer.Registry, pub ports.ChangePublisher) contract.PersonDataStore {
		mirror, err := slackmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(mirror.PublishChanges(pub, slackread.Views{})).To(Succeed())
		Expect(slackhandlers.Register(reg, slackhandlers.Deps{Inbox: inbox, Store: mirror, Notifier: &fakeNotifier{}, Log: support.Logger{}})).To(Succeed())
		conformanceRegistry = reg
		return mirror
	},
	PersonFields: slackread.PersonFields,
	Events: func(ws int64, marker string) []providersuite.Event {
		team := teamOf(ws)
		return []providersuite.Event{
			{Type: "message", Subject: "slack:channel:" + channel, Payload: callback(team, `{"type":"message","channel":"`+channel+
				`","channel_type":"channel","user":"`+slackPerson+`","text":"`+marker+`","ts":"1700000000.000100"}`)},
			{Type: "message", Subject: "slack:team:" + team, Payload: callback(team, `{"type":"message","channel":"`+dm+
				`","channel_type":"im","user":"`+slackPerson+`","text":"help me","ts":"1700000003.000003","client_msg_id":"8f1c"}`)},
		}
	},
	Person: providersuite.Person{ID: slackPerson, Traces: []string{slackPerson, "help me"}},
	Teardown: func(ctx context.Context, pool *pgxpool.Pool, ws, _ int64) {
		d := support.LeasedEvent(ctx, pool, ws, slack.Provider, "app_uninstalled", "slack:team:"+teamOf(ws),
			callback(teamOf(ws), `{"type":"app_uninstalled"}`))
		Expect(d.Handle(ctx, conformanceRegistry)).To(Succeed())
	},
	ReadPaths: func(slug string) []string {
		return []string{"/api/workspaces/" + slug + "/slack/channels", "/api/workspaces/" + slug + "/slack/channels/" + channel + "/messages"}
	},
})

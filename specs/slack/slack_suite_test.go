package slack_test

import (
	"context"
	"testing"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestSlack(t *testing.T) {
	support.RunSpecs(t, "Slack handlers, mirror and read API")
}

var (
	store    *slackmirror.Store
	faulty   *faultyStore
	notifier *fakeNotifier
)

// harness runs the Slack handlers on the real inbox and mirror store (with faults injected by
// faulty) and a recording notifier, and the Slack read API.
var harness = support.NewHarness(support.HarnessConfig{
	Provider: slack.Provider,
	Setup: func(ctx context.Context, h *support.Harness) {
		var err error
		store, err = slackmirror.New(h.Pool)
		Expect(err).NotTo(HaveOccurred())
		faulty = &faultyStore{Store: store}
		notifier = &fakeNotifier{}
		Expect(slackhandlers.Register(h.Registry, slackhandlers.Deps{Inbox: h.Inbox, Store: faulty, Notifier: notifier, Log: support.Logger{}})).To(Succeed())
		h.ServeRead(func(engine *gin.Engine) error {
			return slackread.Register(engine, slackread.Config{Auth: h.Management, Members: h.Workspaces, Store: store, Log: support.Logger{}})
		})
	},
	Reset: func() {
		faulty.reset()
		notifier.reset()
	},
})

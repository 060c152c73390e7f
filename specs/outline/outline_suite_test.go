package outline_test

import (
	"context"
	"testing"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestOutline(t *testing.T) {
	support.RunSpecs(t, "Outline handlers, mirror and read API")
}

var (
	store  *outlinemirror.Store
	faulty *faultyStore
)

// harness runs the Outline handlers on the real inbox and mirror store (with faults injected by
// faulty), and the Outline read API.
var harness = support.NewHarness(support.HarnessConfig{
	Provider: outline.Provider,
	Setup: func(ctx context.Context, h *support.Harness) {
		var err error
		store, err = outlinemirror.New(h.Pool)
		Expect(err).NotTo(HaveOccurred())
		faulty = &faultyStore{Store: store}
		Expect(outlinehandlers.Register(h.Registry, outlinehandlers.Deps{Inbox: h.Inbox, Store: faulty})).To(Succeed())
		h.ServeRead(func(engine *gin.Engine) error {
			return outlineread.Register(engine, outlineread.Config{Auth: h.Management, Members: h.Workspaces, Store: store, Log: support.Logger{}})
		})
	},
	Reset: func() { faulty.reset() },
})

package gitlab_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
)

func TestGitLab(t *testing.T) { webhooktest.RunSuite(t, "GitLab webhook adapter Suite") }

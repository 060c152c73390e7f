package gitlabread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
)

var _ gitlabmirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the merge
// request exactly as this API shows it.
type Views struct{}

func (Views) MergeRequest(m gitlabhandlers.MergeRequestView) any { return toMergeRequestJSON(m) }

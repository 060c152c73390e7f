package gitlabread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
)

var _ gitlabmirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the merge
// request exactly as this API shows it.
type Views struct{}

func (Views) MergeRequest(m gitlabmodel.MergeRequestView) any { return toMergeRequestJSON(m) }

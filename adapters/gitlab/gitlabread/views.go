package gitlabread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ gitlabmirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the merge
// request exactly as this API shows it.
type Views struct{}

func (Views) MergeRequest(m gitlabmodel.MergeRequestView) any { return toMergeRequestJSON(m) }

// PersonFields is GitLab's person-data declaration (gitlab.PersonFields) with the members of
// every view this read API answers with and publishes (readkit.PersonFields). Errors: a
// malformed person tag.
func PersonFields() (contract.PersonFields, error) {
	return readkit.PersonFields(gitlab.PersonFields(), projectJSON{}, mergeRequestJSON{}, groupJSON{}, memberJSON{},
		milestoneJSON{}, issueJSON{}, noteJSON{}, pipelineJSON{}, commitJSON{})
}

package githubread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ githubmirror.Views = Views{}

// Views is the read API's JSON shaping of mirrored rows, for the change feed: a change's data
// is the entity exactly as this API shows it.
type Views struct{}

func (Views) Issue(r githubmirror.IssueRow) any             { return toIssueJSON(r) }
func (Views) PullRequest(r githubmirror.PullRequestRow) any { return toPullJSON(r) }
func (Views) Commit(r githubmirror.CommitRow) any           { return toCommitJSON(r) }

// PersonFields is GitHub's person-data declaration (github.PersonFields) with the members of
// every view this read API answers with and publishes (readkit.PersonFields). Errors: a
// malformed person tag.
func PersonFields() (contract.PersonFields, error) {
	return readkit.PersonFields(github.PersonFields(), repositoryJSON{}, issueJSON{}, pullJSON{}, commitJSON{}, labelJSON{},
		milestoneJSON{}, issueCommentJSON{}, reviewJSON{}, reviewCommentJSON{}, reviewThreadJSON{}, commitStatusJSON{},
		checkSuiteJSON{}, checkRunJSON{}, memberJSON{}, collaboratorJSON{}, teamJSON{}, teamMemberJSON{},
		teamRepositoryJSON{}, organizationJSON{}, refJSON{}, subIssueJSON{}, issueDependencyJSON{},
		installationRepositoryJSON{})
}

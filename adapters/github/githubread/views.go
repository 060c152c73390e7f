package githubread

import "github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"

var _ githubmirror.Views = Views{}

// Views is the read API's JSON shaping of mirrored rows, for the change feed: a change's data
// is the entity exactly as this API shows it.
type Views struct{}

func (Views) Issue(r githubmirror.IssueRow) any             { return toIssueJSON(r) }
func (Views) PullRequest(r githubmirror.PullRequestRow) any { return toPullJSON(r) }
func (Views) Commit(r githubmirror.CommitRow) any           { return toCommitJSON(r) }

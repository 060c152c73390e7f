package github

// Who may receive what through a PAT (docs/admission.md, "Who may receive what"). A GITHUB_PAT workspace receives a repository's deliveries through the App installation
// that covers it, because its token was verified to read the repository. Reading a repository
// shows its issues, pull requests, commits, labels, milestones, releases and checks; it does not
// show who was granted access (member, team_add, membership, team), what the installation,
// its deploy keys or branch protection are, or its security alerts. Those deliveries go only to
// the App's own workspace. The rule is an allow-list: an event type GitHub adds later stays with
// the App until it is listed here.
var readerVisible = map[string]bool{
	"issues": true, "issue_comment": true, "sub_issues": true, "issue_dependencies": true,
	"pull_request": true, "pull_request_review": true, "pull_request_review_comment": true,
	"pull_request_review_thread": true, "push": true, "create": true, "delete": true, "label": true,
	"milestone": true, "release": true, "status": true, "check_run": true, "check_suite": true,
	"commit_comment": true,
}

// ReaderVisible reports whether any reader of a repository sees what a delivery of eventType
// tells on GitHub, so that a workspace whose PAT reads the repository may receive it.
func ReaderVisible(eventType string) bool { return readerVisible[eventType] }

package githubhandlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ghTime is a GitHub timestamp. Webhooks write most as RFC 3339 strings, but some objects (a
// push payload's repository, an installation) carry Unix seconds; null is no time.
type ghTime struct {
	t     time.Time
	valid bool
}

func (g *ghTime) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	switch {
	case s == "null" || s == `""`:
		*g = ghTime{}
		return nil
	case strings.HasPrefix(s, `"`):
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339, str)
		if err != nil {
			return fmt.Errorf("timestamp %q: %w", str, err)
		}
		*g = ghTime{t: t.UTC(), valid: true}
		return nil
	default:
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("timestamp %s is neither RFC 3339 nor Unix seconds", s)
		}
		*g = ghTime{t: time.Unix(secs, 0).UTC(), valid: true}
		return nil
	}
}

// ptr is the time or nil.
func (g ghTime) ptr() *time.Time {
	if !g.valid {
		return nil
	}
	t := g.t
	return &t
}

// or is the time, or the other one when this one is missing.
func (g ghTime) or(other ghTime) ghTime {
	if g.valid {
		return g
	}
	return other
}

type ghUser struct {
	ID        int64  `json:"id"`
	Login     string `json:"login"`
	Type      string `json:"type"`
	AvatarURL string `json:"avatar_url"`
}

type ghOrganization struct {
	ID          int64   `json:"id"`
	Login       string  `json:"login"`
	Description *string `json:"description"`
}

type ghRepository struct {
	ID            int64    `json:"id"`
	Name          string   `json:"name"`
	FullName      string   `json:"full_name"`
	Owner         *ghUser  `json:"owner"`
	Private       bool     `json:"private"`
	Visibility    string   `json:"visibility"`
	DefaultBranch string   `json:"default_branch"`
	Archived      bool     `json:"archived"`
	Fork          bool     `json:"fork"`
	Description   *string  `json:"description"`
	HTMLURL       string   `json:"html_url"`
	CreatedAt     ghTime   `json:"created_at"`
	UpdatedAt     ghTime   `json:"updated_at"`
	PushedAt      ghTime   `json:"pushed_at"`
	Topics        []string `json:"topics"`
}

type ghLabel struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Description *string `json:"description"`
	Default     bool    `json:"default"`
}

type ghMilestone struct {
	ID          int64   `json:"id"`
	Number      int     `json:"number"`
	Title       string  `json:"title"`
	Description *string `json:"description"`
	State       string  `json:"state"`
	Creator     *ghUser `json:"creator"`
	DueOn       ghTime  `json:"due_on"`
	ClosedAt    ghTime  `json:"closed_at"`
	CreatedAt   ghTime  `json:"created_at"`
	UpdatedAt   ghTime  `json:"updated_at"`
}

type ghIssue struct {
	ID          int64           `json:"id"`
	Number      int             `json:"number"`
	Title       string          `json:"title"`
	Body        *string         `json:"body"`
	State       string          `json:"state"`
	StateReason *string         `json:"state_reason"`
	Locked      bool            `json:"locked"`
	User        *ghUser         `json:"user"`
	Labels      []ghLabel       `json:"labels"`
	Assignees   []ghUser        `json:"assignees"`
	Milestone   *ghMilestone    `json:"milestone"`
	Comments    int             `json:"comments"`
	HTMLURL     string          `json:"html_url"`
	CreatedAt   ghTime          `json:"created_at"`
	UpdatedAt   ghTime          `json:"updated_at"`
	ClosedAt    ghTime          `json:"closed_at"`
	PullRequest json.RawMessage `json:"pull_request"`
}

// isPullRequest reports whether the issue is the issue side of a pull request (GitHub sends
// pull request conversations as issues with a pull_request object).
func (i ghIssue) isPullRequest() bool {
	s := strings.TrimSpace(string(i.PullRequest))
	return s != "" && s != "null"
}

type ghComment struct {
	ID        int64   `json:"id"`
	User      *ghUser `json:"user"`
	Body      *string `json:"body"`
	HTMLURL   string  `json:"html_url"`
	CreatedAt ghTime  `json:"created_at"`
	UpdatedAt ghTime  `json:"updated_at"`
}

type ghBranch struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

type ghPullRequest struct {
	ID                 int64        `json:"id"`
	Number             int          `json:"number"`
	Title              string       `json:"title"`
	Body               *string      `json:"body"`
	State              string       `json:"state"`
	Draft              bool         `json:"draft"`
	Locked             bool         `json:"locked"`
	Merged             *bool        `json:"merged"`
	User               *ghUser      `json:"user"`
	Head               ghBranch     `json:"head"`
	Base               ghBranch     `json:"base"`
	Milestone          *ghMilestone `json:"milestone"`
	Labels             []ghLabel    `json:"labels"`
	Assignees          []ghUser     `json:"assignees"`
	RequestedReviewers []ghUser     `json:"requested_reviewers"`
	HTMLURL            string       `json:"html_url"`
	CreatedAt          ghTime       `json:"created_at"`
	UpdatedAt          ghTime       `json:"updated_at"`
	ClosedAt           ghTime       `json:"closed_at"`
	MergedAt           ghTime       `json:"merged_at"`
}

type ghReview struct {
	ID          int64   `json:"id"`
	User        *ghUser `json:"user"`
	Body        *string `json:"body"`
	CommitID    string  `json:"commit_id"`
	State       string  `json:"state"`
	SubmittedAt ghTime  `json:"submitted_at"`
}

type ghReviewComment struct {
	ID          int64   `json:"id"`
	ReviewID    *int64  `json:"pull_request_review_id"`
	InReplyToID *int64  `json:"in_reply_to_id"`
	User        *ghUser `json:"user"`
	Path        string  `json:"path"`
	Line        *int    `json:"line"`
	Body        *string `json:"body"`
	CommitID    string  `json:"commit_id"`
	CreatedAt   ghTime  `json:"created_at"`
	UpdatedAt   ghTime  `json:"updated_at"`
}

type ghGitActor struct {
	Name     string  `json:"name"`
	Email    string  `json:"email"`
	Username *string `json:"username"`
}

type ghPushCommit struct {
	ID        string     `json:"id"`
	Message   string     `json:"message"`
	Timestamp ghTime     `json:"timestamp"`
	URL       string     `json:"url"`
	Author    ghGitActor `json:"author"`
	Committer ghGitActor `json:"committer"`
}

type ghTeam struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Slug        string  `json:"slug"`
	Description *string `json:"description"`
	Privacy     string  `json:"privacy"`
	Permission  string  `json:"permission"`
	Deleted     bool    `json:"deleted"`
	Parent      *struct {
		ID int64 `json:"id"`
	} `json:"parent"`
}

// envelope holds what most work events share.
type envelope struct {
	Action       string          `json:"action"`
	Repository   *ghRepository   `json:"repository"`
	Organization *ghOrganization `json:"organization"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
}

// repository is the event's repository, as the payload names it.
func (e *envelope) repository() *ghRepository { return e.Repository }

// repositoryEvent reads a repository event's row: its workspace, its payload into p (a struct
// that embeds envelope) and its repository, which every repository event requires.
func repositoryEvent(event string, d ports.Dispatch, p interface{ repository() *ghRepository }) (int64, githubmodel.Repository, error) {
	ws, err := workspace(event, d)
	if err != nil {
		return 0, githubmodel.Repository{}, err
	}
	if err := decode(event, d.Payload, p); err != nil {
		return 0, githubmodel.Repository{}, err
	}
	repo, err := toRepository(event, p.repository(), d.Delivery.ID())
	return ws, repo, err
}

// access is the credential scope of a read for workspace ws of repository repositoryID that
// this delivery causes.
func (e envelope) access(ws, repositoryID int64) githubmodel.Access {
	acc := githubmodel.Access{WorkspaceID: ws, RepositoryID: repositoryID}
	if e.Installation != nil {
		acc.InstallationID = e.Installation.ID
	}
	return acc
}

// versionOf is the version of an object with the provider timestamp t, written by the
// delivery eventID.
func versionOf(t ghTime, eventID int64) githubmodel.Version {
	if !t.valid {
		return githubmodel.Version{EventID: eventID}
	}
	return githubmodel.Version{UpdatedAt: t.t, EventID: eventID}
}

func toUser(u *ghUser, eventID int64) (githubmodel.User, bool) {
	if u == nil || u.ID <= 0 || u.Login == "" {
		return githubmodel.User{}, false
	}
	return githubmodel.User{ID: u.ID, Login: u.Login, Type: u.Type, AvatarURL: u.AvatarURL, Version: versionOf(ghTime{}, eventID)}, true
}

// users collects the distinct, usable users among us.
func users(eventID int64, us ...*ghUser) []githubmodel.User {
	seen := map[int64]bool{}
	var out []githubmodel.User
	for _, u := range us {
		if mu, ok := toUser(u, eventID); ok && !seen[mu.ID] {
			seen[mu.ID] = true
			out = append(out, mu)
		}
	}
	return out
}

func userPtrs(us []ghUser) []*ghUser {
	out := make([]*ghUser, len(us))
	for i := range us {
		out[i] = &us[i]
	}
	return out
}

func userID(u *ghUser) *int64 {
	if u == nil || u.ID <= 0 {
		return nil
	}
	id := u.ID
	return &id
}

func userIDs(us []ghUser) []int64 {
	out := make([]int64, 0, len(us))
	for _, u := range us {
		if u.ID > 0 {
			out = append(out, u.ID)
		}
	}
	return out
}

func labelIDs(ls []ghLabel) []int64 {
	out := make([]int64, 0, len(ls))
	for _, l := range ls {
		if l.ID > 0 {
			out = append(out, l.ID)
		}
	}
	return out
}

func toLabels(ls []ghLabel, repositoryID, eventID int64) []githubmodel.Label {
	out := make([]githubmodel.Label, 0, len(ls))
	for _, l := range ls {
		if l.ID <= 0 {
			continue
		}
		out = append(out, githubmodel.Label{
			ID: l.ID, RepositoryID: repositoryID, Name: l.Name, Color: l.Color,
			Description: l.Description, Default: l.Default, Version: versionOf(ghTime{}, eventID),
		})
	}
	return out
}

var errNoRepository = errors.New("no repository")

// toRepository converts the event's repository; it is required by every repository event.
func toRepository(event string, r *ghRepository, eventID int64) (githubmodel.Repository, error) {
	if r == nil {
		return githubmodel.Repository{}, malformed(event, "%v", errNoRepository)
	}
	if r.ID <= 0 || r.Name == "" || r.FullName == "" {
		return githubmodel.Repository{}, malformed(event, "repository needs an id, a name and a full name")
	}
	repo := githubmodel.Repository{
		ID: r.ID, Name: r.Name, FullName: r.FullName, Private: r.Private, Visibility: r.Visibility,
		DefaultBranch: r.DefaultBranch, Archived: r.Archived, Fork: r.Fork, Description: r.Description,
		HTMLURL: r.HTMLURL, CreatedAt: r.CreatedAt.ptr(), PushedAt: r.PushedAt.ptr(),
		Version: versionOf(r.UpdatedAt, eventID),
	}
	if r.Owner != nil {
		repo.OwnerID, repo.OwnerLogin = r.Owner.ID, r.Owner.Login
	}
	return repo, nil
}

func toOrganization(o *ghOrganization, eventID int64) (githubmodel.Organization, bool) {
	if o == nil || o.ID <= 0 || o.Login == "" {
		return githubmodel.Organization{}, false
	}
	return githubmodel.Organization{ID: o.ID, Login: o.Login, Description: o.Description, Version: versionOf(ghTime{}, eventID)}, true
}

func toMilestone(m *ghMilestone, repositoryID, eventID int64) (githubmodel.Milestone, bool) {
	if m == nil || m.ID <= 0 {
		return githubmodel.Milestone{}, false
	}
	return githubmodel.Milestone{
		ID: m.ID, RepositoryID: repositoryID, Number: m.Number, Title: m.Title, Description: m.Description,
		State: m.State, DueOn: m.DueOn.ptr(), ClosedAt: m.ClosedAt.ptr(), CreatedAt: m.CreatedAt.ptr(),
		Version: versionOf(m.UpdatedAt, eventID),
	}, true
}

func milestoneID(m *ghMilestone) *int64 {
	if m == nil || m.ID <= 0 {
		return nil
	}
	id := m.ID
	return &id
}

func toIssue(event string, i *ghIssue, repositoryID, eventID int64) (githubmodel.Issue, error) {
	if i == nil || i.ID <= 0 || i.Number <= 0 {
		return githubmodel.Issue{}, malformed(event, "issue needs an id and a number")
	}
	return githubmodel.Issue{
		ID: i.ID, RepositoryID: repositoryID, Number: i.Number, Title: i.Title, Body: i.Body,
		State: i.State, StateReason: i.StateReason, Locked: i.Locked, AuthorID: userID(i.User),
		MilestoneID: milestoneID(i.Milestone), LabelIDs: labelIDs(i.Labels), AssigneeIDs: userIDs(i.Assignees),
		CommentCount: i.Comments, HTMLURL: i.HTMLURL, CreatedAt: i.CreatedAt.ptr(), ClosedAt: i.ClosedAt.ptr(),
		Version: versionOf(i.UpdatedAt, eventID),
	}, nil
}

// issueUsers are the users an issue names: its author and assignees, and its milestone's
// creator.
func issueUsers(i *ghIssue, eventID int64) []githubmodel.User {
	us := append([]*ghUser{i.User}, userPtrs(i.Assignees)...)
	if i.Milestone != nil {
		us = append(us, i.Milestone.Creator)
	}
	return users(eventID, us...)
}

func toPullRequest(event string, p *ghPullRequest, repositoryID, eventID int64) (githubmodel.PullRequest, error) {
	if p == nil || p.ID <= 0 || p.Number <= 0 {
		return githubmodel.PullRequest{}, malformed(event, "pull_request needs an id and a number")
	}
	merged := p.MergedAt.valid
	if p.Merged != nil {
		merged = *p.Merged
	}
	return githubmodel.PullRequest{
		ID: p.ID, RepositoryID: repositoryID, Number: p.Number, Title: p.Title, Body: p.Body,
		State: p.State, Draft: p.Draft, Locked: p.Locked, Merged: merged, AuthorID: userID(p.User),
		HeadRef: p.Head.Ref, HeadSHA: p.Head.SHA, BaseRef: p.Base.Ref, BaseSHA: p.Base.SHA,
		MilestoneID: milestoneID(p.Milestone), LabelIDs: labelIDs(p.Labels), AssigneeIDs: userIDs(p.Assignees),
		RequestedReviewerIDs: userIDs(p.RequestedReviewers), HTMLURL: p.HTMLURL,
		CreatedAt: p.CreatedAt.ptr(), ClosedAt: p.ClosedAt.ptr(), MergedAt: p.MergedAt.ptr(),
		Version: versionOf(p.UpdatedAt, eventID),
	}, nil
}

func pullRequestUsers(p *ghPullRequest, eventID int64) []githubmodel.User {
	us := append([]*ghUser{p.User}, userPtrs(p.Assignees)...)
	us = append(us, userPtrs(p.RequestedReviewers)...)
	if p.Milestone != nil {
		us = append(us, p.Milestone.Creator)
	}
	return users(eventID, us...)
}

func toReviewComment(c ghReviewComment, repositoryID, pullRequestID, eventID int64) githubmodel.ReviewComment {
	return githubmodel.ReviewComment{
		ID: c.ID, RepositoryID: repositoryID, PullRequestID: pullRequestID, ReviewID: c.ReviewID,
		InReplyToID: c.InReplyToID, AuthorID: userID(c.User), Path: c.Path, Line: c.Line, Body: c.Body,
		CommitID: c.CommitID, CreatedAt: c.CreatedAt.ptr(), Version: versionOf(c.UpdatedAt.or(c.CreatedAt), eventID),
	}
}

func toTeam(t *ghTeam, organizationID, eventID int64) (githubmodel.Team, bool) {
	if t == nil || t.ID <= 0 {
		return githubmodel.Team{}, false
	}
	team := githubmodel.Team{
		ID: t.ID, OrganizationID: organizationID, Name: t.Name, Slug: t.Slug, Description: t.Description,
		Privacy: t.Privacy, Permission: t.Permission, Deleted: t.Deleted, Version: versionOf(ghTime{}, eventID),
	}
	if t.Parent != nil && t.Parent.ID > 0 {
		id := t.Parent.ID
		team.ParentID = &id
	}
	return team, true
}

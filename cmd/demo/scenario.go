package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"
)

// scenario holds the ids of one demo run. Every provider id is random, so a run never shares a
// resource with an earlier run on the same server: a GitHub delivery is stored for every
// workspace that subscribes to its repository, so fixed ids would reach old demo workspaces.
type scenario struct {
	suffix string
	slug   string
	now    time.Time

	// GitHub
	installationID int64
	orgID          int64
	orgLogin       string
	repoID         int64
	repoName       string
	issueID        int64
	issueNumber    int
	issueTitle     string
	labelID        int64
	badIssueNumber int
	beforeSHA      string
	commitSHAs     [2]string
	commitMessages [2]string

	// GitLab
	gitlabURL      string
	gitlabSecret   string
	gitlabGroupID  int64
	projectID      int64
	projectPath    string
	glIssueID      int64
	glIssueIID     int
	mrID           int64
	mrIID          int
	mrTitle        string
	mrHeadSHA      string
	gitlabUserID   int64
	gitlabUsername string

	// Slack
	teamID      string
	appID       string
	botUserID   string
	personID    string
	channelID   string
	channelName string
	messageTS   string
	messageText string

	// Outline
	outlineURL    string
	outlineSecret string
	collectionID  string
	documentID    string
	documentTitle string
	actorID       string
}

// newScenario draws the ids of a run at now.
func newScenario(now time.Time) scenario {
	suffix := strings.ToLower(randomText(6))
	s := scenario{
		suffix: suffix,
		slug:   "demo-" + suffix,
		now:    now.UTC().Truncate(time.Second),

		installationID: randomID(10_000_000, 99_999_999),
		orgID:          randomID(100_000_000, 999_999_999),
		orgLogin:       "demo-org-" + suffix,
		repoID:         randomID(100_000_000, 999_999_999),
		repoName:       "hello-hephaestus",
		issueID:        randomID(1_000_000_000, 2_999_999_999),
		issueNumber:    42,
		issueTitle:     "Build badge shows a failing build on main",
		labelID:        randomID(1_000_000_000, 2_999_999_999),
		badIssueNumber: 43,
		beforeSHA:      randomSHA(),
		commitSHAs:     [2]string{randomSHA(), randomSHA()},
		commitMessages: [2]string{"Fix the build badge URL", "Document the release checklist"},

		gitlabURL:      "https://gitlab.com",
		gitlabSecret:   "glwt-" + randomText(24),
		gitlabGroupID:  randomID(10_000_000, 99_999_999),
		projectID:      randomID(10_000_000, 99_999_999),
		glIssueID:      randomID(100_000_000, 999_999_999),
		glIssueIID:     12,
		mrID:           randomID(100_000_000, 999_999_999),
		mrIID:          7,
		mrTitle:        "Draft the onboarding guide",
		mrHeadSHA:      randomSHA(),
		gitlabUserID:   randomID(1_000_000, 9_999_999),
		gitlabUsername: "ana.lopez",

		teamID:      "T" + randomText(10),
		appID:       "A" + randomText(10),
		botUserID:   "U" + randomText(10),
		personID:    "U" + randomText(10),
		channelID:   "C" + randomText(10),
		channelName: "demo-" + suffix,
		messageText: "Deploy of hello-hephaestus finished, the badge is green again :tada:",

		outlineURL:    "https://app.getoutline.com",
		outlineSecret: "ol_whs_" + randomText(24),
		collectionID:  uuid(),
		documentID:    uuid(),
		documentTitle: "Release checklist",
		actorID:       uuid(),
	}
	s.projectPath = "demo-group-" + suffix + "/onboarding"
	s.messageTS = fmt.Sprintf("%d.%06d", s.now.Unix(), randomID(1, 999_999))
	return s
}

// Random values.

// randomText is n characters of [A-Z2-7], from crypto/rand.
func randomText(n int) string {
	var out strings.Builder
	for out.Len() < n {
		out.WriteString(rand.Text())
	}
	return out.String()[:n]
}

// randomID is a random id in [lo, hi].
func randomID(lo, hi int64) int64 { return lo + mrand.Int64N(hi-lo+1) }

// randomSHA is a random commit SHA (40 hex digits).
func randomSHA() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// uuid is a random (version 4) UUID.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// mustJSON encodes a payload the demo built (it cannot fail for maps of plain values).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demo payload: %v", err))
	}
	return b
}

package gitlabhandlers

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
)

// glTime is a GitLab timestamp. Hooks write them in several layouts depending on the event and
// the GitLab version ("2013-12-03T17:23:34Z", "2013-12-03 17:23:34 UTC",
// "2016-08-12 15:23:49 +0200", with or without fractions); null or "" is no time.
type glTime struct {
	t     time.Time
	valid bool
}

var glLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05 MST",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05.999999999 MST",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

func (g *glTime) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" || s == `""` {
		*g = glTime{}
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("timestamp %s is not a string", s)
	}
	for _, layout := range glLayouts {
		if t, err := time.Parse(layout, str); err == nil {
			*g = glTime{t: t.UTC(), valid: true}
			return nil
		}
	}
	return fmt.Errorf("timestamp %q has no known GitLab layout", str)
}

func (g glTime) ptr() *time.Time {
	if !g.valid {
		return nil
	}
	t := g.t
	return &t
}

func (g glTime) or(other glTime) glTime {
	if g.valid {
		return g
	}
	return other
}

// versionOf is the version of an object with GitLab timestamp t written by delivery eventID.
func versionOf(t glTime, eventID int64) gitlabmodel.Version {
	if !t.valid {
		return gitlabmodel.Version{EventID: eventID}
	}
	return gitlabmodel.Version{UpdatedAt: t.t, EventID: eventID}
}

// glID is a GitLab id: a JSON number or a decimal string (some hooks quote ids); null is 0.
type glID int64

func (i *glID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if s == "null" || s == "" {
		*i = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("id %s is not an integer", s)
	}
	*i = glID(n)
	return nil
}

func (i glID) ptr() *int64 {
	if i <= 0 {
		return nil
	}
	v := int64(i)
	return &v
}

type glProject struct {
	ID                glID   `json:"id"`
	Name              string `json:"name"`
	NamespaceID       glID   `json:"namespace_id"`
	PathWithNamespace string `json:"path_with_namespace"`
	WebURL            string `json:"web_url"`
	DefaultBranch     string `json:"default_branch"`
	VisibilityLevel   *int   `json:"visibility_level"`
}

type glLabel struct {
	Title string `json:"title"`
}

// workEnvelope is what the project-scoped work hooks share.
type workEnvelope struct {
	ObjectKind string     `json:"object_kind"`
	ProjectID  glID       `json:"project_id"`
	Project    *glProject `json:"project"`
}

// projectOf is the event's project for discovery, or false when the payload names none.
func (e workEnvelope) projectOf(eventID int64) (gitlabmodel.Project, bool) {
	if e.Project == nil || e.Project.ID <= 0 {
		return gitlabmodel.Project{}, false
	}
	p := e.Project
	return gitlabmodel.Project{
		ID: int64(p.ID), NamespaceID: p.NamespaceID.ptr(), Name: p.Name, PathWithNamespace: p.PathWithNamespace,
		WebURL: p.WebURL, DefaultBranch: p.DefaultBranch, Visibility: visibility(p.VisibilityLevel),
		Version: gitlabmodel.Version{EventID: eventID},
	}, true
}

// projectID is the project the event names (project.id, else project_id).
func (e workEnvelope) projectID() int64 {
	if e.Project != nil && e.Project.ID > 0 {
		return int64(e.Project.ID)
	}
	return int64(e.ProjectID)
}

// requireProject is the project the event names, else fallback (the attributes' own project
// id; 0 for none). Errors: a permanent parsing failure when neither names a project.
func (e workEnvelope) requireProject(event string, fallback glID) (int64, error) {
	if id := e.projectID(); id > 0 {
		return id, nil
	}
	if fallback > 0 {
		return int64(fallback), nil
	}
	return 0, malformed(event, "no project id")
}

// visibility names GitLab's visibility_level (0 private, 10 internal, 20 public).
func visibility(level *int) string {
	if level == nil {
		return ""
	}
	switch *level {
	case 0:
		return "private"
	case 10:
		return "internal"
	case 20:
		return "public"
	}
	return strconv.Itoa(*level)
}

func labelTitles(ls []glLabel) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		if l.Title != "" {
			out = append(out, l.Title)
		}
	}
	return out
}

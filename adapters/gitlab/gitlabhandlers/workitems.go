package gitlabhandlers

import (
	"context"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// issue mirrors an issue opened, closed, reopened or updated: project discovery, then one step
// "gitlab.issue.upsert".
func (b base) issue(ctx context.Context, d ports.Dispatch) error {
	const event = "issue"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		workEnvelope
		Attrs *struct {
			ID          glID      `json:"id"`
			IID         int       `json:"iid"`
			ProjectID   glID      `json:"project_id"`
			Title       string    `json:"title"`
			Description *string   `json:"description"`
			State       string    `json:"state"`
			AuthorID    glID      `json:"author_id"`
			MilestoneID glID      `json:"milestone_id"`
			URL         string    `json:"url"`
			Action      string    `json:"action"`
			CreatedAt   glTime    `json:"created_at"`
			UpdatedAt   glTime    `json:"updated_at"`
			ClosedAt    glTime    `json:"closed_at"`
			Labels      []glLabel `json:"labels"`
		} `json:"object_attributes"`
		Labels []glLabel `json:"labels"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	a := p.Attrs
	if a == nil || a.ID <= 0 || a.IID <= 0 {
		return malformed(event, "object_attributes needs an id and an iid")
	}
	projectID, err := p.requireProject(event, a.ProjectID)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	labels := p.Labels
	if len(labels) == 0 {
		labels = a.Labels
	}
	issue := gitlabmodel.Issue{
		ID: int64(a.ID), ProjectID: projectID, IID: a.IID, Title: a.Title, Description: a.Description,
		State: a.State, AuthorID: a.AuthorID.ptr(), MilestoneID: a.MilestoneID.ptr(), Labels: labelTitles(labels),
		WebURL: a.URL, CreatedAt: a.CreatedAt.ptr(), ClosedAt: a.ClosedAt.ptr(), Deleted: a.Action == "delete",
		Version: versionOf(a.UpdatedAt.or(a.CreatedAt), eventID),
	}
	return b.discoverAndStep(ctx, event, ws, p.workEnvelope, eventID, StepIssue, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertIssue(ctx, tx, ws, issue)
	})
}

// note mirrors a comment created or updated: project discovery, then one step
// "gitlab.note.upsert".
func (b base) note(ctx context.Context, d ports.Dispatch) error {
	const event = "note"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		workEnvelope
		Attrs *struct {
			ID           glID    `json:"id"`
			Note         *string `json:"note"`
			NoteableType string  `json:"noteable_type"`
			NoteableID   glID    `json:"noteable_id"`
			CommitID     *string `json:"commit_id"`
			AuthorID     glID    `json:"author_id"`
			ProjectID    glID    `json:"project_id"`
			System       bool    `json:"system"`
			URL          string  `json:"url"`
			Action       string  `json:"action"`
			CreatedAt    glTime  `json:"created_at"`
			UpdatedAt    glTime  `json:"updated_at"`
		} `json:"object_attributes"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	a := p.Attrs
	if a == nil || a.ID <= 0 {
		return malformed(event, "object_attributes needs an id")
	}
	projectID, err := p.requireProject(event, a.ProjectID)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	var commit *string
	if a.CommitID != nil && *a.CommitID != "" {
		commit = a.CommitID
	}
	n := gitlabmodel.Note{
		ID: int64(a.ID), ProjectID: projectID, NoteableType: a.NoteableType, NoteableID: a.NoteableID.ptr(),
		CommitSHA: commit, AuthorID: a.AuthorID.ptr(), Body: a.Note, System: a.System, WebURL: a.URL,
		CreatedAt: a.CreatedAt.ptr(), Deleted: a.Action == "delete",
		Version: versionOf(a.UpdatedAt.or(a.CreatedAt), eventID),
	}
	return b.discoverAndStep(ctx, event, ws, p.workEnvelope, eventID, StepNote, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertNote(ctx, tx, ws, n)
	})
}

// milestone mirrors a project or group milestone created, closed, reopened or deleted: project
// discovery (for a project milestone), then one step "gitlab.milestone.upsert".
func (b base) milestone(ctx context.Context, d ports.Dispatch) error {
	const event = "milestone"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		workEnvelope
		Action string `json:"action"`
		Attrs  *struct {
			ID          glID    `json:"id"`
			IID         int     `json:"iid"`
			ProjectID   glID    `json:"project_id"`
			GroupID     glID    `json:"group_id"`
			Title       string  `json:"title"`
			Description *string `json:"description"`
			State       string  `json:"state"`
			DueDate     glTime  `json:"due_date"`
			Action      string  `json:"action"`
			CreatedAt   glTime  `json:"created_at"`
			UpdatedAt   glTime  `json:"updated_at"`
		} `json:"object_attributes"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	a := p.Attrs
	if a == nil || a.ID <= 0 {
		return malformed(event, "object_attributes needs an id")
	}
	eventID := d.Delivery.ID()
	action := p.Action
	if action == "" {
		action = a.Action
	}
	m := gitlabmodel.Milestone{
		ID: int64(a.ID), ProjectID: a.ProjectID.ptr(), GroupID: a.GroupID.ptr(), IID: a.IID, Title: a.Title,
		Description: a.Description, State: a.State, DueDate: a.DueDate.ptr(), Deleted: action == "delete",
		Version: versionOf(a.UpdatedAt.or(a.CreatedAt), eventID),
	}
	if m.ProjectID == nil {
		if id := p.projectID(); id > 0 {
			m.ProjectID = &id
		}
	}
	return b.discoverAndStep(ctx, event, ws, p.workEnvelope, eventID, StepMilestone, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertMilestone(ctx, tx, ws, m)
	})
}

// member mirrors a user added to, changed in or removed from a group: one step
// "gitlab.member.upsert" with the group and the membership. Access requests are not
// memberships and write nothing.
func (b base) member(ctx context.Context, d ports.Dispatch) error {
	const event = "member"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		EventName    string `json:"event_name"`
		GroupID      glID   `json:"group_id"`
		GroupName    string `json:"group_name"`
		GroupPath    string `json:"group_path"`
		UserID       glID   `json:"user_id"`
		UserUsername string `json:"user_username"`
		GroupAccess  string `json:"group_access"`
		ExpiresAt    glTime `json:"expires_at"`
		CreatedAt    glTime `json:"created_at"`
		UpdatedAt    glTime `json:"updated_at"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	var removed bool
	switch p.EventName {
	case "user_add_to_group", "user_update_for_group":
	case "user_remove_from_group":
		removed = true
	default:
		return nil // an access request or a member event this mirror does not keep
	}
	if p.GroupID <= 0 || p.UserID <= 0 {
		return malformed(event, "a member event needs a group id and a user id")
	}
	eventID := d.Delivery.ID()
	v := versionOf(p.UpdatedAt.or(p.CreatedAt), eventID)
	m := gitlabmodel.Member{
		SourceType: "group", SourceID: int64(p.GroupID), UserID: int64(p.UserID), Username: p.UserUsername,
		AccessLevel: p.GroupAccess, ExpiresAt: p.ExpiresAt.ptr(), Deleted: removed, Version: v,
	}
	g := gitlabmodel.Group{ID: int64(p.GroupID), Name: p.GroupName, Path: p.GroupPath, FullPath: p.GroupPath,
		Version: gitlabmodel.Version{EventID: eventID}}
	return wrap(event, b.step(ctx, StepMember, func(ctx context.Context, tx ports.Tx) error {
		if err := b.deps.Store.UpsertGroup(ctx, tx, ws, g); err != nil {
			return err
		}
		return b.deps.Store.UpsertMember(ctx, tx, ws, m)
	}))
}

// subgroup mirrors a subgroup created or removed: one step "gitlab.subgroup.upsert" with the
// parent and the subgroup.
func (b base) subgroup(ctx context.Context, d ports.Dispatch) error {
	const event = "subgroup"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		EventName      string `json:"event_name"`
		GroupID        glID   `json:"group_id"`
		Name           string `json:"name"`
		Path           string `json:"path"`
		FullPath       string `json:"full_path"`
		ParentGroupID  glID   `json:"parent_group_id"`
		ParentName     string `json:"parent_name"`
		ParentPath     string `json:"parent_path"`
		ParentFullPath string `json:"parent_full_path"`
		CreatedAt      glTime `json:"created_at"`
		UpdatedAt      glTime `json:"updated_at"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.GroupID <= 0 {
		return malformed(event, "a subgroup event needs a group id")
	}
	eventID := d.Delivery.ID()
	g := gitlabmodel.Group{
		ID: int64(p.GroupID), ParentID: p.ParentGroupID.ptr(), Name: p.Name, Path: p.Path, FullPath: p.FullPath,
		Deleted: p.EventName == "subgroup_destroy", Version: versionOf(p.UpdatedAt.or(p.CreatedAt), eventID),
	}
	return wrap(event, b.step(ctx, StepSubgroup, func(ctx context.Context, tx ports.Tx) error {
		if p.ParentGroupID > 0 {
			parent := gitlabmodel.Group{ID: int64(p.ParentGroupID), Name: p.ParentName, Path: p.ParentPath,
				FullPath: p.ParentFullPath, Version: gitlabmodel.Version{EventID: eventID}}
			if err := b.deps.Store.UpsertGroup(ctx, tx, ws, parent); err != nil {
				return err
			}
		}
		return b.deps.Store.UpsertGroup(ctx, tx, ws, g)
	}))
}

// project handles a group's project event (created, renamed, transferred, updated, destroyed):
// project discovery in its own step (nothing to discover about a destroyed project), then the
// monitor change in its own step "gitlab.project.monitor".
func (b base) project(ctx context.Context, d ports.Dispatch) error {
	const event = "project"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		EventName         string `json:"event_name"`
		ProjectID         glID   `json:"project_id"`
		Name              string `json:"name"`
		PathWithNamespace string `json:"path_with_namespace"`
		Visibility        string `json:"project_visibility"`
		CreatedAt         glTime `json:"created_at"`
		UpdatedAt         glTime `json:"updated_at"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.ProjectID <= 0 {
		return malformed(event, "a project event needs a project id")
	}
	if !strings.HasPrefix(p.EventName, "project_") {
		return nil // not a project lifecycle event
	}
	eventID := d.Delivery.ID()
	v := versionOf(p.UpdatedAt.or(p.CreatedAt), eventID)
	destroyed := p.EventName == "project_destroy"
	if !destroyed {
		discovered := gitlabmodel.Project{
			ID: int64(p.ProjectID), Name: p.Name, PathWithNamespace: p.PathWithNamespace,
			Visibility: p.Visibility, Version: v,
		}
		err := b.step(ctx, StepProjectDiscover, func(ctx context.Context, tx ports.Tx) error {
			return b.deps.Store.UpsertProject(ctx, tx, ws, discovered)
		})
		if err != nil {
			return wrap(event, err)
		}
	}
	m := gitlabmodel.ProjectMonitor{
		ProjectID: int64(p.ProjectID), Monitored: !destroyed, Deleted: destroyed,
		PathWithNamespace: p.PathWithNamespace, Name: p.Name, Version: v,
	}
	return wrap(event, b.step(ctx, StepProjectMonitor, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.SetProjectMonitor(ctx, tx, ws, m)
	}))
}

package gitlabhandlers

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// mergeRequestAttrs is a merge request hook's object_attributes.
type mergeRequestAttrs struct {
	ID                          glID    `json:"id"`
	IID                         int     `json:"iid"`
	TargetProjectID             glID    `json:"target_project_id"`
	Title                       string  `json:"title"`
	Description                 *string `json:"description"`
	State                       string  `json:"state"`
	Draft                       *bool   `json:"draft"`
	WorkInProgress              bool    `json:"work_in_progress"`
	SourceBranch                string  `json:"source_branch"`
	TargetBranch                string  `json:"target_branch"`
	MergeStatus                 string  `json:"merge_status"`
	DetailedMergeStatus         string  `json:"detailed_merge_status"`
	BlockingDiscussionsResolved *bool   `json:"blocking_discussions_resolved"`
	AuthorID                    glID    `json:"author_id"`
	URL                         string  `json:"url"`
	CreatedAt                   glTime  `json:"created_at"`
	UpdatedAt                   glTime  `json:"updated_at"`
	MergedAt                    glTime  `json:"merged_at"`
	ClosedAt                    glTime  `json:"closed_at"`
	LastCommit                  *struct {
		ID string `json:"id"`
	} `json:"last_commit"`
}

func (a mergeRequestAttrs) draft() bool {
	if a.Draft != nil {
		return *a.Draft
	}
	return a.WorkInProgress
}

// mergeRequest mirrors a merge request event in the seed's orchestration boundary:
//
//  1. project discovery in its own step;
//  2. the event write, "gitlab.merge_request.upsert", in its own step;
//  3. the provider read of the approvals, outside any transaction, and only when the
//     readiness step has not committed yet (a retry after it reads nothing again);
//  4. the readiness write, "gitlab.merge_request.readiness", in its own step.
//
// Readiness is decided from this delivery's payload and the read, so a retry after step 2
// needs no context from the skipped step.
func (b base) mergeRequest(ctx context.Context, d ports.Dispatch) error {
	const event = "merge_request"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		workEnvelope
		Attrs *mergeRequestAttrs `json:"object_attributes"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	a := p.Attrs
	if a == nil || a.ID <= 0 || a.IID <= 0 {
		return malformed(event, "object_attributes needs an id and an iid")
	}
	projectID, err := p.requireProject(event, a.TargetProjectID)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	v := versionOf(a.UpdatedAt.or(a.CreatedAt), eventID)
	mr := gitlabmodel.MergeRequest{
		ID: int64(a.ID), ProjectID: projectID, IID: a.IID, Title: a.Title, Description: a.Description,
		State: a.State, Draft: a.draft(), SourceBranch: a.SourceBranch, TargetBranch: a.TargetBranch,
		MergeStatus: a.MergeStatus, AuthorID: a.AuthorID.ptr(), WebURL: a.URL,
		CreatedAt: a.CreatedAt.ptr(), MergedAt: a.MergedAt.ptr(), ClosedAt: a.ClosedAt.ptr(), Version: v,
	}
	if a.LastCommit != nil {
		mr.HeadSHA = a.LastCommit.ID
	}

	if err := b.discover(ctx, ws, p.workEnvelope, eventID); err != nil {
		return wrap(event, err)
	}
	err = b.step(ctx, StepMergeRequest, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertMergeRequest(ctx, tx, ws, mr)
	})
	if err != nil {
		return wrap(event, err)
	}

	done, err := b.deps.Inbox.Completed(ctx, StepMergeRequestReadiness)
	if err != nil || done {
		return wrap(event, err)
	}
	acc := gitlabmodel.Access{WorkspaceID: ws, ProjectID: projectID}
	if p.Project != nil {
		if ns := p.Project.NamespaceID.ptr(); ns != nil && *ns > 0 {
			acc.GroupIDs = []int64{*ns}
		}
	}
	approvals, err := b.approvals(ctx, acc, projectID, *a)
	if err != nil {
		return wrap(event, err)
	}
	r := readiness(*a, approvals)
	r.MergeRequestID, r.Version = mr.ID, v
	return wrap(event, b.step(ctx, StepMergeRequestReadiness, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.SetReadiness(ctx, tx, ws, r)
	}))
}

// approvals reads the approval state of an open merge request from GitLab. Without a reader, for
// a merge request that is not open, or when GitLab no longer knows it, there is nothing to read.
func (b base) approvals(ctx context.Context, acc gitlabmodel.Access, projectID int64, a mergeRequestAttrs) (*gitlabmodel.Approvals, error) {
	if b.deps.Reader == nil || a.State != "opened" {
		return nil, nil
	}
	got, err := b.deps.Reader.MergeRequestApprovals(ctx, acc, projectID, a.IID)
	if errors.Is(err, gitlabmodel.ErrProviderNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &got, nil
}

// readiness decides whether the merge request can be merged, first reason wins: not open, a
// draft, unresolved blocking discussions, approvals still required, GitLab's own merge status.
func readiness(a mergeRequestAttrs, approvals *gitlabmodel.Approvals) gitlabmodel.Readiness {
	r := gitlabmodel.Readiness{}
	if approvals != nil {
		left := approvals.ApprovalsLeft
		r.ApprovalsLeft = &left
	}
	switch {
	case a.State != "opened":
		r.Reason = "not-open"
	case a.draft():
		r.Reason = "draft"
	case a.BlockingDiscussionsResolved != nil && !*a.BlockingDiscussionsResolved:
		r.Reason = "discussions-not-resolved"
	case approvals != nil && approvals.ApprovalsLeft > 0:
		r.Reason = "approvals-required"
	case a.DetailedMergeStatus != "":
		if a.DetailedMergeStatus == "mergeable" {
			r.Ready = true
		} else {
			r.Reason = a.DetailedMergeStatus
		}
	case a.MergeStatus == "can_be_merged":
		r.Ready = true
	default:
		r.Reason = "merge-status-" + orUnknown(a.MergeStatus)
	}
	return r
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// pipeline mirrors a pipeline's status change: project discovery, then the event write claimed
// in its own step "gitlab.pipeline.upsert".
func (b base) pipeline(ctx context.Context, d ports.Dispatch) error {
	const event = "pipeline"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		workEnvelope
		Attrs *struct {
			ID         glID   `json:"id"`
			Ref        string `json:"ref"`
			SHA        string `json:"sha"`
			Status     string `json:"status"`
			Source     string `json:"source"`
			CreatedAt  glTime `json:"created_at"`
			FinishedAt glTime `json:"finished_at"`
		} `json:"object_attributes"`
		MergeRequest *struct {
			ID glID `json:"id"`
		} `json:"merge_request"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	a := p.Attrs
	if a == nil || a.ID <= 0 {
		return malformed(event, "object_attributes needs an id")
	}
	projectID, err := p.requireProject(event, 0)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	pl := gitlabmodel.Pipeline{
		ID: int64(a.ID), ProjectID: projectID, Ref: a.Ref, SHA: a.SHA, Status: a.Status, Source: a.Source,
		CreatedAt: a.CreatedAt.ptr(), FinishedAt: a.FinishedAt.ptr(),
		// A pipeline has no updated_at: it finishes after it was created, and the running
		// states in between are decided by the later-admitted delivery.
		Version: versionOf(a.FinishedAt.or(a.CreatedAt), eventID),
	}
	if p.MergeRequest != nil {
		pl.MergeRequestID = p.MergeRequest.ID.ptr()
	}
	return b.discoverAndStep(ctx, event, ws, p.workEnvelope, eventID, StepPipeline, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertPipeline(ctx, tx, ws, pl)
	})
}

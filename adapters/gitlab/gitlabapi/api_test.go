package gitlabapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

const token = "glpat-s3cret"

// fakeGitLab is an httptest GitLab that answers with its handler and records what it was asked.
type fakeGitLab struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
}

type request struct {
	Method, Path, Token string
	HasToken            bool
}

func newFakeGitLab(answer http.HandlerFunc) *fakeGitLab {
	f := &fakeGitLab{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		_, has := r.Header[http.CanonicalHeaderKey("PRIVATE-TOKEN")]
		f.requests = append(f.requests, request{
			Method: r.Method, Path: r.URL.EscapedPath(), Token: r.Header.Get("PRIVATE-TOKEN"), HasToken: has,
		})
		f.mu.Unlock()
		answer(w, r)
	}))
	DeferCleanup(f.Close)
	return f
}

func (f *fakeGitLab) received() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

// answer replies with status and body.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// httpClient has its own transport, so the spec can close its idle connections.
func httpClient() *http.Client {
	GinkgoHelper()
	transport := &http.Transport{}
	DeferCleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

func clientFor(cfg gitlabapi.Config) *gitlabapi.Client {
	GinkgoHelper()
	if cfg.Token == nil {
		cfg.Token = func(context.Context, gitlabmodel.Access) (credential.Credential, error) {
			return credential.SpecCredential(GinkgoT(), 1, 1, token), nil
		}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = httpClient()
	}
	c, err := gitlabapi.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// clientOf is a client whose base is a self-managed instance's API root on gl.
func clientOf(gl *fakeGitLab) *gitlabapi.Client {
	GinkgoHelper()
	return clientFor(gitlabapi.Config{BaseURL: gl.URL + "/api/v4/"})
}

const premiumApprovals = `{"id":5,"iid":7,"project_id":42,"title":"Feature","state":"opened",
	"merge_status":"can_be_merged","approved":false,"approvals_required":2,"approvals_left":1,
	"approved_by":[{"user":{"id":1,"username":"root"}}]}`

var _ = Describe("GitLab REST reads", func() {
	Describe("merge request approvals", func() {
		It("asks the project's merge request by iid under the API root, with the token", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, premiumApprovals))
			got, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(gitlabmodel.Approvals{Approved: false, ApprovalsLeft: 1}))
			Expect(gl.received()).To(Equal([]request{{
				Method: http.MethodGet, Path: "/api/v4/projects/42/merge_requests/7/approvals", Token: token, HasToken: true,
			}}))
		})

		It("reads an approved merge request with nothing left to approve", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, `{"approved":true,"approvals_required":1,"approvals_left":0}`))
			got, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(gitlabmodel.Approvals{Approved: true, ApprovalsLeft: 0}))
		})

		It("reads no approvals left where GitLab has no approval rules (Free: no approvals_left)", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK,
				`{"user_has_approved":false,"user_can_approve":true,"approved":true,"approved_by":[{"user":{"id":1}}]}`))
			got, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(gitlabmodel.Approvals{Approved: true, ApprovalsLeft: 0}))
		})

		It("sends no PRIVATE-TOKEN header when the token is empty", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, premiumApprovals))
			c := clientFor(gitlabapi.Config{BaseURL: gl.URL, Token: func(context.Context, gitlabmodel.Access) (credential.Credential, error) {
				return credential.Credential{}, nil
			}})
			_, err := c.MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(err).NotTo(HaveOccurred())
			Expect(gl.received()).To(ConsistOf(HaveField("HasToken", BeFalse())))
		})

		It("refuses ids that are not positive as permanent, without asking GitLab", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, premiumApprovals))
			c := clientOf(gl)
			for _, ids := range [][2]int{{0, 7}, {42, 0}, {-1, 7}, {42, -3}} {
				_, err := c.MergeRequestApprovals(ctx, gitlabmodel.Access{}, int64(ids[0]), ids[1])
				Expect(inbox.Classify(err)).To(Equal(inbox.Permanent), "ids %v", ids)
			}
			Expect(gl.received()).To(BeEmpty())
		})
	})

	DescribeTable("classifies GitLab's answers for the inbox",
		func(ctx SpecContext, status int, want string) {
			gl := newFakeGitLab(answer(status, `{"message":"no: `+token+`"}`))
			_, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).NotTo(ContainSubstring(token), "neither the token nor the body is in an error")
			var serr *gitlabapi.StatusError
			Expect(errors.As(err, &serr)).To(BeTrue())
			Expect(serr.Status).To(Equal(status))
			switch want {
			case "transient":
				Expect(inbox.Classify(err)).To(Equal(inbox.Retryable))
			case "nothing to read":
				Expect(errors.Is(err, gitlabmodel.ErrProviderNotFound)).To(BeTrue())
				Expect(inbox.Classify(err)).To(Equal(inbox.Unknown), "the handler decides; nothing here claims transience")
			case "unknown":
				Expect(errors.Is(err, gitlabmodel.ErrProviderNotFound)).To(BeFalse())
				Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
			}
		},
		Entry("an internal error", http.StatusInternalServerError, "transient"),
		Entry("a bad gateway", http.StatusBadGateway, "transient"),
		Entry("an unavailable instance", http.StatusServiceUnavailable, "transient"),
		Entry("a rate limit", http.StatusTooManyRequests, "transient"),
		Entry("a merge request or project GitLab does not know", http.StatusNotFound, "nothing to read"),
		Entry("a gone project", http.StatusGone, "nothing to read"),
		Entry("a rejected token", http.StatusUnauthorized, "unknown"),
		Entry("a token without read_api", http.StatusForbidden, "unknown"),
		Entry("a refused request", http.StatusBadRequest, "unknown"),
	)

	It("carries GitLab's Retry-After of a rate limit, so the retry waits at least that long", func(ctx SpecContext) {
		gl := newFakeGitLab(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		_, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
		var perr *inbox.ProviderError
		Expect(errors.As(err, &perr)).To(BeTrue())
		Expect(perr.Kind).To(Equal(inbox.ProviderRateLimited))
		Expect(perr.RetryAfter).To(Equal(2 * time.Minute))
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRateLimit))
	})

	It("waits for RateLimit-Reset when a rate limit names no Retry-After", func(ctx SpecContext) {
		reset := time.Now().Add(10 * time.Minute).Unix()
		gl := newFakeGitLab(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
			w.WriteHeader(http.StatusTooManyRequests)
		})
		_, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
		var perr *inbox.ProviderError
		Expect(errors.As(err, &perr)).To(BeTrue())
		Expect(perr.RetryAfter).To(BeNumerically("~", 10*time.Minute, 5*time.Second))
	})

	It("treats a transport failure as transient, without the token", func(ctx SpecContext) {
		gl := newFakeGitLab(answer(http.StatusOK, premiumApprovals))
		c := clientOf(gl)
		gl.Close()
		_, err := c.MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
		Expect(inbox.Classify(err)).To(Equal(inbox.Retryable))
		Expect(err.Error()).NotTo(ContainSubstring(token))
	})

	It("uses the unknown budget, not transience, when the token source fails", func(ctx SpecContext) {
		gl := newFakeGitLab(answer(http.StatusOK, premiumApprovals))
		c := clientFor(gitlabapi.Config{BaseURL: gl.URL, Token: func(context.Context, gitlabmodel.Access) (credential.Credential, error) {
			return credential.Credential{}, errors.New("vault sealed")
		}})
		_, err := c.MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
		Expect(err).To(MatchError(ContainSubstring("vault sealed")))
		Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
		Expect(gl.received()).To(BeEmpty())
	})

	DescribeTable("refuses an answer without the documented shape as an unknown failure, never as permanent",
		func(ctx SpecContext, body string) {
			gl := newFakeGitLab(answer(http.StatusOK, body))
			_, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(inbox.Classify(err)).To(Equal(inbox.Unknown), "what GitLab answered says nothing about the stored payload")
			Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderUnreadable))
			Expect(err.Error()).NotTo(ContainSubstring(token))
		},
		Entry("not JSON", `<html>sign in</html>`),
		Entry("a list", `[]`),
		Entry("null", `null`),
		Entry("an object without approved", `{"approvals_left":1}`),
		Entry("approved that is not a boolean", `{"approved":"yes","approvals_left":0}`),
		Entry("approvals_left that is not a number", `{"approved":false,"approvals_left":"one"}`),
		Entry("approvals_left below zero", `{"approved":false,"approvals_left":-1}`),
	)

	Describe("the body bound", func() {
		const body = `{"approved":true,"approvals_left":0}`

		It("reads a body of exactly MaxBodyBytes", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, body))
			c := clientFor(gitlabapi.Config{BaseURL: gl.URL, MaxBodyBytes: int64(len(body))})
			got, err := c.MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Approved).To(BeTrue())
		})

		It("refuses a larger body as an unreadable answer, which uses the budget and is never permanent", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, body+" "))
			c := clientFor(gitlabapi.Config{BaseURL: gl.URL, MaxBodyBytes: int64(len(body))})
			_, err := c.MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(errors.Is(err, gitlabapi.ErrResponseTooLarge)).To(BeTrue())
			Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
			Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderUnreadable))
		})

		It("bounds a large body by default", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, `{"approved":true,"pad":"`+strings.Repeat("x", 2<<20)+`"}`))
			_, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(errors.Is(err, gitlabapi.ErrResponseTooLarge)).To(BeTrue())
		})
	})

	Describe("redirects", func() {
		It("follows one on BaseURL's host", func(ctx SpecContext) {
			gl := newFakeGitLab(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/old/") {
					http.Redirect(w, r, "/api/v4"+strings.TrimPrefix(r.URL.Path, "/old"), http.StatusMovedPermanently)
					return
				}
				answer(http.StatusOK, premiumApprovals)(w, r)
			})
			got, err := clientFor(gitlabapi.Config{BaseURL: gl.URL + "/old"}).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.ApprovalsLeft).To(Equal(1))
			Expect(gl.received()).To(HaveEach(HaveField("Token", token)))
		})

		It("never carries the token to another host", func(ctx SpecContext) {
			elsewhere := newFakeGitLab(answer(http.StatusOK, premiumApprovals))
			gl := newFakeGitLab(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
			})
			_, err := clientOf(gl).MergeRequestApprovals(ctx, gitlabmodel.Access{}, 42, 7)
			var serr *gitlabapi.StatusError
			Expect(errors.As(err, &serr)).To(BeTrue())
			Expect(serr.Status).To(Equal(http.StatusFound))
			Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
			Expect(elsewhere.received()).To(BeEmpty())
		})

		It("leaves the caller's HTTP client's redirect policy alone", func(ctx SpecContext) {
			gl := newFakeGitLab(answer(http.StatusOK, premiumApprovals))
			hc := httpClient()
			clientFor(gitlabapi.Config{BaseURL: gl.URL, HTTPClient: hc})
			Expect(hc.CheckRedirect).To(BeNil())
		})
	})

	DescribeTable("refuses a configuration it cannot use",
		func(cfg gitlabapi.Config, message string) {
			_, err := gitlabapi.New(cfg)
			Expect(err).To(MatchError(ContainSubstring(message)))
			Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		},
		Entry("no base URL", gitlabapi.Config{Token: func(context.Context, gitlabmodel.Access) (credential.Credential, error) {
			return credential.SpecCredential(GinkgoT(), 1, 1, token), nil
		}},
			"BaseURL is required"),
		Entry("no token function", gitlabapi.Config{BaseURL: "https://gitlab.example/api/v4"},
			"a token function is required"),
		Entry("a relative base URL", gitlabapi.Config{BaseURL: "gitlab.example/api/v4",
			Token: func(context.Context, gitlabmodel.Access) (credential.Credential, error) {
				return credential.SpecCredential(GinkgoT(), 1, 1, token), nil
			}}, "absolute http(s) URL"),
		Entry("a base URL with credentials", gitlabapi.Config{BaseURL: "https://root:hunter2@gitlab.example/api/v4",
			Token: func(context.Context, gitlabmodel.Access) (credential.Credential, error) {
				return credential.SpecCredential(GinkgoT(), 1, 1, token), nil
			}}, "no credentials"),
		Entry("a negative body bound", gitlabapi.Config{BaseURL: "https://gitlab.example/api/v4", MaxBodyBytes: -1,
			Token: func(context.Context, gitlabmodel.Access) (credential.Credential, error) {
				return credential.SpecCredential(GinkgoT(), 1, 1, token), nil
			}}, "must not be negative"),
	)
})

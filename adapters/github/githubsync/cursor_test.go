package githubsync

import "testing"

func TestOrganizationCursor(t *testing.T) {
	inside := orgRepository{ID: 4242, FullName: "acme/app"}
	for _, c := range []struct {
		cursor     string
		page, idx  int
		repo       orgRepository
		inner      string
		wantCursor string
	}{
		{"", 1, 0, orgRepository{}, "", ""},
		{orgCursor(2, 3, inside, "issues:2"), 2, 3, inside, "issues:2", "org:2:3:4242:acme/app|issues:2"},
		{orgCursor(2, 4, orgRepository{}, ""), 2, 4, orgRepository{}, "", "org:2:4|"},
		// A cursor stored before the repository was named in it goes on from the list.
		{"org:1:5|pulls:1", 1, 5, orgRepository{}, "pulls:1", ""},
	} {
		page, idx, repo, inner, err := parseOrgCursor(c.cursor)
		if err != nil || page != c.page || idx != c.idx || repo != c.repo || inner != c.inner {
			t.Errorf("parseOrgCursor(%q) = %d, %d, %+v, %q, %v", c.cursor, page, idx, repo, inner, err)
		}
		if c.wantCursor != "" && c.cursor != c.wantCursor {
			t.Errorf("orgCursor = %q, want %q", c.cursor, c.wantCursor)
		}
	}
	for _, bad := range []string{"org:0:1|", "org:1:-1|", "org:1:2:0:acme/app|x", "org:1:2:7:|x", "org:1:2:7:a b|x", "repo:1:2|", "org:1:2"} {
		if _, _, _, _, err := parseOrgCursor(bad); err == nil {
			t.Errorf("parseOrgCursor(%q) accepted", bad)
		}
	}
}

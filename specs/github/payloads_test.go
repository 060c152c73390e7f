package github_test

import (
	"encoding/json"
	"fmt"
	"strings"

	. "github.com/onsi/gomega"
)

// Small payloads in GitHub's documented shapes, built in the specs so that the behaviour specs
// do not depend on the corpus being present.

type obj = map[string]any

func body(v obj) []byte {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return b
}

func sha(n int) string { return fmt.Sprintf("%040x", n) }

func user(id int64, login string) obj {
	return obj{"id": id, "login": login, "type": "User", "avatar_url": "https://avatars.example/" + login}
}

func repository(id int64, fullName string, ownerID int64) obj {
	owner, name, _ := strings.Cut(fullName, "/")
	return obj{
		"id": id, "name": name, "full_name": fullName, "private": false, "visibility": "public",
		"owner": user(ownerID, owner), "default_branch": "main", "html_url": "https://github.com/" + fullName,
		"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-02T00:00:00Z", "pushed_at": "2024-01-03T00:00:00Z",
	}
}

func issue(id int64, number int, title, updatedAt string) obj {
	return obj{
		"id": id, "number": number, "title": title, "state": "open", "body": "body of " + title,
		"user": user(7, "octocat"), "labels": []any{obj{"id": 501, "name": "bug", "color": "d73a4a", "default": true}},
		"assignees": []any{}, "comments": 0, "created_at": "2024-02-01T00:00:00Z", "updated_at": updatedAt,
	}
}

func pullRequest(id int64, number int, head string) obj {
	return obj{
		"id": id, "number": number, "title": "Change things", "state": "open", "user": user(7, "octocat"),
		"head":   obj{"ref": "feature", "sha": head},
		"base":   obj{"ref": "main", "sha": sha(1)},
		"labels": []any{}, "assignees": []any{}, "requested_reviewers": []any{},
		"created_at": "2024-03-01T00:00:00Z", "updated_at": "2024-03-01T10:00:00Z", "merged": false,
	}
}

func pushCommit(s, message string) obj {
	return obj{
		"id": s, "message": message, "timestamp": "2024-04-01T12:00:00Z", "url": "https://github.com/c/" + s,
		"author":    obj{"name": "Mona", "email": "mona@example.com", "username": "mona"},
		"committer": obj{"name": "Mona", "email": "mona@example.com", "username": "mona"},
	}
}

func installationBody(action string, id int64, updatedAt int64) []byte {
	return body(obj{
		"action": action,
		"installation": obj{
			"id": id, "account": user(99, "acme-org"), "repository_selection": "selected",
			"target_type": "Organization", "app_id": 1, "updated_at": updatedAt,
		},
		"repositories": []any{obj{"id": 1001, "name": "hello", "full_name": "acme-org/hello", "private": false}},
	})
}

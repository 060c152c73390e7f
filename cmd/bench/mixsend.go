package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// mixSender sends deliveries of the mix on one keep-alive connection, each signed as its
// provider signs: GitHub's X-Hub-Signature-256 over the body, GitLab's X-Gitlab-Token of the
// connection, Slack's v0 signature over timestamp and body, Outline's t=,s= signature over
// milliseconds and body. Like sender, it writes the request itself.
type mixSender struct {
	rawConn
	mix    []mixDelivery
	prefix string // delivery keys: prefix + send number
	req    []byte
	body   []byte
}

func (c *mixSender) send(i int) error {
	return c.deliver(c.mix[i%len(c.mix)], c.prefix+strconv.Itoa(i))
}

// deliver sends d with key and requires 202 with one stored row.
func (c *mixSender) deliver(d mixDelivery, key string) error {
	if err := c.open(); err != nil {
		return err
	}
	body := append(c.body[:0], d.before...)
	if d.keyInBody {
		body = append(body, key...)
		body = append(body, d.after...)
	}
	c.body = body
	h := fmt.Appendf(c.req[:0], "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		d.path, c.addr, len(body))
	switch d.provider {
	case "GITHUB":
		h = fmt.Appendf(h, "User-Agent: GitHub-Hookshot/bench\r\nX-GitHub-Event: %s\r\nX-GitHub-Delivery: %s\r\nX-Hub-Signature-256: sha256=%s\r\n",
			d.event, key, hexMAC(webhookSecret, body))
	case "GITLAB":
		h = fmt.Appendf(h, "User-Agent: GitLab/17.8.1\r\nX-Gitlab-Event: %s\r\nX-Gitlab-Event-UUID: %s\r\nIdempotency-Key: %s\r\nX-Gitlab-Instance: https://gitlab.com\r\nX-Gitlab-Token: %s\r\n",
			d.event, key, key, mixGitLabSecret)
	case "SLACK":
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		h = fmt.Appendf(h, "User-Agent: Slackbot 1.0 (+https://api.slack.com/robots)\r\nX-Slack-Request-Timestamp: %s\r\nX-Slack-Signature: v0=%s\r\n",
			ts, hexMAC(slackSigningSecret, []byte("v0:"+ts+":"), body))
	case "OUTLINE":
		t := strconv.FormatInt(time.Now().UnixMilli(), 10)
		h = fmt.Appendf(h, "User-Agent: Outline-Webhooks\r\nOutline-Signature: t=%s,s=%s\r\n",
			t, hexMAC([]byte(mixOutlineSecret), []byte(t+"."), body))
	}
	h = append(h, "\r\n"...)
	h = append(h, body...)
	c.req = h
	return c.exchange(h, d.kind+" delivery")
}

func hexMAC(secret []byte, parts ...[]byte) string {
	m := hmac.New(sha256.New, secret)
	for _, p := range parts {
		m.Write(p)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// mixFeed is the pipeline feed of the mix: prepare creates the mix's connections through the
// server's API (once per database), grants the Slack channels consent with the bot's join
// events and fills in the connection paths; each sender's delivery keys are unique per round.
func mixFeed(mix []mixDelivery) pipelineFeed {
	return pipelineFeed{
		prepare: func(ctx context.Context, pool *pgxpool.Pool, addr string) error {
			return prepareMix(ctx, pool, addr, mix)
		},
		client: func(addr string) feedClient {
			return &mixSender{rawConn: rawConn{addr: addr}, mix: mix, prefix: fmt.Sprintf("mix-%d-", time.Now().UnixNano())}
		},
	}
}

// prepareMix creates, once per database, the GitLab, Slack and Outline connections of the
// bench workspace through the API of the server at addr, and subscribes them, and fills in
// the paths of the per-connection webhooks. Then the Slack bot joins each channel, prepareMix
// waits until the joins are handled, and marks the backfill jobs done.
func prepareMix(ctx context.Context, pool *pgxpool.Pool, addr string, mix []mixDelivery) error {
	conns := map[string]int64{}
	rows, err := pool.Query(ctx, `SELECT c.provider, c.id FROM connection c JOIN workspace w ON w.id = c.workspace_id
		WHERE w.slug = 'bench' AND c.provider IN ('GITLAB', 'SLACK', 'OUTLINE')`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var p string
		var id int64
		if err := rows.Scan(&p, &id); err != nil {
			return err
		}
		conns[p] = id
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(conns) < 3 {
		if conns, err = createMixConnections(ctx, addr); err != nil {
			return err
		}
	}
	for i := range mix {
		switch mix[i].provider {
		case "GITLAB":
			mix[i].path = fmt.Sprintf("/webhooks/gitlab/%d", conns["GITLAB"])
		case "OUTLINE":
			mix[i].path = fmt.Sprintf("/webhooks/outline/%d", conns["OUTLINE"])
		}
	}
	s := &mixSender{rawConn: rawConn{addr: addr}}
	defer s.close()
	for ch := range mixChannels {
		before, after := splitAtKey(slackBotJoined(ch))
		join := mixDelivery{kind: "slack/member_joined_channel", provider: "SLACK", path: "/webhooks/slack",
			before: before, after: after, keyInBody: true}
		if err := s.deliver(join, fmt.Sprintf("Evjoin%d-%d", time.Now().UnixNano(), ch)); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := backlogOf(ctx, pool)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Slack joins were not handled in 60 s (%d rows left)", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var dead int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE state = 'DEAD'`).Scan(&dead); err != nil {
		return err
	}
	if dead > 0 {
		return fmt.Errorf("%d Slack joins dead", dead)
	}
	// The subscriptions and the channels' consent queued backfill jobs: the row measures
	// webhooks, and the provider API roots are a closed port, so the jobs would only retry
	// transport errors beside the measured traffic.
	_, err = pool.Exec(ctx, `
UPDATE sync_job SET state = 'DONE', leased_until = NULL, leased_by = NULL, finished_at = now()
WHERE state IN ('QUEUED', 'RUNNING')`)
	return err
}

// createMixConnections creates the mix's connections and subscriptions in the bench
// workspace as the instance administrator, as an operator would.
func createMixConnections(ctx context.Context, addr string) (map[string]int64, error) {
	call := func(method, path string, in any, want int, out any) error {
		b, _ := json.Marshal(in)
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+benchAdminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s answered %d %s", method, path, resp.StatusCode, answer)
		}
		if out != nil {
			return json.Unmarshal(answer, out)
		}
		return nil
	}
	type resource struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	var projects, channels, collections []resource
	for i := range mixProjects {
		projects = append(projects, resource{"project", strconv.Itoa(mixGitLabProject + i), fmt.Sprintf("acme/api-%d", mixGitLabProject+i)})
	}
	for i := range mixChannels {
		channels = append(channels, resource{"channel", fmt.Sprintf("CBENCH%04d", i), fmt.Sprintf("#bench-%d", i)})
	}
	for i := range mixCollections {
		collections = append(collections, resource{"collection", mixCollectionID(i), fmt.Sprintf("Collection %d", i)})
	}
	specs := []struct {
		provider string
		body     map[string]any
		subs     []resource
	}{
		{"GITLAB", map[string]any{"kind": "GITLAB", "sourceServerUrl": "https://gitlab.com",
			"config": map[string]any{"groupId": mixGitLabGroup}, "secret": mixGitLabSecret}, projects},
		{"SLACK", map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com",
			"config": map[string]any{"teamId": mixSlackTeam, "appId": mixSlackApp}}, channels},
		{"OUTLINE", map[string]any{"kind": "OUTLINE", "sourceServerUrl": "https://app.getoutline.com",
			"config": map[string]any{}, "secret": mixOutlineSecret}, collections},
	}
	conns := map[string]int64{}
	for _, sp := range specs {
		var c struct {
			ID int64 `json:"id"`
		}
		if err := call(http.MethodPost, "/api/workspaces/bench/connections", sp.body, http.StatusCreated, &c); err != nil {
			return nil, fmt.Errorf("create the %s connection: %w", sp.provider, err)
		}
		path := fmt.Sprintf("/api/workspaces/bench/connections/%d/subscriptions", c.ID)
		if err := call(http.MethodPut, path, map[string]any{"resources": sp.subs}, http.StatusOK, nil); err != nil {
			return nil, fmt.Errorf("subscribe the %s connection: %w", sp.provider, err)
		}
		conns[sp.provider] = c.ID
	}
	return conns, nil
}
